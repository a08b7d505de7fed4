// CUDA simulator: how it runs and checks kernels, as a compute-sanitizer would on a GPU. Chosen by
// two environment variables, read at the first launch (tests may also call set_settings()):
//
//   URPE_SIM_SCHEDULES  the thread orders each launch runs under, comma-separated, default
//                       "forward,reverse". Each is forward, reverse or random[:SEED], optionally
//                       followed by "+switch" (switch threads at every shared or global access,
//                       not only at barriers and warp collectives). With two or more, every
//                       launch runs under each in turn, from the same memory, and must write the
//                       same words with the same bits (the kernels promise determinism).
//   URPE_SIM_CHECKS     which checks run: "all" (default), "none", or a comma-separated subset of
//                       racecheck (shared-memory hazards between barriers, warp scope included),
//                       memcheck (out-of-bounds shared and device accesses), initcheck (reads of
//                       shared or device words that nothing has written).
//   URPE_SIM_BANKS      the shared-memory bank model (banks.cpp): "off" (default), "launch" (count
//                       every launch's shared requests and print its sites after it), "exit"
//                       (count, and print every kernel's sites once at exit). Counted under the
//                       first schedule only; bank_sites() and bank_report() read the counts.
//
// The checks and the switching need the access hooks: the kernels' translation units are compiled
// with the compiler's ThreadSanitizer instrumentation, which calls a hook before every load and
// store (access_hooks.cpp; TSan's own runtime is never linked). A build without them (the
// AddressSanitizer build, where the two instrumentations cannot be combined) runs the first
// schedule only, without these checks: ASan then checks the accesses itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct cublasContext;

namespace urpe_sim {

enum class Order { Forward, Reverse, Random };

struct Schedule {
  Order order = Order::Forward;
  uint64_t seed = 0;              // Random only
  bool switch_at_access = false;  // preempt at every shared or global access
};

struct Checks {
  bool racecheck = true;
  bool memcheck = true;
  bool initcheck = true;
};

// The bank model: off, or counting with a report after every launch or at exit.
enum class BankReport { Off, Launch, Exit };

struct Settings {
  std::vector<Schedule> schedules{Schedule{Order::Forward}, Schedule{Order::Reverse}};
  Checks checks;
  BankReport banks = BankReport::Off;
};

// "forward", "reverse+switch", "random:7" (the spelling URPE_SIM_SCHEDULES accepts).
std::string describe(const Schedule& schedule);

// Parses the two variables' values (null: the default). Returns false and sets *error (naming the
// variable, the bad word and what was expected) for a bad value.
bool parse_settings(const char* schedules, const char* checks, Settings* out, std::string* error);

// URPE_SIM_BANKS's value (null: off); false and *error for a bad one.
bool parse_bank_setting(const char* value, BankReport* out, std::string* error);

// The settings in force: from the environment at the first call (a bad value is one error line
// and exit status 2), or as last given to set_settings().
const Settings& settings();
void set_settings(const Settings& settings);

// True when this build has the access hooks (see above).
bool access_hooks_available();

// What the checked launches covered, for the record in bench/results/.
struct LaunchRecord {
  uint64_t launches = 0;        // valid launches of this kernel
  uint64_t replayed = 0;        // of them, run under every schedule and compared
  uint64_t blocks = 0;          // blocks run, summed over schedules
  uint64_t shared_accesses = 0;  // checked accesses, summed over schedules
  uint64_t global_accesses = 0;
  uint64_t failures = 0;        // launches that reported an error
};
struct KernelRecord {
  std::string kernel;
  LaunchRecord record;
};
std::vector<KernelRecord> launch_records();

// The bank model's counts (URPE_SIM_BANKS, banks.cpp), per kernel and access site, summed over
// the launches counted since the start or reset_bank_counts(). A site is one instrumented load or
// store (its program counter): kind (write, async: a cp.async), access bytes, lane accesses,
// warp-level requests, wavefronts and the wavefronts a conflict-free request would need.
struct BankSite {
  std::string kernel;
  const void* pc = nullptr;
  bool write = false, async = false;
  int bytes = 0;
  uint64_t accesses = 0, requests = 0, wavefronts = 0, ideal = 0;
};
std::vector<BankSite> bank_sites();
// The site's source line (addr2line on the PC), e.g. "ops/urpe_flash_tc_tiles.cuh:138 (in
// ops/urpe_flash_tc_forward_cuda.cu:213)", or "object+0xOFFSET" without line tables.
std::string bank_site_name(const void* pc);
void reset_bank_counts();
// Per kernel whose name contains `kernel` (all when empty): the totals of loads, stores and
// cp.async copies, then the `top` sites with the most excess wavefronts.
std::string bank_report(const std::string& kernel = "", size_t top = 12);

// Every cuBLAS and cuBLASLt GEMM call so far (the column-major m, n, k and the batch count as
// cuBLAS saw them; valid calls only), in order: the simulator runs them on the host, so they are
// no kernel launches, and a test that pins a model's GEMM structure (test_cuda_syncs) reads them
// here. lt: a cublasLtMatmul; bias: with the BIAS epilogue.
struct GemmCall {
  int m = 0, n = 0, k = 0, batch = 0;
  bool lt = false, bias = false;
};
std::vector<GemmCall> gemm_calls();
// cuBLASLt's heuristic query (cublasLtMatmulAlgoGetHeuristic) finds no algorithm for any problem
// while this is off (as the library answers a layout it cannot run), so a test can drive the
// caller's fallback; on by default.
void set_lt_heuristics(bool available);
// The workspace cublasSetWorkspace gave `handle` (bytes; 0: none, cuBLAS would allocate its own).
size_t cublas_workspace_bytes(const cublasContext* handle);

}  // namespace urpe_sim
