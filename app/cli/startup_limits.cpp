// Thread counts and the address-space limit, checked before the libraries start (startup_limits.h).
#include "app/cli/startup_limits.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace urpe::cli {

namespace {

// OpenBLAS's per-thread work buffer (BUFFER_SIZE in common_x86_64.h: 32 << 22 bytes, mmapped with
// a few pages more), rounded up to 129 MiB. Measured here (OpenBLAS 0.3.21, 2026-11-25): the
// smallest limit that starts is 1,059,375 kB with one thread and 1,190,625 kB with two, 128.2 MiB
// apart.
constexpr uint64_t kOpenBlasBuffer = uint64_t{129} << 20;
// What start-up allocates besides (malloc's first heap, stack growth): the same measurement puts
// it near 5 MiB.
constexpr uint64_t kStartMargin = uint64_t{16} << 20;

void say(const char* text) {
  const size_t n = std::strlen(text);
  ssize_t written = ::write(STDERR_FILENO, text, n);
  (void)written;
}

// The CPUs this process may run on (its affinity mask: a container or taskset may allow fewer
// than the machine has).
int64_t usable_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? online : 1;
}

// The leading decimal number of `text` (OMP_NUM_THREADS may be a nesting list "8,2"), or -1.
int64_t leading_count(const char* text) {
  if (text == nullptr || *text < '0' || *text > '9') return -1;
  int64_t value = 0;
  for (; *text >= '0' && *text <= '9'; ++text) {
    value = value * 10 + (*text - '0');
    if (value > (int64_t{1} << 40)) return value;  // far past any machine; no overflow
  }
  return value;
}

// The environment as the kernel passed it. getenv() and setenv() cannot be used yet (the C
// library points its `environ` at this array only after the pre-initialisers), so a clamped value
// replaces its entry in place, and the library then reads the new one.
struct Environment {
  char** entries = nullptr;
  char** find(const char* name) const {
    const size_t length = std::strlen(name);
    for (char** e = entries; e != nullptr && *e != nullptr; ++e)
      if (std::strncmp(*e, name, length) == 0 && (*e)[length] == '=') return e;
    return nullptr;
  }
  const char* value(const char* name) const {
    char** e = find(name);
    return e ? *e + std::strlen(name) + 1 : nullptr;
  }
};

// Clamps the variable `name` to `cpus` when it asks for more; returns the thread count it asks for
// afterwards (0 when it is unset or not a number).
int64_t clamp_threads(const Environment& environment, const char* name, int64_t cpus) {
  const char* value = environment.value(name);
  const int64_t asked = leading_count(value);
  if (asked <= 0) return 0;
  if (asked <= cpus) return asked;
  char message[320];
  std::snprintf(message, sizeof message,
                "urpe: warning: %s=%.40s asks for more threads than the %lld CPUs this process may use; using %lld\n",
                name, value, static_cast<long long>(cpus), static_cast<long long>(cpus));
  say(message);
  // One buffer per variable, alive for the whole process as the environment must be.
  static char replaced[3][64];
  static int used = 0;
  if (used < 3) {
    std::snprintf(replaced[used], sizeof replaced[used], "%s=%lld", name, static_cast<long long>(cpus));
    *environment.find(name) = replaced[used++];
  }
  return cpus;
}

// The process's mapped address space now (VmSize, from /proc/self/statm's first field, in pages).
uint64_t mapped_bytes() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128] = {0};
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return 0;
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<uint64_t>(std::strtoull(text, nullptr, 10)) * static_cast<uint64_t>(page > 0 ? page : 4096);
}

double gib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << 30); }

}  // namespace

uint64_t startup_address_space(uint64_t mapped, int64_t threads) {
  return mapped + static_cast<uint64_t>(threads > 0 ? threads : 1) * kOpenBlasBuffer + kStartMargin;
}

void apply_startup_limits(int, char**, char** envp) {
  const Environment environment{envp};
  const int64_t cpus = usable_cpus();
  // OpenBLAS takes OPENBLAS_NUM_THREADS first, then GOTO_NUM_THREADS, then OpenMP's count.
  int64_t threads = cpus;
  for (const char* name : {"OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    const int64_t asked = clamp_threads(environment, name, cpus);
    if (asked > 0) threads = asked;
  }

  struct rlimit limit;
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const uint64_t mapped = mapped_bytes();
  if (mapped == 0) return;
  const uint64_t allowed = static_cast<uint64_t>(limit.rlim_cur);
  const uint64_t needed = startup_address_space(mapped, threads);
  if (needed <= allowed) return;
  const uint64_t one_thread = startup_address_space(mapped, 1);
  char message[640];
  std::snprintf(message, sizeof message,
                "urpe: error: the address-space limit (ulimit -v %llu) of %.2f GiB is too small to start: the program "
                "and its libraries take %.2f GiB, and OpenBLAS reserves %.0f MiB per thread for %lld thread%s at "
                "start-up; raise it to at least ulimit -v %llu (%.2f GiB)%s",
                static_cast<unsigned long long>(allowed / 1024), gib(allowed), gib(mapped),
                static_cast<double>(kOpenBlasBuffer) / (1 << 20), static_cast<long long>(threads), threads == 1 ? "" : "s",
                static_cast<unsigned long long>((needed + 1023) / 1024), gib(needed),
                threads > 1 && one_thread <= allowed ? ", or run with OMP_NUM_THREADS=1" : "");
  say(message);
  say("\n");
  ::_exit(1);
}

}  // namespace urpe::cli
