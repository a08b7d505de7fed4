// `urpe train`: a run directory from a preset or config file (or --resume), trained by its family.
#include "app/cli/handlers.h"

#include <cstdio>
#include <memory>

#include "autograd/node.h"
#include "train/loop/checkpoint.h"
#include "train/loop/checkpoint_identity.h"
#include "base/dist/communicator.h"
#include "train/families/model_family.h"
#include "train/config/config_sources.h"
#include "train/config/run_config.h"
#include "base/io/run_dir.h"
#include "train/loop/run_control.h"
#include "app/cli/trace_output.h"

namespace urpe::cli {

// Under mpirun only rank 0 prints the run's summary (and writes its files).
static bool prints_summary() { return dist::world().is_root(); }

// Trains `config` into `out` with the trainer of its family; returns the exit code.
int train_config(const Config& config, const std::string& out, const TrainOptions& options) {
  const FamilyTrainResult trained = family_of(config).train(config, out, options);
  if (prints_summary()) std::printf("%s: %s\n", out.c_str(), trained.summary.c_str());
  return trained.interrupted ? stop_exit_code() : 0;
}

// --dry-run: the resolved config, every key with its value and source, and nothing else.
static int print_train_dry_run(const Args& args) {
  URPE_CHECK(!args.has("resume"), "urpe train: --dry-run shows the config a new run would resolve; a resumed run's "
                                  "config is its config.txt (read it there)");
  const Config config = resolve_config(args.get("preset"), args.get("config"), args.all("set"));
  std::printf("urpe train --dry-run: the run's resolved configuration (nothing is trained or written)\n\n%s",
              sources_text(config_sources(config, args.get("preset"))).c_str());
  return 0;
}

int run_train(const Args& args) {
  if (args.has("dry-run")) return print_train_dry_run(args);
  const bool resume = args.has("resume");
  // Resolved once: every comparison and message below uses this spelling.
  const std::string given = resume ? args.get("resume") : args.get("out");
  URPE_CHECK(!given.empty(), "urpe train: --out DIR is required (or --resume DIR)");
  const std::string out = normal_directory(given);
  dist::Communicator& ranks = dist::world();
  if (resume) {
    URPE_CHECK(!args.has("preset") && !args.has("config"),
               "urpe train --resume takes the config stored in the run; drop --preset/--config (--set may change "
               "steps, eval_every, device or precision)");
    URPE_CHECK(!args.has("out") || same_directory(args.get("out"), out),
               "urpe train: --resume " << out << " and --out " << args.get("out") << " name different directories");
    URPE_CHECK(!args.has("overwrite"), "urpe train: --resume continues the run in " << out
                                           << " and --overwrite would replace it; pass one of them");
    URPE_CHECK(!args.has("init-from"), "urpe train: --init-from starts a new run; a resumed run continues from "
                                           "its own checkpoint, so drop --init-from");
  }
  // --resume: rank 0 locks DIR before reading it (the training loop takes the same lock again).
  std::unique_ptr<RunDirectoryLock> resume_lock;
  if (resume) {
    std::string refused;
    try {
      if (ranks.is_root() && is_directory(out))
        resume_lock = std::make_unique<RunDirectoryLock>(out, LockMode::exclusive, "--resume");
    } catch (const Error& e) {
      refused = e.what();
    }
    dist::check_collective(ranks, refused.empty(), refused);
  }
  Config config = resume ? resumed_config(out, args.all("set"))
                         : resolve_config(args.get("preset"), args.get("config"), args.all("set"));
  TrainOptions options;
  options.resume = resume;
  if (resume) options.resume_overrides = args.all("set");
  options.quiet = args.has("quiet");
  options.profile_steps = args.get("profile-steps");
  options.tf32 = args.has("tf32");
  options.init_from = args.get("init-from");
  URPE_CHECK(!args.has("init-from") || !options.init_from.empty(), "urpe train: --init-from needs a run directory");
  // --trace: urpe's per-op profile of the --profile-steps window (default_trace_window without
  // one) into DIR/profile/.
  std::shared_ptr<TraceOutput> trace;
  if (args.has("trace")) {
    trace = std::make_shared<TraceOutput>();
    trace->dir = join_path(out, "profile");
    trace->title = out + ", steps " + (options.profile_steps.empty() ? "(default window)" : options.profile_steps);
    trace->command = command_text(args);
    options.on_trace = trace_sink(trace, parse_device(config.get_string("device")), options.quiet);
  }
  auto untraced = [&](int code) {  // a resumed run can start after the whole window
    if (trace && !trace->written && code == 0 && dist::world().is_root())
      std::printf("--trace: no step of the window %s ran in this run; no profile written\n",
                  (options.profile_steps.empty() ? default_trace_window(config.get_int("steps")) : options.profile_steps).c_str());
    return code;
  };
  if (resume) return untraced(train_config(config, out, options));
  URPE_CHECK(options.init_from.empty() || !same_directory(options.init_from, out),
             "urpe train: --init-from and --out name the same directory; the new run needs its own --out");
  check_config_paths(config);  // a missing corpus fails here, before DIR is touched
  // Rank 0 alone claims DIR (the only rank that writes); its refusal is every rank's error.
  std::unique_ptr<OutputClaim> claim;
  std::string refused;
  try {
    const bool has_checkpoint = path_exists(join_path(out, "model.safetensors"));
    if (ranks.is_root())
      claim = std::make_unique<OutputClaim>(
          out, "--out", args.has("overwrite"),
          has_checkpoint ? "continue it with 'urpe train --resume " + out + "', " : std::string());
  } catch (const Error& e) {
    refused = e.what();
  }
  dist::check_collective(ranks, refused.empty(), refused);
  options.overwrite = true;  // the claim has checked DIR and moved an old run aside
  const int code = train_config(config, out, options);
  // Stopped by a signal, the claim keeps the new run if it saved a checkpoint, else puts back the
  // run DIR held before (base/io/run_dir.h).
  if (claim && code == 0) claim->done();
  return untraced(code);
}

}  // namespace urpe::cli
