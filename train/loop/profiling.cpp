// The --profile-steps capture window (see profiling.h).
#include "train/loop/profiling.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "tensor/nvtx_range.h"
#include "base/profile/op_recorder.h"

namespace urpe {

namespace {

// A whole positive decimal number, or -1 ("", "x", "-3", "1.5", "12abc", overflow).
int64_t parse_step(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end == nullptr || *end != 0) return -1;
  return value;
}

}  // namespace

ProfileWindow::ProfileWindow() = default;

ProfileWindow::ProfileWindow(int64_t first, int64_t last) : first_(first), last_(last) {
  URPE_CHECK(first >= 1 && first <= last, "option --profile-steps: expected steps A:B with 1 ≤ A ≤ B, got "
                                              << first << ":" << last);
}

ProfileWindow::~ProfileWindow() {
  step_range_.reset();
  try {
    close();
  } catch (...) {  // a destructor must not throw; the capture range ends with the process anyway
  }
}

ProfileWindow::ProfileWindow(ProfileWindow&& other) noexcept
    : first_(other.first_), last_(other.last_), open_(other.open_),
      profiler_started_(other.profiler_started_), step_range_(std::move(other.step_range_)),
      recorder_(std::move(other.recorder_)), recording_done_(std::move(other.recording_done_)) {
  other.open_ = other.profiler_started_ = false;
}

ProfileWindow& ProfileWindow::operator=(ProfileWindow&& other) noexcept {
  if (this != &other) {
    ProfileWindow old(std::move(*this));  // closes whatever this window had open
    first_ = other.first_;
    last_ = other.last_;
    open_ = other.open_;
    profiler_started_ = other.profiler_started_;
    step_range_ = std::move(other.step_range_);
    recorder_ = std::move(other.recorder_);
    recording_done_ = std::move(other.recording_done_);
    other.open_ = other.profiler_started_ = false;
  }
  return *this;
}

ProfileWindow ProfileWindow::parse(const std::string& text) {
  const size_t colon = text.find(':');
  const int64_t first = colon == std::string::npos ? -1 : parse_step(text.substr(0, colon));
  const int64_t last = colon == std::string::npos ? -1 : parse_step(text.substr(colon + 1));
  URPE_CHECK(first >= 0 && last >= 0,
             "option --profile-steps: expected two step numbers A:B (e.g. 100:120), got '" << text << "'");
  URPE_CHECK(first >= 1, "option --profile-steps: steps count from 1, got '" << text << "'");
  URPE_CHECK(first <= last, "option --profile-steps: the first step must not come after the last, got '"
                                << text << "'");
  return ProfileWindow(first, last);
}

void ProfileWindow::check_within(int64_t total_steps) const {
  URPE_CHECK(!enabled() || last_ <= total_steps,
             "option --profile-steps " << first_ << ":" << last_ << ": the run has only " << total_steps
                                       << " steps");
}

void ProfileWindow::record_ops(const Device& device, std::function<void(profile::Recording&&)> done) {
  URPE_CHECK(enabled(), "profile: the per-op recorder needs a window of steps A:B");
  recorder_ = std::make_unique<profile::OpRecorder>(device);
  recording_done_ = std::move(done);
}

void ProfileWindow::before_step(int64_t step) {
  step_range_ = std::make_unique<NvtxRange>("train_step");
  if (recorder_ && contains(step)) recorder_->begin_step(step);
  if (contains(step) && !open_) {
    open_ = true;
    if (cuda::device_count() > 0) {
      cuda::profiler_start();
      profiler_started_ = true;
    }
  }
}

void ProfileWindow::after_step(int64_t step) {
  if (recorder_ && recorder_->recording()) {
    recorder_->end_step();
    if (step >= last_) {
      std::unique_ptr<profile::OpRecorder> recorder = std::move(recorder_);
      if (recording_done_) recording_done_(recorder->take());
    }
  }
  step_range_.reset();
  if (open_ && step >= last_) close();
}

void ProfileWindow::close() {
  open_ = false;
  if (profiler_started_) {
    profiler_started_ = false;
    cuda::profiler_stop();
  }
}

}  // namespace urpe
