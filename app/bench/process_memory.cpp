// Readers of /proc for the benchmarks; see process_memory.h.
#include "app/bench/process_memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>

#include "tensor/cuda_backend.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe {

namespace {

std::string first_line_of(const char* path, const char* prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

// "VmHWM:   123456 kB" → bytes; −1 when the field is missing.
double status_kib_field(const char* field) {
  const std::string line = first_line_of("/proc/self/status", field);
  if (line.empty()) return -1;
  return std::stod(line.substr(line.find(':') + 1)) * 1024.0;
}

}  // namespace

double resident_bytes() { return status_kib_field("VmRSS:"); }
double peak_resident_bytes() { return status_kib_field("VmHWM:"); }

bool reset_peak_resident() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::string load_averages() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", one, five, fifteen);
  return text;
}

double process_cpu_seconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::string cpu_model_name() {
  const std::string line = first_line_of("/proc/cpuinfo", "model name");
  const size_t colon = line.find(':');
  return colon == std::string::npos ? "unknown CPU" : line.substr(colon + 2);
}

std::string machine_description(const Device& device) {
  if (device.is_cuda()) return cuda::device_name(device.context());
  int threads = 1;
#if defined(_OPENMP)
  threads = omp_get_max_threads();
#endif
  return cpu_model_name() + ", " + std::to_string(threads) + " threads";
}

}  // namespace urpe
