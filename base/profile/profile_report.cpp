// profile.md and the output directory of a profile (see profile_report.h).
#include "base/profile/profile_report.h"

#include <cmath>
#include <cstdio>

#include "base/io/run_dir.h"
#include "base/profile/chrome_trace.h"
#include "base/profile/roofline_plot.h"

namespace urpe::profile {

namespace {

std::string format(const char* fmt, double x) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, x);
  return text;
}

// A rate or "—" when there is nothing to divide.
std::string rate(double amount, double ms, double unit) {
  if (amount <= 0 || ms <= 0) return "—";
  return format("%.2f", amount / (ms * 1e-3) / unit);
}

std::string calls_text(double calls) {  // whole when it is (a mean over steps sums fractions)
  const double whole = std::round(calls);
  return std::fabs(calls - whole) < 1e-6 ? std::to_string(static_cast<long long>(whole)) : format("%.2f", calls);
}

}  // namespace

std::string key_averages_table(const ProfileSummary& s) {
  std::string out =
      "| op | phase | calls | self ms | total ms | % of step | GFLOP/s | GB/s | % of roofline |\n"
      "|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const OpAverage& op : s.ops) {
    out += "| " + op.name + " | " + phase_name(op.phase) + " | " + calls_text(op.calls) + " | " +
           format("%.3f", op.self_ms) + " | " + format("%.3f", op.total_ms) + " | " +
           format("%.1f", s.step_ms > 0 ? 100.0 * op.self_ms / s.step_ms : 0.0) + " | " +
           rate(op.cost.flops, op.self_ms, 1e9) + " | " + rate(op.cost.bytes, op.self_ms, 1e9) + " | " +
           (op.has_bound() && op.self_ms > 0 ? format("%.1f", 100.0 * op.bound_ms / op.self_ms) : std::string("—")) +
           " |\n";
  }
  return out;
}

