// The per-op profiler's recorder: while a training step is recorded it receives every hook of
// tensor/op_profile.h (ops, model scopes, phases, costs) and keeps each as a span with its host
// start and end. CPU ops: steady-clock time around the call, the op's OpenMP threads included.
// CUDA ops: also a pair of CUDA events on the context's stream around the op, read back once per
// step (one device synchronisation at the start and one at the end of a recorded step, none per
// op), which gives each op's time on the stream: its kernels and any idle gap between them.
//
// What comes out is a Recording: spans in the order they began, each pointing at its enclosing
// span, so step → layer → attention → op nest as they ran (key_averages.h, chrome_trace.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/device.h"
#include "tensor/op_profile.h"

namespace urpe::profile {

class CudaEventTimer;

enum class SpanKind : uint8_t { step, scope, op };

struct Span {
  int32_t name = 0;  // index into Recording::names
  SpanKind kind = SpanKind::op;
  Phase phase = Phase::forward;
  bool cuda = false;    // an op timed on the CUDA stream (device_* below are set)
  int32_t parent = -1;  // the enclosing span; -1 for a step
  int64_t step = 0;     // the training step it belongs to
  double begin_us = 0, end_us = 0;  // host steady clock, µs since the recording started
  // CUDA ops: when the op's first and last events passed on the stream, on the same clock (the
  // step's first event is placed at the host time it was recorded, right after a synchronise).
  double device_begin_us = 0, device_end_us = 0;
  Cost cost;  // the op's own cost (URPE_PROFILE_COST while it was the innermost op)

  double host_us() const { return end_us - begin_us; }
  double device_us() const { return device_end_us - device_begin_us; }
};

struct Recording {
  std::string device;  // "cpu", or "cuda" with the GPU's name
  bool cuda = false;   // the run's device is a GPU: op times are the stream's
  std::vector<std::string> names;
  std::vector<Span> spans;    // in the order they began
  std::vector<int32_t> steps;  // the step spans
  // The run's device allocator's high-water mark (tensor storage, cached free blocks not counted)
  // when the recording was taken: the most the run has held at once so far; −1 when unknown.
  double peak_bytes = -1;
  // A recorded step's memory, the most over the recorded steps (−1 when none was recorded): what
  // was live when it began (parameters, optimizer state, bf16 weight copies, the batch) and the
  // most it held on top of that (the activations the backward keeps, gradients, workspaces:
  // docs/profiling.md, "Memory"). Read from the same allocator as peak_bytes.
  double step_live_bytes = -1;
  double step_peak_above_bytes = -1;
  const std::string& name_of(const Span& span) const { return names[static_cast<size_t>(span.name)]; }
};

class OpRecorder final : public Recorder {
 public:
  explicit OpRecorder(const Device& device);  // the device the run trains on
  ~OpRecorder() override;
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // Around one training step, on the thread that runs it: begin_step makes this the active
  // recorder and opens the step's span; end_step closes it (and anything a thrown error left
  // open), reads the step's CUDA events and deactivates.
  void begin_step(int64_t step);
  void end_step();
  bool recording() const { return active_.has_value(); }
  const Recording& recording_so_far() const { return recording_; }
  Recording take();  // the recording; the recorder starts empty again

  // ---- Recorder (tensor/op_profile.h) ----
  void begin_op(const char* name, const Device& device) override;
  void begin_op(const std::string& name, const Device& device) override;
  void end_op() override;
  void add_cost(const Cost& cost) override;
  void begin_scope(const std::string& name) override;
  void end_scope() override;
  ScopePath scope_path() override;
  void enter_scopes(const ScopePath& path) override;
  Phase phase() const override { return phase_; }
  void set_phase(Phase phase) override { phase_ = phase; }

 private:
  int32_t intern(const std::string& name);
  int32_t intern_literal(const char* name);
  void open(int32_t name, SpanKind kind, const Device* device);
  void close_top();
  double now_us();
  size_t allocator_peak() const;
  size_t allocator_in_use() const;
  void reset_allocator_peak();

  Device device_;
  Recording recording_;
  std::optional<ActiveRecorder> active_;
  Phase phase_ = Phase::forward;
  int64_t step_ = 0;
  size_t step_first_span_ = 0;
  std::vector<int32_t> open_;     // open spans, outermost first
  std::vector<int32_t> entered_;  // scope spans opened by enter_scopes (backward)
  ScopePath path_;       // the open scopes' names (null: rebuild)
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<const char*, int32_t> literal_ids_;  // checked by content on every hit
  int64_t origin_ns_ = -1, last_ns_ = 0;
  // CUDA: each open/closed op's event pair, the step's anchor event and the timer itself.
  std::unique_ptr<CudaEventTimer> timer_;
  std::vector<std::pair<int, int>> events_;  // per span of this step (index − step_first_span_)
  int anchor_event_ = -1;
  double anchor_us_ = 0;
  // Memory: begin_step resets the allocator's high-water mark to measure the step alone, so the
  // run's own mark before each reset is kept here (Recording::peak_bytes stays the run's).
  size_t run_peak_ = 0;
  size_t step_start_live_ = 0;
};

}  // namespace urpe::profile
