// Replays saved fuzz inputs without libFuzzer: CTest runs one replay executable per harness over
// its seed corpus (tests/fuzz/corpus/<target>) and its saved crash inputs (tests/fuzz/crashes/
// <target>), built with the normal compiler. A harness that throws anything but urpe::Error, or
// breaks an invariant (FUZZ_CHECK aborts; the signal handler names the input), fails the test.
//
//   replay_fuzz_smiles DIR_OR_FILE...   (a directory that must hold inputs is marked with a
//                                        leading '+': +tests/fuzz/corpus/smiles)
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

char g_current[4096] = "(none)";  // the input being replayed, for the signal handler

void on_fatal_signal(int signal_number) {
  const char* prefix = "\nreplay: fatal signal while running input ";
  ssize_t ignored = ::write(STDERR_FILENO, prefix, std::strlen(prefix));
  ignored = ::write(STDERR_FILENO, g_current, std::strlen(g_current));
  ignored = ::write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

// Inputs are every regular file of a directory, in name order; README* and dotfiles (.gitkeep)
// are notes, not inputs.
std::vector<fs::path> inputs_of(const fs::path& path) {
  std::vector<fs::path> files;
  if (fs::is_regular_file(path)) return {path};
  if (!fs::is_directory(path)) return files;
  for (const auto& entry : fs::directory_iterator(path)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name[0] == '.' || name.rfind("README", 0) == 0) continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  for (int s : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(s, on_fatal_signal);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s [+]DIR_OR_FILE...  ('+': must hold at least one input)\n", argv[0]);
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  int failures = 0;
  size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    const bool required = !arg.empty() && arg[0] == '+';
    if (required) arg.erase(0, 1);
    const std::vector<fs::path> files = inputs_of(arg);
    if (files.empty() && required) {
      std::fprintf(stderr, "replay: %s holds no inputs (expected a seed corpus there)\n", arg.c_str());
      ++failures;
    }
    for (const fs::path& file : files) {
      std::snprintf(g_current, sizeof g_current, "%s", file.c_str());
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "replay: %s: a %s escaped the harness (only urpe::Error is an "
                             "expected outcome): %s\n", file.c_str(), typeid(e).name(), e.what());
        ++failures;
      } catch (...) {
        std::fprintf(stderr, "replay: %s: a non-std exception escaped the harness\n", file.c_str());
        ++failures;
      }
      ++replayed;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("replayed %zu inputs in %.2f s, %d failure(s)\n", replayed, seconds, failures);
  return failures == 0 ? 0 : 1;
}