std::string profile_markdown(const ProfileSummary& s, const ReportHeader& h) {
  std::string out = "# urpe profile: " + h.title + "\n\n";
  if (!h.command.empty()) out += "```\n" + h.command + "\n```\n\n";
  std::string steps;
  for (int64_t n : s.step_numbers) steps += (steps.empty() ? "" : ", ") + std::to_string(n);
  out += "- device: " + s.device + (h.machine.empty() ? "" : " (" + h.machine + ")") + "\n";
  out += "- steps recorded: " + steps + "; every time below is per step (the mean over them)\n";
  if (h.peak_bytes >= 0) {
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f", h.peak_bytes / (1024.0 * 1024.0));
    out += std::string("- peak tensor memory: ") + mib +
           " MiB (the device allocator's high-water mark over the run up to the last recorded step: "
           "parameters, optimizer state, activations, gradients; cached free blocks not counted)\n";
  }
  if (h.step_live_bytes >= 0 && h.step_peak_above_bytes >= 0) {
    char live[32], above[32];
    std::snprintf(live, sizeof live, "%.1f", h.step_live_bytes / (1024.0 * 1024.0));
    std::snprintf(above, sizeof above, "%.1f", h.step_peak_above_bytes / (1024.0 * 1024.0));
    out += std::string("- a step's memory: ") + live + " MiB live when it begins (parameters, optimizer state, "
           "weight copies, the batch) and at most " + above + " MiB more during it (the activations the "
           "backward keeps, gradients, workspaces); the most over the recorded steps\n";
  }
  out += std::string("- op times: ") +
         (s.device_times ? "the CUDA stream's, from an event pair around each op (its kernels and any gap between "
                           "them); the step is the host's wall time, synchronised at its end"
                         : "the host's steady clock around each op call (its threads included)") +
         "\n";
  if (s.peaks)
    out += "- roofline: " + describe(*s.peaks) + (h.peaks_source.empty() ? "" : "; from " + h.peaks_source) + "\n";
  else
    out += "- roofline: no measured peaks for this machine (run `urpe bench peaks`), so no bounds\n";
  if (s.peaks) {
    // The GEMMs that ran on tensor cores, and the ceiling each math was bounded by.
    double tf32 = 0, bf16 = 0;
    for (const OpAverage& op : s.ops) {
      tf32 += op.cost.tf32_flops;
      bf16 += op.cost.bf16_flops;
    }
    std::string parts;
    for (const auto& [flops, math] : {std::pair<double, GemmMath>{tf32, GemmMath::tf32}, {bf16, GemmMath::bf16}}) {
      if (flops <= 0) continue;
      std::string source;
      const double ceiling = gemm_ceiling_gflops(*s.peaks, math, &source);
      parts += std::string(parts.empty() ? "" : "; ") + format("%.3f", flops / 1e9) + " GFLOP per step in " +
               gemm_math_name(math) + ", bounded at " + format("%.1f", ceiling) + " GFLOP/s (the " + source + ")";
    }
    if (!parts.empty())
      out += "- GEMMs on tensor cores: " + parts + "; every other FLOP at the sgemm rate\n";
  }
  out += "\n## The step\n\n| | ms per step | % of step |\n|---|--:|--:|\n";
  auto row = [&](const std::string& what, double ms) {
    out += "| " + what + " | " + format("%.3f", ms) + " | " + format("%.1f", s.step_ms > 0 ? 100 * ms / s.step_ms : 0) +
           " |\n";
  };
  row("measured step (mean; median " + format("%.3f", s.median_step_ms) + ")", s.step_ms);
  row("Σ self time of the ops", s.ops_self_ms);
  row("outside every op (host bookkeeping, data, gaps)", s.step_ms - s.ops_self_ms);
  for (int p = 0; p < kPhaseCount; ++p)
    if (s.phase_self_ms[p] > 0) row(std::string("· ops of the ") + phase_name(static_cast<Phase>(p)) + " phase", s.phase_self_ms[p]);
  if (s.peaks) {
    row("Σ roofline bounds of the ops", s.bound_ms);
    out += "\nAt the measured ceilings the ops would take " + format("%.3f", s.bound_ms) + " ms; they take " +
           format("%.3f", s.ops_self_ms) + " ms, " + format("%.1f", s.bound_ms > 0 ? s.ops_self_ms / s.bound_ms : 0) +
           "× their bound (the step as a whole " + format("%.1f", s.bound_ms > 0 ? s.step_ms / s.bound_ms : 0) +
           "×).\n";
  }
  out += "\n## Ops (key averages, sorted by self time)\n\n";
  out += "Self time excludes the ops an op calls (linear → matmul); total includes them. GFLOP/s and GB/s are\n"
         "the op's own FLOPs and bytes over its self time; % of roofline = its bound max(FLOPs / compute\n"
         "ceiling, bytes / bandwidth) over its self time (100% = at the machine's limit).\n\n";
  out += key_averages_table(s);
  out += "\n## Self time by scope\n\nThe ops' self time under each innermost model scope (the NVTX range names); "
         "\"—\" is outside every block (embedding, head, loss, optimizer).\n\n| scope | phase | self ms | % of step |\n"
         "|---|---|--:|--:|\n";
  for (const ScopeAverage& sc : s.scopes)
    out += "| " + (sc.scope.empty() ? std::string("—") : sc.scope) + " | " + phase_name(sc.phase) + " | " +
           format("%.3f", sc.self_ms) + " | " + format("%.1f", s.step_ms > 0 ? 100 * sc.self_ms / s.step_ms : 0) + " |\n";
  out += "\nFiles: `trace.json` (open in https://ui.perfetto.dev or chrome://tracing: one track per phase, "
         "step → layer → attention → op)" +
         std::string(s.peaks ? ", `plots/roofline.png`" : "") + ". docs/profiling.md explains how to read them.\n";
  return out;
}

ProfileSummary write_profile(const std::string& dir, const Recording& recording,
                             const std::optional<MachinePeaks>& peaks, const ReportHeader& header) {
  const ProfileSummary summary = summarize(recording, peaks);
  make_directories(dir);
  ReportHeader with_memory = header;
  if (with_memory.peak_bytes < 0) with_memory.peak_bytes = recording.peak_bytes;
  if (with_memory.step_live_bytes < 0) {
    with_memory.step_live_bytes = recording.step_live_bytes;
    with_memory.step_peak_above_bytes = recording.step_peak_above_bytes;
  }
  write_text_atomic(join_path(dir, "profile.md"), profile_markdown(summary, with_memory));
  write_chrome_trace(join_path(dir, "trace.json"), recording);
  if (peaks) {
    make_directories(join_path(dir, "plots"));
    roofline_plot(join_path(join_path(dir, "plots"), "roofline.png"), summary);
  }
  return summary;
}

}  // namespace urpe::profile
