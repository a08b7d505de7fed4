// What `urpe profile` and `urpe train --trace` write into their output directory:
//   profile.md         the step against its ops: the key-averages table sorted by self time (op,
//                      phase, calls, self, total, % of step, GFLOP/s, GB/s, % of the roofline bound),
//                      the step's time against the sum of the ops' bounds, time by phase and scope
//   trace.json         the Chrome trace (chrome_trace.h): open it in ui.perfetto.dev
//   plots/roofline.png each op under the measured roofline (roofline_plot.h; needs the peaks)
// Every file is written atomically.
#pragma once
#include <optional>
#include <string>

#include "base/profile/key_averages.h"
#include "base/profile/machine_peaks.h"
#include "base/profile/op_recorder.h"

namespace urpe::profile {

struct ReportHeader {
  std::string title;    // e.g. "pi-tiny, steps 3..5"
  std::string command;  // the command line that made it
  std::string machine;  // CPU model, threads, BLAS (and the GPU)
  std::string peaks_source;  // where the peaks came from (the cache file, or "measured now")
  double peak_bytes = -1;    // the device's peak tensor memory (Recording::peak_bytes); −1: not shown
  // A recorded step's memory (Recording::step_live_bytes, step_peak_above_bytes); −1: not shown.
  double step_live_bytes = -1, step_peak_above_bytes = -1;
};

// The key-averages table alone (markdown), as profile.md holds it.
std::string key_averages_table(const ProfileSummary& summary);
std::string profile_markdown(const ProfileSummary& summary, const ReportHeader& header);

// Writes profile.md, trace.json and plots/roofline.png (without peaks: no picture, and the
// table's roofline column says so) into `dir` (created if needed). Returns the summary.
ProfileSummary write_profile(const std::string& dir, const Recording& recording,
                             const std::optional<MachinePeaks>& peaks, const ReportHeader& header);

}  // namespace urpe::profile
