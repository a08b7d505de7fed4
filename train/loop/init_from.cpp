// Parameters of a fresh run copied by name from another run's checkpoint (see init_from.h).
#include "train/loop/init_from.h"

#include <set>

#include "train/loop/checkpoint.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"
#include "train/config/run_config.h"
#include "train/config/run_settings.h"

namespace urpe {

namespace {
// The URPE table: absent from an RPE (or no-PE Graphormer) run, initialised to ones, so the
// initialised model computes the source's function.
const char* const kUrpeTable = "urpe_c";
}  // namespace

InitFromReport init_parameters_from_run(const std::string& run_dir, const Config& config, const ParameterSet& params) {
  const std::string where = "--init-from " + run_dir;
  URPE_CHECK(path_exists(run_dir), where << ": the run directory does not exist");
  URPE_CHECK(path_exists(join_path(run_dir, kLastCheckpointName)),
             where << ": no " << kLastCheckpointName << " (not a run directory, or the run never saved a checkpoint)");
  InitFromReport report;
  report.checkpoint = join_path(run_dir, kLastCheckpointName);
  const TensorFile file = load_safetensors(report.checkpoint);
  const CheckpointInfo info = read_checkpoint_info(report.checkpoint);
  report.source_step = info.progress.step;
  const Config source = config_from_text(info.config_text, report.checkpoint + " (config)");
  const std::string source_model = run_settings_from(source).model, model = run_settings_from(config).model;
  URPE_CHECK(source_model == model, where << ": a '" << source_model << "' run; this run is model = " << model);

  const std::string prefix = "model.";
  std::set<std::string> in_source;
  for (const auto& [name, stored] : file.tensors) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pname = name.substr(prefix.size());
    const Tensor target = params.find(pname);
    URPE_CHECK(target.defined(), where << ": its parameter '" << pname << "' " << stored.describe()
                                       << " has no counterpart in this model (another configuration?)");
    URPE_CHECK(stored.shape() == target.shape() && stored.dtype() == target.dtype(),
               where << ": parameter '" << pname << "' is " << stored.describe() << " there, "
                     << dtype_name(target.dtype()) << " " << shape_str(target.shape())
                     << " in this model (another configuration?)");
    in_source.insert(pname);
  }
  for (const auto& [pname, t] : params.items()) {
    if (in_source.count(pname)) continue;
    URPE_CHECK(pname == kUrpeTable, where << ": this model's parameter '" << pname
                                          << "' is not in its checkpoint (only " << kUrpeTable
                                          << " may start fresh; another configuration?)");
    report.kept.push_back(pname);
  }
  // Copied only once everything matched, so an error leaves the model as it was.
  for (const auto& [pname, t] : params.items())
    if (in_source.count(pname)) {
      t.copy_from(file.at(prefix + pname));
      report.copied.push_back(pname);
    }
  return report;
}

}  // namespace urpe
