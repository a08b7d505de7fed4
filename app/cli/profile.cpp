// `urpe profile --run DIR | --preset NAME [--config FILE] [--set k=v]... [--steps A:B] [--device D]
// --out DIR`: trains B steps of the run's (or preset's) config into DIR/run with the per-op
// recorder over steps A..B, and writes DIR/profile.md, DIR/trace.json and DIR/plots/roofline.png
// (app/cli/trace_output.h). Only steps, eval_every and warmup are cut to fit B steps (one
// evaluation, after the window); everything else trains as configured.
#include <cstdio>
#include <memory>

#include "app/cli/handlers.h"
#include "app/cli/trace_output.h"
#include "base/dist/communicator.h"
#include "base/io/run_dir.h"
#include "train/loop/profiling.h"
#include "train/config/config_sources.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"

namespace urpe::cli {

int run_profile(const Args& args) {
  const std::string out = args.get("out");
  const bool dry_run = args.has("dry-run");
  URPE_CHECK(dry_run || !out.empty(), "urpe profile: --out DIR is required (where profile.md, trace.json and plots/ go)");
  const bool from_run = args.has("run");
  URPE_CHECK(from_run != (args.has("preset") || args.has("config")),
             "urpe profile: give either --run DIR (profile that run's config) or --preset NAME / --config FILE");
  URPE_CHECK(!from_run || !args.has("set"), "urpe profile --run DIR takes the run's own config; drop --set");
  const std::string steps_text = args.get("steps", "2:6");
  const ProfileWindow window = [&] {
    try {
      return ProfileWindow::parse(steps_text);
    } catch (const Error& e) {  // the same checks, under this command's option name
      std::string message = e.what();
      const std::string from = "--profile-steps";
      for (size_t at; (at = message.find(from)) != std::string::npos;) message.replace(at, from.size(), "--steps");
      throw Error(message);
    }
  }();
  for (const char* name : {"profile.md", "trace.json"})
    URPE_CHECK(dry_run || args.has("overwrite") || !path_exists(join_path(out, name)),
               "--out " << out << " already holds a profile (" << name
                        << "); choose another directory or pass --overwrite");

  // The config, then B steps of it: to text and back, so that these keys may be set once more.
  const Config source = from_run ? stored_run_config(args.get("run"))
                                 : resolve_config(args.get("preset"), args.get("config"), args.all("set"));
  Config config = config_from_text(source.to_text(false), "the profiled config");
  const int64_t last = window.last();
  config.apply_override("steps=" + std::to_string(last));
  config.apply_override("eval_every=" + std::to_string(last));
  if (config.get_int("warmup") > last) config.apply_override("warmup=" + std::to_string(last));
  if (args.has("device")) config.apply_override("device=" + args.get("device"));
  // A replayed CUDA graph runs the step without its ops on the host, so the per-op profiler
  // (which times each op as the host runs it) would see no op of those steps.
  URPE_CHECK(!config.get_bool("cuda_graph"),
             "urpe profile: cuda_graph = on replays each step as one CUDA graph, whose ops the per-op profiler "
             "cannot see (it times each op as the host launches it); profile with cuda_graph = off, and time the "
             "captured step with urpe bench step --set cuda_graph=on");
  check_config_values(config);
  check_config_paths(config);
  if (dry_run) {
    // The sources of the profiled config (its preset's, file's and --set's), with the keys the
    // window cut shown as this command's.
    std::vector<ValueSource> sources = from_run ? config_sources(source, "") : config_sources(source, args.get("preset"));
    const CommandSets cut = {{"steps", "profile: trains the window's last step (--steps A:B)"},
                             {"eval_every", "profile: one evaluation, after the window"},
                             {"warmup", "profile: the warm-up cut to the window"},
                             {"device", "profile: --device"}};
    for (ValueSource& s : sources)
      if (config.get_string(s.key) != s.value && cut.count(s.key)) {
        s.value = config.get_string(s.key);
        s.source = cut.at(s.key);
      }
    std::printf("urpe profile --dry-run: the profiled configuration, steps %lld..%lld (nothing is trained or "
                "written)\n\n%s",
                static_cast<long long>(window.first()), static_cast<long long>(window.last()),
                sources_text(sources).c_str());
    return 0;
  }

  auto output = std::make_shared<TraceOutput>();
  output->dir = out;
  output->title = (from_run ? "run " + args.get("run") : args.has("preset") ? args.get("preset") : args.get("config")) +
                  ", steps " + std::to_string(window.first()) + ".." + std::to_string(window.last()) + " on " +
                  config.get_string("device");
  output->command = command_text(args);
  TrainOptions options;
  options.quiet = args.has("quiet");
  options.profile_steps = steps_text;
  options.overwrite = true;  // DIR/run is this command's own scratch run
  options.label = "[profile]";
  // The peaks' device is a temporary: its context (and anything measuring cached) is gone before
  // the run opens its own.
  options.on_trace = trace_sink(output, parse_device(config.get_string("device")), options.quiet);
  const std::string run_dir = join_path(out, "run");
  const int code = train_config(config, run_dir, options);
  // The scratch run keeps its config.txt and metrics.csv; its checkpoints are not the profile's.
  for (const char* name : {"model.safetensors", "model.best.safetensors"})
    if (path_exists(join_path(run_dir, name))) std::remove(join_path(run_dir, name).c_str());
  URPE_CHECK(code != 0 || output->written || !dist::world().is_root(),
             "urpe profile: the run ended before step " << last << " (nothing recorded)");
  return code;
}

}  // namespace urpe::cli
