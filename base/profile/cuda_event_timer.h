// A pool of CUDA events on one context's stream, for the per-op recorder (op_recorder.h): record
// an event where an op begins and ends, synchronise once, read every elapsed time. Host-only
// header, so CPU-only builds compile the recorder; there the constructor throws (a CPU-only build
// has no CUDA device to time).
#pragma once
#include <memory>

namespace urpe::cuda { class Context; }

namespace urpe::profile {

class CudaEventTimer {
 public:
  explicit CudaEventTimer(cuda::Context* context);
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  cuda::Context* context() const { return context_; }
  // Records the next free event of the pool on the stream; returns its index.
  int record();
  // Waits for everything queued on the stream (once per recorded step).
  void synchronize();
  // Milliseconds on the stream from event `from` to event `to` (both recorded and passed).
  double elapsed_ms(int from, int to) const;
  // Every event is free again (after its times were read).
  void reset();

 private:
  struct Pool;
  cuda::Context* context_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace urpe::profile
