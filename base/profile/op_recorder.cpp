// The per-op recorder (see op_recorder.h).
#include "base/profile/op_recorder.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "tensor/host_allocator.h"
#include "base/profile/cuda_event_timer.h"

namespace urpe::profile {

OpRecorder::OpRecorder(const Device& device) : device_(device) {
  recording_.cuda = device.is_cuda();
  recording_.device = device.is_cuda() ? cuda::device_name(device.context()) : "cpu";
  if (device.is_cuda()) timer_ = std::make_unique<CudaEventTimer>(device.context());
}

OpRecorder::~OpRecorder() = default;

double OpRecorder::now_us() {
  // Whole nanoseconds (the trace prints µs with three decimals), strictly increasing, so
  // begin/end events sort in the order they happened.
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch()).count();
  if (origin_ns_ < 0) origin_ns_ = ns;
  last_ns_ = std::max(ns - origin_ns_, last_ns_ + 1);
  return static_cast<double>(last_ns_) / 1000.0;
}

int32_t OpRecorder::intern(const std::string& name) {
  const auto found = ids_.find(name);
  if (found != ids_.end()) return found->second;
  const int32_t id = static_cast<int32_t>(recording_.names.size());
  recording_.names.push_back(name);
  ids_.emplace(name, id);
  return id;
}

int32_t OpRecorder::intern_literal(const char* name) {
  const auto found = literal_ids_.find(name);
  if (found != literal_ids_.end() && std::strcmp(recording_.names[static_cast<size_t>(found->second)].c_str(), name) == 0)
    return found->second;
  const int32_t id = intern(name);
  literal_ids_[name] = id;
  return id;
}

void OpRecorder::open(int32_t name, SpanKind kind, const Device* device) {
  Span span;
  span.name = name;
  span.kind = kind;
  span.phase = phase_;
  span.parent = open_.empty() ? -1 : open_.back();
  span.step = step_;
  const bool timed_on_stream = timer_ && device && device->is_cuda() && device->context() == timer_->context();
  span.cuda = timed_on_stream;
  span.begin_us = now_us();
  const int32_t index = static_cast<int32_t>(recording_.spans.size());
  recording_.spans.push_back(span);
  events_.emplace_back(timed_on_stream ? timer_->record() : -1, -1);
  open_.push_back(index);
  if (kind == SpanKind::scope) path_.reset();
}

void OpRecorder::close_top() {
  const int32_t index = open_.back();
  open_.pop_back();
  Span& span = recording_.spans[static_cast<size_t>(index)];
  if (span.cuda) events_[static_cast<size_t>(index) - step_first_span_].second = timer_->record();
  span.end_us = now_us();
  if (span.kind == SpanKind::scope) path_.reset();
}

// ---- steps ----

void OpRecorder::begin_step(int64_t step) {
  URPE_CHECK(!recording(), "profile: step " << step << " began while step " << step_ << " is still recorded");
  step_ = step;
  phase_ = Phase::forward;
  step_first_span_ = recording_.spans.size();
  events_.clear();
  if (timer_) {
    // The stream is idle after this, so the anchor event passes at (about) the host time now.
    timer_->synchronize();
    timer_->reset();
    anchor_event_ = timer_->record();
  }
  // The step's memory alone: the run's mark so far is kept, then the mark restarts at what is
  // live now (stream order does not matter: the allocator counts at allocation, on the host).
  run_peak_ = std::max(run_peak_, allocator_peak());
  reset_allocator_peak();
  step_start_live_ = allocator_in_use();
  const double begin = now_us();
  anchor_us_ = begin;
  active_.emplace(this);
  open(intern("step " + std::to_string(step)), SpanKind::step, nullptr);
  recording_.spans.back().begin_us = begin;
  recording_.steps.push_back(static_cast<int32_t>(recording_.spans.size() - 1));
}

