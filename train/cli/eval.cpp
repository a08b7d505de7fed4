// `urpe eval`: a run directory's checkpoint scored again on a split, on the device asked for.
#include <cmath>
#include <cstdio>

#include "autograd/node.h"
#include "train/loop/checkpoint.h"
#include "train/cli/handlers.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/io/run_dir.h"
#include "train/io/run_lock.h"
#include "train/families/txl/txl_trainer.h"
#include "train/families/encoder/encoder_mlm_config.h"
#include "train/families/encoder/encoder_mlm_trainer.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"

namespace urpe::cli {

// A model whose parameters are finite may still score NaN or infinity (a run that diverged on its
// last update before the loss showed it, saved by an older build): that is an error, not a number.
static void check_finite_score(const std::string& dir, const std::string& which, const std::string& split,
                               double loss) {
  URPE_CHECK(std::isfinite(loss), "urpe eval: the " << which << " checkpoint of " << dir << " scores a "
                                                   << split << " loss of " << loss
                                                   << ": the run diverged; train it again with a smaller lr, a "
                                                      "longer warmup or clip > 0");
}

static int eval_graphormer_command(const std::string& dir, const Config& config, const std::string& split,
                                   const std::string& which) {
  const MoleculeEval e = evaluate_graphormer_run(dir, config, split, which);
  check_finite_score(dir, which, split, e.mae);
  std::printf("%s (%s, step %lld): %s MAE %.6f over %lld molecules (predict-the-training-mean: %.6f)\n", dir.c_str(),
              which.c_str(), static_cast<long long>(e.step), split.c_str(), e.mae, static_cast<long long>(e.molecules),
              e.baseline_mae);
  return 0;
}

int run_eval(const Args& args) {
  const std::string dir = args.get("run");
  URPE_CHECK(!dir.empty(), "urpe eval: --run DIR is required");
  const auto lock = lock_for_reading(dir, "--run");  // no writer may replace the run meanwhile
  const std::string split = args.get("split", "valid");
  URPE_CHECK(split == "valid" || split == "test", "urpe eval: --split must be valid or test, got '" << split << "'");
  const std::string which = args.get("checkpoint", "last");
  URPE_CHECK(which == "last" || which == "best",
             "urpe eval: --checkpoint must be last or best, got '" << which << "'");
  Config config = stored_run_config(dir);
  const std::string checkpoint = run_checkpoint_path(dir, which);
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
  if (config.get_string("model") == "graphormer") return eval_graphormer_command(dir, config, split, which);
  if (config.get_string("model") == "txl") {
    const LmRunEval e = evaluate_lm_run(dir, split, nullptr, nullptr, config.get_string("device"), which);
    check_finite_score(dir, which, split, e.result.loss);
    std::printf("%s (%s, step %lld): %s perplexity %.2f, loss %.4f over %lld tokens (eval_tgt_len %lld, "
                "mem_len %lld, clamp_len %lld, same_length %s)\n",
                dir.c_str(), which.c_str(), static_cast<long long>(e.step), split.c_str(), e.result.perplexity, e.result.loss,
                static_cast<long long>(e.result.predicted), static_cast<long long>(e.settings.tgt_len),
                static_cast<long long>(e.settings.mem_len), static_cast<long long>(e.settings.clamp_len),
                e.settings.same_length ? "true" : "false");
    return 0;
  }
  if (is_masked_lm(config)) {  // task = mlm: the split's first valid_size windows, fixed masks
    TransformerEncoder model(encoder_config_from(config), 0, parse_device(config.get_string("device")));
    const CheckpointInfo info = load_checkpoint(checkpoint, model.parameters(), nullptr);
    const MaskedLmData data = masked_lm_data(config);
    const MaskedLmEval e = evaluate_masked_lm(model, data.task, split == "valid" ? data.valid : data.test,
                                              config.get_int("valid_size"));
    std::printf("%s (%s, step %lld): %s MLM loss %.4f, masked-token accuracy %.2f%% over %lld masked tokens of %lld "
                "windows\n",
                dir.c_str(), which.c_str(), static_cast<long long>(info.progress.step), split.c_str(), e.loss,
                100.0 * e.accuracy, static_cast<long long>(e.masked), static_cast<long long>(e.windows));
    return 0;
  }
  const SyntheticTask task = task_from_config(config);
  TransformerEncoder model(encoder_config_from(config), 0, parse_device(config.get_string("device")));
  const CheckpointInfo info = load_checkpoint(checkpoint, model.parameters(), nullptr);
  // The synthetic tasks have one fixed held-out set; `test` scores a second, disjoint draw.
  const int64_t size = config.get_int("valid_size");
  const EvalResult r = evaluate_encoder(model, task, size, 64,
                                        split == "valid" ? EvalSplit::valid : EvalSplit::test);
  check_finite_score(dir, which, split, r.loss);
  std::printf("%s (%s, step %lld): %s accuracy %.2f%%, loss %.4f over %lld sequences\n", dir.c_str(),
              which.c_str(), static_cast<long long>(info.progress.step), split.c_str(), 100.0 * r.accuracy, r.loss,
              static_cast<long long>(size));
  return 0;
}

}  // namespace urpe::cli
