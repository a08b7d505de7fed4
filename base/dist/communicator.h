// The processes of a data-parallel run and the collectives the training loop needs between them
// (docs/distributed.md). One process is the default and costs nothing:
// world() is a single-rank communicator unless the binary was built with MPI (URPE_MPI) and
// launched by mpirun, in which case it is MPI_COMM_WORLD. Only this folder includes mpi.h; the loop
// and the model families see ranks, sums and broadcasts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace urpe::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  // "single process" or "MPI (K ranks)".
  virtual std::string describe() const = 0;

  // In place: every rank ends with the element-wise sum over the ranks (the same on every rank).
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
  virtual void all_reduce_sum(double* data, int64_t n) = 0;
  // Rank 0's `text` on every rank.
  virtual void broadcast(std::string& text) = 0;
  // Concatenation of every rank's `mine` (all the same length), in rank order, on every rank.
  virtual std::vector<float> all_gather(const std::vector<float>& mine) = 0;
  // ZeRO-1's two collectives, on host memory. reduce_scatter_sum: `in` holds size() blocks of
  // `count` floats; rank r receives in `out` (count floats) block r of the element-wise sum over
  // the ranks. all_gather: every rank's `count` floats of `mine`, in rank order, into `all`
  // (size() * count floats).
  virtual void reduce_scatter_sum(const float* in, float* out, int64_t count) = 0;
  virtual void all_gather(const float* mine, float* all, int64_t count) = 0;
  // Stops every rank now (a failure on one rank must not leave the others waiting forever).
  [[noreturn]] virtual void abort(int code) = 0;

 protected:
  int rank_ = 0, size_ = 1;
};

// The run's processes: MPI_COMM_WORLD when launched by mpirun in an MPI build (MPI is initialised
// on the first call), else one process.
Communicator& world();
// True when world() was called and has more than one rank (main's error handling asks this
// without starting MPI for commands that never need it).
bool running_distributed();
// Whether this build can run under mpirun (URPE_MPI found MPI).
bool built_with_mpi();
// This process's rank as the launcher's environment tells it (0 when not launched by one); known
// before MPI starts.
int launcher_rank();
// This process's index among the ranks on its machine (0 when not launched by a launcher that
// tells it): the GPU a rank uses is local_rank % (visible GPUs), docs/distributed.md#gpus.
int launcher_local_rank();
// Ends MPI cleanly at exit (no-op without it).
void finalize();

// A failure every rank detects at the same point (a config that differs between ranks, a batch
// that does not divide): rank 0 reports it, the others exit quietly instead of each printing it
// or aborting the job. check_collective throws urpe::Error(message) on every rank when `ok` is
// false on any rank; the message is the first failing rank's.
void check_collective(Communicator& comm, bool ok, const std::string& message);
bool failure_was_collective();

}  // namespace urpe::dist