void OpRecorder::end_step() {
  if (!recording()) return;
  entered_.clear();
  while (!open_.empty()) close_top();  // the step, and whatever an error left open inside it
  active_.reset();
  recording_.step_live_bytes = std::max(recording_.step_live_bytes, static_cast<double>(step_start_live_));
  recording_.step_peak_above_bytes =
      std::max(recording_.step_peak_above_bytes, static_cast<double>(allocator_peak() - step_start_live_));
  if (!timer_) return;
  timer_->synchronize();
  for (size_t k = step_first_span_; k < recording_.spans.size(); ++k) {
    Span& span = recording_.spans[k];
    if (!span.cuda) continue;
    const auto& [from, to] = events_[k - step_first_span_];
    span.device_begin_us = anchor_us_ + 1000.0 * timer_->elapsed_ms(anchor_event_, from);
    span.device_end_us = anchor_us_ + 1000.0 * timer_->elapsed_ms(anchor_event_, to);
  }
  timer_->reset();
  events_.clear();
}

Recording OpRecorder::take() {
  URPE_CHECK(!recording(), "profile: the recording is taken while step " << step_ << " is still recorded");
  Recording out = std::move(recording_);
  out.peak_bytes = static_cast<double>(std::max(run_peak_, allocator_peak()));
  recording_ = Recording();
  recording_.cuda = out.cuda;
  recording_.device = out.device;
  ids_.clear();
  literal_ids_.clear();
  return out;
}

// ---- the device allocator's counters (tensor storage; cached free blocks not counted) ----

size_t OpRecorder::allocator_peak() const {
  return device_.is_cuda() ? cuda::peak_bytes(device_.context()) : host::peak_bytes();
}
size_t OpRecorder::allocator_in_use() const {
  return device_.is_cuda() ? cuda::bytes_in_use(device_.context()) : host::in_use_bytes();
}
void OpRecorder::reset_allocator_peak() {
  if (device_.is_cuda()) cuda::reset_peak(device_.context());
  else host::reset_peak();
}

// ---- the hooks ----

void OpRecorder::begin_op(const char* name, const Device& device) {
  if (recording()) open(intern_literal(name), SpanKind::op, &device);
}

void OpRecorder::begin_op(const std::string& name, const Device& device) {
  if (recording()) open(intern(name), SpanKind::op, &device);
}

void OpRecorder::end_op() {
  if (!recording() || open_.empty()) return;
  if (recording_.spans[static_cast<size_t>(open_.back())].kind == SpanKind::op) close_top();
}

void OpRecorder::add_cost(const Cost& cost) {
  if (!recording() || open_.empty()) return;
  Span& span = recording_.spans[static_cast<size_t>(open_.back())];
  if (span.kind == SpanKind::op) span.cost += cost;
}

void OpRecorder::begin_scope(const std::string& name) {
  if (recording()) open(intern(name), SpanKind::scope, nullptr);
}

void OpRecorder::end_scope() {
  if (!recording() || open_.empty()) return;
  if (recording_.spans[static_cast<size_t>(open_.back())].kind == SpanKind::scope) close_top();
}

ScopePath OpRecorder::scope_path() {
  if (!path_) {
    auto names = std::make_shared<std::vector<std::string>>();
    for (int32_t index : open_) {
      const Span& span = recording_.spans[static_cast<size_t>(index)];
      if (span.kind == SpanKind::scope) names->push_back(recording_.name_of(span));
    }
    path_ = std::move(names);
  }
  return path_;
}

void OpRecorder::enter_scopes(const ScopePath& path) {
  if (!recording()) return;
  static const std::vector<std::string> none;
  const std::vector<std::string>& target = path ? *path : none;
  size_t common = 0;
  while (common < entered_.size() && common < target.size() &&
         recording_.name_of(recording_.spans[static_cast<size_t>(entered_[common])]) == target[common])
    ++common;
  while (entered_.size() > common) {
    // Between two nodes nothing is open above the re-entered scopes; close down to the one.
    const int32_t scope = entered_.back();
    entered_.pop_back();
    while (!open_.empty() && open_.back() != scope) close_top();
    if (!open_.empty()) close_top();
  }
  for (size_t k = common; k < target.size(); ++k) {
    open(intern(target[k]), SpanKind::scope, nullptr);
    entered_.push_back(open_.back());
  }
}

}  // namespace urpe::profile
