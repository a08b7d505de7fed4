// Reuse, resume or start each run of a continued grid (see grid_cells.h).
#include "app/repro/grid_cells.h"

#include <csignal>

#include "tensor/error.h"
#include "train/loop/checkpoint.h"
#include "train/loop/checkpoint_identity.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"
#include "base/io/stop_signals.h"

namespace urpe {

GridCellStart grid_cell_start(const std::string& dir, const Config& config, bool continuing) {
  GridCellStart start;
  // No checkpoint yet (never begun, or killed before its first save): the run starts again.
  if (!continuing || !path_exists(join_path(dir, kLastCheckpointName))) return start;
  const Config stored = stored_run_config(dir);
  const std::vector<ConfigDifference> differences = config_differences(config, stored);
  URPE_CHECK(differences.empty(), "--resume: the run in " << dir << " was trained with another config than this "
                                      << "grid asks for: " << describe_differences(differences, "grid", "run")
                                      << "; pass the options the grid was started with");
  const int64_t step = read_checkpoint_info(join_path(dir, kLastCheckpointName)).progress.step;
  const std::string results = join_path(dir, "results.json");
  if (step >= config.get_int("steps") && path_exists(results)) {
    start.kind = GridCellStart::finished;
    start.result = result_from_json(json::read_file(results));
    URPE_CHECK(start.result.steps == step, results << ": the run's results are of step " << start.result.steps
                                                   << " but its checkpoint is at step " << step
                                                   << "; delete " << results << " to finish the run again");
    return start;
  }
  start.kind = GridCellStart::resume;
  start.step = step;
  return start;
}

void apply_cell_start(const GridCellStart& start, TrainOptions& options) {
  options.resume = start.kind == GridCellStart::resume;
}

std::string grid_interruption_note(int signal, int64_t finished, int64_t total, const std::string& stopped_run,
                                   int64_t stopped_step, int64_t run_steps, const std::string& continue_command) {
  std::string note = std::string("**Interrupted** by ") + stop_signal_name(signal) + ": " +
                     std::to_string(finished) + " of " + std::to_string(total) + " runs finished";
  if (!stopped_run.empty())
    note += "; " + stopped_run + " stopped at step " + std::to_string(stopped_step) + " of " +
            std::to_string(run_steps) + " (its checkpoint is saved) and is not in the results";
  return note + ". Continue the grid with: " + continue_command;
}

}  // namespace urpe
