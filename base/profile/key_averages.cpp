// Per-op averages of a recording (see key_averages.h).
#include "base/profile/key_averages.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "tensor/error.h"

namespace urpe::profile {

namespace {

// An op's duration in ms: the stream's on a GPU run (for ops timed there), else the host's.
double duration_ms(const Span& s, bool device_times) {
  return (device_times && s.cuda ? s.device_us() : s.host_us()) / 1000.0;
}

}  // namespace

ProfileSummary summarize(const Recording& recording, const std::optional<MachinePeaks>& peaks) {
  ProfileSummary out;
  out.device = recording.device;
  out.device_times = recording.cuda;
  out.peaks = peaks;
  out.steps = static_cast<int>(recording.steps.size());
  URPE_CHECK(out.steps > 0, "profile: the recording holds no step");
  const double per_step = 1.0 / out.steps;

  std::vector<double> step_times;
  for (int32_t index : recording.steps) {
    const Span& s = recording.spans[static_cast<size_t>(index)];
    step_times.push_back(s.host_us() / 1000.0);
    out.step_numbers.push_back(s.step);
  }
  for (double t : step_times) out.step_ms += t * per_step;
  std::vector<double> sorted = step_times;
  std::sort(sorted.begin(), sorted.end());
  out.median_step_ms = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                         : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);

  // Nearest enclosing op and scope of every span; an op's self time is its duration minus the
  // durations of the ops whose nearest enclosing op it is.
  const size_t n = recording.spans.size();
  std::vector<int32_t> op_parent(n, -1), scope_of(n, -1);
  std::vector<double> nested_ms(n, 0.0);
  for (size_t k = 0; k < n; ++k) {
    const Span& s = recording.spans[k];
    if (s.parent < 0) continue;
    const Span& p = recording.spans[static_cast<size_t>(s.parent)];
    op_parent[k] = p.kind == SpanKind::op ? s.parent : op_parent[static_cast<size_t>(s.parent)];
    scope_of[k] = p.kind == SpanKind::scope ? s.parent : scope_of[static_cast<size_t>(s.parent)];
    if (s.kind == SpanKind::op && op_parent[k] >= 0)
      nested_ms[static_cast<size_t>(op_parent[k])] += duration_ms(s, out.device_times);
  }

  std::map<std::pair<std::string, Phase>, OpAverage> by_op;
  std::map<std::pair<std::string, Phase>, double> by_scope;
  for (size_t k = 0; k < n; ++k) {
    const Span& s = recording.spans[k];
    if (s.kind != SpanKind::op) continue;
    const double total = duration_ms(s, out.device_times);
    const double self = std::max(0.0, total - nested_ms[k]);
    OpAverage& row = by_op[{recording.name_of(s), s.phase}];
    row.name = recording.name_of(s);
    row.phase = s.phase;
    row.calls += per_step;
    row.self_ms += self * per_step;
    // An op nested in an op of the same name (linear → matmul is not one) counts once in total.
    bool inside_same = false;
    for (int32_t p = op_parent[k]; p >= 0 && !inside_same; p = op_parent[static_cast<size_t>(p)])
      inside_same = recording.spans[static_cast<size_t>(p)].name == s.name;
    if (!inside_same) row.total_ms += total * per_step;
    row.cost.flops += s.cost.flops * per_step;
    row.cost.bytes += s.cost.bytes * per_step;
    row.cost.tf32_flops += s.cost.tf32_flops * per_step;
    row.cost.bf16_flops += s.cost.bf16_flops * per_step;
    // The bound of each call (max of its two limits, its FLOPs at their math's ceilings), summed:
    // not the bound of the summed cost.
    if (peaks && s.phase != Phase::communication) row.bound_ms += roofline_bound_ms(*peaks, s.cost) * per_step;
    out.ops_self_ms += self * per_step;
    out.phase_self_ms[static_cast<int>(s.phase)] += self * per_step;
    const std::string scope = scope_of[k] >= 0 ? recording.name_of(recording.spans[static_cast<size_t>(scope_of[k])]) : "";
    by_scope[{scope, s.phase}] += self * per_step;
  }
  for (auto& [key, row] : by_op) {
    out.bound_ms += row.bound_ms;
    out.ops.push_back(row);
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const OpAverage& a, const OpAverage& b) {
    return std::tie(b.self_ms, a.name) < std::tie(a.self_ms, b.name);
  });
  for (const auto& [key, ms] : by_scope) out.scopes.push_back({key.first, key.second, ms});
  std::sort(out.scopes.begin(), out.scopes.end(),
            [](const ScopeAverage& a, const ScopeAverage& b) { return a.self_ms > b.self_ms; });
  return out;
}

}  // namespace urpe::profile
