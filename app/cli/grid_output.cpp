// Claiming or reopening a grid command's --out (see grid_output.h).
#include "app/cli/grid_output.h"

#include <algorithm>

#include "tensor/error.h"
#include "app/analysis/analysis_model.h"
#include "app/analysis/probe.h"
#include "train/loop/run_control.h"

namespace urpe::cli {

static std::string quoted_if_needed(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t'\"\\$`*?;&|<>()") == std::string::npos) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string grid_continue_command(const Args& args) {
  std::string command = "urpe " + args.command;
  for (const std::string& word : args.positional) command += " " + quoted_if_needed(word);
  for (const auto& [name, value] : args.options) {
    if (name == "overwrite" || name == "resume") continue;
    command += " --" + name + (value.empty() ? "" : " " + quoted_if_needed(value));
  }
  return command + " --resume";
}

GridOutput::GridOutput(const Args& args, const std::string& out) : out_(out) {
  continuation_.continuing = args.has("resume");
  continuation_.command = grid_continue_command(args);
  if (!continuation_.continuing) {
    claim_ = std::make_unique<OutputClaim>(
        out, "--out", args.has("overwrite"),
        is_directory(join_path(out, "runs")) ? "continue an interrupted grid with --resume, " : "");
    return;
  }
  URPE_CHECK(!args.has("overwrite"), "urpe " << args.command << ": --resume continues the grid in " << out
                                             << " and --overwrite would replace it; pass one of them");
  lock_ = std::make_unique<RunDirectoryLock>(out, LockMode::exclusive, "--out");
  URPE_CHECK(is_directory(join_path(out, "runs")),
             "urpe " << args.command << " --resume: --out " << out << " holds no grid (no runs/ folder) to continue");
}

bool GridOutput::old_run_comes_back() const { return claim_ && stop_signal() != 0 && old_run_restorable(out_); }

int GridOutput::finish() {
  if (stop_signal() != 0) return stop_exit_code();
  if (claim_) claim_->done();
  return 0;
}

GridProbe grid_probe(const std::string& run_dir, const std::string& command) {
  const ProbeRun run = probe_identical_tokens(load_run_model(run_dir, command, {"encoder"}), ProbeOptions{});
  GridProbe probe;
  for (const ProbeLayer& layer : run.layers) probe.spread = std::max(probe.spread, layer.spread);
  probe.identical_accuracy = run.identical_token_accuracy;
  return probe;
}

}  // namespace urpe::cli
