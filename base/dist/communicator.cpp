// The single-process communicator, the MPI one (built with URPE_WITH_MPI only) and the choice
// between them. MPI starts only when a launcher (mpirun) started this process, so a plain `urpe`
// never initialises it (OpenMPI's singleton start is slow and refuses root).
#include "base/dist/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tensor/error.h"

#ifndef URPE_WITH_MPI
#define URPE_WITH_MPI 0
#endif
#if URPE_WITH_MPI
// The C API only: OpenMPI's and MPICH's deprecated C++ bindings warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace urpe::dist {

namespace {

class SingleProcess final : public Communicator {
 public:
  std::string describe() const override { return "single process"; }
  void all_reduce_sum(float*, int64_t) override {}
  void all_reduce_sum(double*, int64_t) override {}
  void broadcast(std::string&) override {}
  std::vector<float> all_gather(const std::vector<float>& mine) override { return mine; }
  void reduce_scatter_sum(const float* in, float* out, int64_t count) override {
    std::copy(in, in + count, out);
  }
  void all_gather(const float* mine, float* all, int64_t count) override { std::copy(mine, mine + count, all); }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

#if URPE_WITH_MPI
// MPI counts are ints: a buffer larger than 2^31 - 1 elements goes in pieces.
constexpr int64_t kMaxChunk = 1 << 30;

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  std::string describe() const override { return "MPI (" + std::to_string(size_) + " ranks)"; }
  void all_reduce_sum(float* data, int64_t n) override { reduce(data, n, MPI_FLOAT); }
  void all_reduce_sum(double* data, int64_t n) override { reduce(data, n, MPI_DOUBLE); }
  void broadcast(std::string& text) override {
    uint64_t length = text.size();
    MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    text.resize(length);
    for (uint64_t done = 0; done < length; done += kMaxChunk)
      MPI_Bcast(&text[done], static_cast<int>(std::min<uint64_t>(kMaxChunk, length - done)), MPI_CHAR, 0,
                MPI_COMM_WORLD);
  }
  std::vector<float> all_gather(const std::vector<float>& mine) override {
    URPE_CHECK(mine.size() <= static_cast<size_t>(kMaxChunk), "all_gather: " << mine.size() << " floats per rank is too many");
    std::vector<float> all(mine.size() * static_cast<size_t>(size_));
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), static_cast<int>(mine.size()),
                  MPI_FLOAT, MPI_COMM_WORLD);
    return all;
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t count) override {
    URPE_CHECK(count <= kMaxChunk, "reduce_scatter_sum: " << count << " floats per rank is too many");
    MPI_Reduce_scatter_block(in, out, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  void all_gather(const float* mine, float* all, int64_t count) override {
    URPE_CHECK(count <= kMaxChunk, "all_gather: " << count << " floats per rank is too many");
    MPI_Allgather(mine, static_cast<int>(count), MPI_FLOAT, all, static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  template <typename T>
  void reduce(T* data, int64_t n, MPI_Datatype type) {
    for (int64_t done = 0; done < n; done += kMaxChunk)
      MPI_Allreduce(MPI_IN_PLACE, data + done, static_cast<int>(std::min(kMaxChunk, n - done)), type, MPI_SUM,
                    MPI_COMM_WORLD);
  }
};
#endif

// The environment variables by which OpenMPI, MPICH/Hydra and PMIx launchers tell a process it
// is one of several.
const char* launcher_env(const char* const* names) {
  for (const char* const* name = names; *name; ++name)
    if (const char* value = std::getenv(*name)) return value;
  return nullptr;
}
constexpr const char* kSizeVars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", nullptr};
constexpr const char* kRankVars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", nullptr};
constexpr const char* kLocalRankVars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK",
                                          "SLURM_LOCALID", nullptr};

std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> slot;
  return slot;
}
bool g_collective_failure = false;

}  // namespace

bool built_with_mpi() { return URPE_WITH_MPI != 0; }

int launcher_rank() {
  const char* rank = launcher_env(kRankVars);
  return rank ? std::atoi(rank) : 0;
}

int launcher_local_rank() {
  const char* rank = launcher_env(kLocalRankVars);
  return rank ? std::atoi(rank) : 0;
}

Communicator& world() {
  std::unique_ptr<Communicator>& slot = world_slot();
  if (!slot) {
    const char* size = launcher_env(kSizeVars);
    const bool launched = size != nullptr && std::atoi(size) > 1;
#if URPE_WITH_MPI
    if (launched) slot = std::make_unique<MpiWorld>();
#else
    URPE_CHECK(!launched, "this process was started by an MPI launcher (" << size << " processes), but urpe was "
                          "built without MPI; install OpenMPI (make deps) and rebuild with -DURPE_MPI=ON");
#endif
    if (!slot) slot = std::make_unique<SingleProcess>();
  }
  return *slot;
}

bool running_distributed() { return world_slot() && world_slot()->size() > 1; }

void finalize() {
#if URPE_WITH_MPI
  if (running_distributed()) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
#endif
}

void check_collective(Communicator& comm, bool ok, const std::string& message) {
  // Which ranks failed (a one-hot per rank, summed), then the first failing rank's message on
  // every rank (its characters summed with the others' zeros), so that rank 0 can report it.
  std::vector<double> failed(static_cast<size_t>(comm.size()), 0.0);
  failed[static_cast<size_t>(comm.rank())] = ok ? 0.0 : 1.0;
  comm.all_reduce_sum(failed.data(), static_cast<int64_t>(failed.size()));
  int first = -1;
  for (int r = 0; r < comm.size() && first < 0; ++r)
    if (failed[static_cast<size_t>(r)] != 0) first = r;
  if (first < 0) return;
  std::string text = message;
  if (first != 0 && comm.size() > 1) {
    std::vector<double> length(1, comm.rank() == first ? static_cast<double>(message.size()) : 0.0);
    comm.all_reduce_sum(length.data(), 1);
    std::vector<double> chars(static_cast<size_t>(length[0]), 0.0);
    if (comm.rank() == first)
      for (size_t i = 0; i < chars.size(); ++i) chars[i] = static_cast<unsigned char>(message[i]);
    comm.all_reduce_sum(chars.data(), static_cast<int64_t>(chars.size()));
    text.assign(chars.size(), ' ');
    for (size_t i = 0; i < chars.size(); ++i) text[i] = static_cast<char>(static_cast<int>(chars[i]));
    text += " (on rank " + std::to_string(first) + ")";
  }
  g_collective_failure = true;
  URPE_FAIL(text);
}

bool failure_was_collective() { return g_collective_failure; }

}  // namespace urpe::dist
