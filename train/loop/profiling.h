// `urpe train --profile-steps A:B`: a capture window for Nsight. The trainer calls
// before_step(step) and after_step(step) around every training step; the window starts the
// profiler's capture range (cudaProfilerStart) just before step A and stops it (cudaProfilerStop)
// just after step B, so `nsys profile --capture-range=cudaProfilerApi` and
// `ncu --profile-from-start off` record only those steady-state steps, not start-up, warm-up or
// evaluation. Every step, in or out of the window, is also an NVTX range named "train_step".
// Without a CUDA device the profiler is not called, so a CPU run accepts the option and only
// marks the steps.
//
// `urpe train --trace` (and `urpe profile`) add urpe's own per-op recorder to the same window
// (record_ops): it records every op of steps A..B (base/profile/) and hands the recording over
// after step B.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tensor/device.h"

namespace urpe { class NvtxRange; }
namespace urpe::profile { class OpRecorder; struct Recording; }

namespace urpe {

class ProfileWindow {
 public:
  ProfileWindow();  // disabled: no capture range (NVTX step ranges only)
  ProfileWindow(int64_t first, int64_t last);  // steps first..last inclusive, 1 ≤ first ≤ last
  ~ProfileWindow();  // stops a capture still open (a run that ended inside the window)
  ProfileWindow(ProfileWindow&&) noexcept;
  ProfileWindow& operator=(ProfileWindow&&) noexcept;
  ProfileWindow(const ProfileWindow&) = delete;
  ProfileWindow& operator=(const ProfileWindow&) = delete;

  // Parses the option's value "A:B" (e.g. "100:120", or "7:7" for one step); errors name
  // --profile-steps and what was expected.
  static ProfileWindow parse(const std::string& text);

  bool enabled() const { return first_ > 0; }
  int64_t first() const { return first_; }
  int64_t last() const { return last_; }
  bool contains(int64_t step) const { return enabled() && step >= first_ && step <= last_; }
  // Between the before_step that opened the window and the after_step of step B. The profiler
  // itself is called only when a CUDA device is visible (a CPU-only machine has nothing to start).
  bool open() const { return open_; }
  // An error naming --profile-steps when the window ends after the run's last step.
  void check_within(int64_t total_steps) const;

  // Records every op of the window's steps on `device` (the run's); after step B the recording
  // goes to `done` (which writes the profile). Needs an enabled window.
  void record_ops(const Device& device, std::function<void(profile::Recording&&)> done);
  bool records_ops() const { return recorder_ != nullptr; }

  // Around each training step (steps counted from 1). before_step opens the step's NVTX range and
  // starts the capture at the first step inside the window (step A, or the first step after a
  // resume that lands inside it); after_step closes the range and stops the capture after step B.
  void before_step(int64_t step);
  void after_step(int64_t step);

 private:
  void close();

  int64_t first_ = 0, last_ = 0;
  bool open_ = false, profiler_started_ = false;
  std::unique_ptr<NvtxRange> step_range_;
  std::unique_ptr<profile::OpRecorder> recorder_;
  std::function<void(profile::Recording&&)> recording_done_;
};

}  // namespace urpe
