// The per-op recording of `urpe profile` / `urpe train --trace` into its files (see trace_output.h).
#include "app/cli/trace_output.h"

#include <cstdio>

#include "app/bench/peaks.h"
#include "ops/blas_runtime.h"
#include "base/dist/communicator.h"
#include "app/bench/process_memory.h"
#include "base/profile/profile_report.h"

namespace urpe::cli {

std::string command_text(const Args& args) {
  std::string text = "urpe " + args.command;
  for (const std::string& word : args.positional) text += " " + word;
  for (const auto& [name, value] : args.options) text += " --" + name + (value.empty() ? "" : " " + value);
  return text;
}

std::function<void(profile::Recording&&)> trace_sink(const std::shared_ptr<TraceOutput>& output,
                                                     const Device& device, bool quiet) {
  if (!dist::world().is_root()) return [](profile::Recording&&) {};  // rank 0 writes
  std::string source;
  auto peaks = std::make_shared<profile::MachinePeaks>(bench::peaks_for(device, &source));
  const std::string blas = kernels::blas_core_name();
  // The report names the device already; here the host (the CPU's model, threads and BLAS).
  const std::string machine = (device.is_cuda() ? "host " : "") + machine_description(Device::cpu()) + ", " +
                              (blas.empty() ? std::string("built-in GEMM") : "OpenBLAS " + blas);
  return [output, peaks, source, machine, quiet](profile::Recording&& recording) {
    const profile::ReportHeader header{output->title, output->command, machine, source};
    const profile::ProfileSummary s = profile::write_profile(output->dir, recording, *peaks, header);
    output->written = true;
    if (quiet) return;
    std::printf("profile of %d steps written to %s (profile.md, trace.json, plots/roofline.png)\n", s.steps,
                output->dir.c_str());
    std::printf("  step %.2f ms; its ops' self time %.2f ms (%.1f%%); their roofline bound %.2f ms\n", s.step_ms,
                s.ops_self_ms, s.step_ms > 0 ? 100.0 * s.ops_self_ms / s.step_ms : 0.0, s.bound_ms);
    for (size_t k = 0; k < s.ops.size() && k < 5; ++k)
      std::printf("  %-28s %-9s %8.3f ms self (%4.1f%%)\n", s.ops[k].name.c_str(), profile::phase_name(s.ops[k].phase),
                  s.ops[k].self_ms, s.step_ms > 0 ? 100.0 * s.ops[k].self_ms / s.step_ms : 0.0);
    std::fflush(stdout);
  };
}

}  // namespace urpe::cli
