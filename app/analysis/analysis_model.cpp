// Loading the models of the theory commands: checks on the run directory, the family, then the
// same config → model path as `urpe eval`.
#include "app/analysis/analysis_model.h"

#include <algorithm>
#include <filesystem>

#include "tensor/error.h"
#include "train/loop/checkpoint.h"
#include "base/io/run_dir.h"
#include "train/families/model_family.h"
#include "train/config/run_config.h"
#include "train/config/run_settings.h"

namespace urpe {

namespace {

std::string family_list(const std::vector<std::string>& families) {
  std::string text;
  for (size_t k = 0; k < families.size(); ++k)
    text += (k == 0 ? "" : k + 1 == families.size() ? " or " : ", ") + families[k];
  return text;
}

// Builds the (untrained) model of `config` on the CPU.
void build(AnalysisModel& m, const Config& config) {
  m.config = std::make_unique<Config>(config);
  const RunSettings run = run_settings_from(config);
  m.family = run.model;
  m.pe = run.pe;
  const uint64_t seed = static_cast<uint64_t>(run.seed);
  const ModelFamily& family = family_of(config);
  URPE_CHECK(family.analysed_model != nullptr, "model family " << family.name << " has no token model to analyse");
  AnalysedModel built = family.analysed_model(config, seed);
  m.model = std::move(built.model);
  m.positions = built.seq_len;
}

// `what` names the source ("'runs/x'", "preset graphormer-tiny"), `kind` what it holds ("run",
// "model").
void check_family(const std::string& family, const std::string& what, const std::string& kind,
                  const std::string& command, const std::vector<std::string>& families) {
  URPE_CHECK(std::find(families.begin(), families.end(), family) != families.end(),
             command << ": " << what << " is a " << family << " " << kind << " (model = " << family << "); "
                     << command << " reads " << family_list(families) << " " << kind << "s");
}

}  // namespace

AnalysisModel load_run_model(const std::string& dir, const std::string& command,
                             const std::vector<std::string>& families) {
  URPE_CHECK(!dir.empty(), command << ": --run DIR needs a directory");
  URPE_CHECK(path_exists(dir), command << ": run directory '" << dir << "' does not exist");
  const std::string checkpoint = join_path(dir, "model.safetensors");
  URPE_CHECK(path_exists(checkpoint), command << ": '" << dir << "' has no model.safetensors (not a run "
                                              << "directory, or the run never reached its first checkpoint)");
  const Config config = config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)");
  check_family(run_settings_from(config).model, "'" + dir + "'", "run", command, families);
  AnalysisModel m;
  m.source = dir;
  m.name = std::filesystem::path(dir).lexically_normal().filename().string();
  if (m.name.empty()) m.name = std::filesystem::path(dir).lexically_normal().parent_path().filename().string();
  build(m, config);
  m.step = load_checkpoint(checkpoint, m.model->parameters(), nullptr)
               .progress.step;
  return m;
}

AnalysisModel fresh_model(const std::string& preset, const std::vector<std::string>& overrides,
                          const std::string& command, const std::vector<std::string>& families) {
  const Config config = resolve_config(preset, "", overrides);
  check_family(run_settings_from(config).model, "preset " + preset, "model", command, families);
  AnalysisModel m;
  m.source = "preset " + preset;
  build(m, config);
  m.name = preset + " (untrained, pe = " + m.pe + ")";
  return m;
}

std::vector<std::string> repro_run_dirs(const std::string& dir, const std::string& command) {
  URPE_CHECK(path_exists(dir), command << ": repro directory '" << dir << "' does not exist");
  const std::string runs = join_path(dir, "runs");
  URPE_CHECK(std::filesystem::is_directory(runs),
             command << ": '" << dir << "' has no runs/ folder (is it written by 'urpe repro' or 'urpe demo'?)");
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(runs))
    if (entry.is_directory() && path_exists(join_path(entry.path().string(), "model.safetensors")))
      found.push_back(entry.path().string());
  std::sort(found.begin(), found.end());
  URPE_CHECK(!found.empty(), command << ": '" << runs << "' holds no run with a model.safetensors");
  return found;
}

}  // namespace urpe
