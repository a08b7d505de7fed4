// `urpe train` and `urpe eval`: run directories from presets/config files, resume, evaluation.
#include "train/cli/handlers.h"

#include <cstdio>

#include "autograd/node.h"
#include "train/checkpoint.h"
#include "train/encoder_trainer.h"
#include "train/molecule_trainer.h"
#include "train/lm_trainer.h"
#include "train/run_config.h"
#include "train/io/run_dir.h"

namespace urpe::cli {

// The resolved config a run directory's checkpoint carries.
static Config stored_config(const std::string& dir) {
  URPE_CHECK(path_exists(dir), "run directory '" << dir << "' does not exist");
  const std::string checkpoint = join_path(dir, "model.safetensors");
  URPE_CHECK(path_exists(checkpoint), "'" << dir << "' has no model.safetensors (not a run directory, or the "
                                          "run never reached its first checkpoint)");
  return config_from_text(read_checkpoint_info(checkpoint).config_text, checkpoint + " (config)");
}

// model = graphormer: train, then print the validation and test MAE beside the mean baseline.
static int train_graphormer_command(const Config& config, const std::string& out, const TrainOptions& options) {
  const MoleculeTrainOutcome o = train_graphormer(config, out, options);
  if (o.interrupted) {
    std::printf("%s: graphormer %s stopped at step %lld, valid MAE %.4f\n", out.c_str(), o.result.pe.c_str(),
                static_cast<long long>(o.result.steps), o.valid_mae);
    return 130;
  }
  std::printf("%s: graphormer %s, valid MAE %.4f, test MAE %.4f (predict-the-training-mean: %.4f, %.4f) "
              "after %lld steps, %lld parameters, %.1f s\n",
              out.c_str(), o.result.pe.c_str(), o.valid_mae, o.test_mae, o.baseline_valid_mae, o.baseline_test_mae,
              static_cast<long long>(o.result.steps), static_cast<long long>(o.result.params), o.result.seconds);
  return 0;
}

static int eval_graphormer_command(const std::string& dir, const Config& config, const std::string& split) {
  const MoleculeEval e = evaluate_graphormer_run(dir, config, split);
  std::printf("%s (step %lld): %s MAE %.6f over %lld molecules (predict-the-training-mean: %.6f)\n", dir.c_str(),
              static_cast<long long>(e.step), split.c_str(), e.mae, static_cast<long long>(e.molecules),
              e.baseline_mae);
  return 0;
}

// Trains `config` into `out` with the trainer of its family; returns the exit code.
static int train_command(const Config& config, const std::string& out, const TrainOptions& options) {
  const std::string model = config.get_string("model");
  if (model == "graphormer") return train_graphormer_command(config, out, options);
  if (model == "txl") {
    const LmTrainOutcome lm = train_lm(config, out, options);
    std::printf("%s: Transformer-XL %s, valid perplexity %.2f (loss %.4f) after %lld steps, %lld parameters, %.1f s\n",
                out.c_str(), lm.result.pe.c_str(), lm.result.metric, lm.final_valid_loss,
                static_cast<long long>(lm.result.steps), static_cast<long long>(lm.result.params), lm.result.seconds);
    return lm.interrupted ? 130 : 0;
  }
  const TrainOutcome outcome = train_encoder(config, out, options);
  std::printf("%s: %s %s, valid accuracy %.2f%% (loss %.4f) after %lld steps, %lld parameters, %.1f s\n",
              out.c_str(), outcome.result.task.c_str(), outcome.result.pe.c_str(),
              100.0 * outcome.result.metric, outcome.final_valid_loss,
              static_cast<long long>(outcome.result.steps), static_cast<long long>(outcome.result.params),
              outcome.result.seconds);
  return outcome.interrupted ? 130 : 0;
}

int run_train(const Args& args) {
  const bool resume = args.has("resume");
  const std::string out = resume ? args.get("resume") : args.get("out");
  URPE_CHECK(!out.empty(), "urpe train: --out DIR is required (or --resume DIR)");
  if (resume) {
    URPE_CHECK(!args.has("preset") && !args.has("config") && !args.has("set"),
               "urpe train --resume takes the config stored in the run; drop --preset/--config/--set");
    URPE_CHECK(!args.has("out") || args.get("out") == out,
               "urpe train: --resume DIR and --out DIR name different directories");
    URPE_CHECK(!args.has("overwrite"), "urpe train: --resume continues the run in " << out
                                           << " and --overwrite would replace it; pass one of them");
  }
  Config config = resume ? stored_config(out) : resolve_config(args.get("preset"), args.get("config"), args.all("set"));
  TrainOptions options;
  options.resume = resume;
  options.quiet = args.has("quiet");
  options.profile_steps = args.get("profile-steps");
  options.tf32 = args.has("tf32");
  if (resume) return train_command(config, out, options);
  check_config_paths(config);  // a missing corpus fails here, before DIR is touched
  const bool has_checkpoint = path_exists(join_path(out, "model.safetensors"));
  OutputClaim claim(out, "--out", args.has("overwrite"),
                    has_checkpoint ? "continue it with 'urpe train --resume " + out + "', " : std::string());
  options.overwrite = true;  // the claim has checked DIR and moved an old run aside
  const int code = train_command(config, out, options);
  claim.done();
  return code;
}

int run_eval(const Args& args) {
  const std::string dir = args.get("run");
  URPE_CHECK(!dir.empty(), "urpe eval: --run DIR is required");
  const std::string split = args.get("split", "valid");
  URPE_CHECK(split == "valid" || split == "test", "urpe eval: --split must be valid or test, got '" << split << "'");
  const std::string checkpoint = join_path(dir, "model.safetensors");
  Config config = stored_config(dir);
  // --device: where to evaluate, whatever the run was trained on (the checkpoint's tensors are
  // plain little-endian floats, the same on every device), so a GPU run can be scored on a CPU.
  const std::string device = args.get("device");
  if (!device.empty()) {
    const bool numbered = device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                          device.find_first_not_of("0123456789", 5) == std::string::npos;
    URPE_CHECK(device == "cpu" || device == "cuda" || numbered,
               "urpe eval: --device '" << device << "': expected cpu, cuda or cuda:N");
    config.apply_override("device=" + device);
  }
  if (config.get_string("model") == "graphormer") return eval_graphormer_command(dir, config, split);
  if (config.get_string("model") == "txl") {
    const LmRunEval e = evaluate_lm_run(dir, split, nullptr, nullptr, config.get_string("device"));
    std::printf("%s (step %lld): %s perplexity %.2f, loss %.4f over %lld tokens (eval_tgt_len %lld, "
                "mem_len %lld, clamp_len %lld, same_length %s)\n",
                dir.c_str(), static_cast<long long>(e.step), split.c_str(), e.result.perplexity, e.result.loss,
                static_cast<long long>(e.result.predicted), static_cast<long long>(e.settings.tgt_len),
                static_cast<long long>(e.settings.mem_len), static_cast<long long>(e.settings.clamp_len),
                e.settings.same_length ? "true" : "false");
    return 0;
  }
  const SyntheticTask task = task_from_config(config);
  TransformerEncoder model(encoder_config_from(config), 0, parse_device(config.get_string("device")));
  const CheckpointInfo info = load_checkpoint(checkpoint, model.parameters(), nullptr);
  // The synthetic tasks have one fixed held-out set; `test` scores a second, disjoint draw.
  const int64_t size = config.get_int("valid_size");
  const EvalResult r = evaluate_encoder(model, task, size, 64,
                                        split == "valid" ? EvalSplit::valid : EvalSplit::test);
  std::printf("%s (step %lld): %s accuracy %.2f%%, loss %.4f over %lld sequences\n", dir.c_str(),
              static_cast<long long>(info.progress.step), split.c_str(), 100.0 * r.accuracy, r.loss,
              static_cast<long long>(size));
  return 0;
}

}  // namespace urpe::cli
