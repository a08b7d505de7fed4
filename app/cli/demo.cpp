// `urpe demo`: the main job in under a minute — noPE, RPE and URPE on position identification —
// through the synthetic-task grid. --out is claimed (or reopened by --resume) as repro's is.
#include <cstdio>

#include "tensor/error.h"
#include "app/analysis/run_summary.h"
#include "app/cli/grid_output.h"
#include "app/cli/handlers.h"
#include "base/io/run_dir.h"
#include "app/repro/synthetic.h"

namespace urpe::cli {

int run_demo(const Args& args) {
  const std::string out = normal_directory(args.get("out", "runs/demo"));
  SyntheticGrid grid = synthetic_grid_for_scale("tiny");
  grid.tasks = {"pi"};
  grid.vocabs = {100};
  grid.device = args.get("device", "cpu");
  grid.first_seed = args.get_int("seed", 1);
  grid.seeds = 1;
  grid.probe = [](const std::string& dir) { return grid_probe(dir, "urpe demo"); };
  for (const std::string& set : args.all("set")) {
    const std::string key = set.substr(0, set.find('='));
    URPE_CHECK(key != "task" && key != "pe" && key != "vocab" && key != "seed" && key != "device",
               "urpe demo: --set " << set << ": the demo sets '" << key << "' itself"
                                   << (key == "seed" || key == "device" ? " (use --" + key + ")" : std::string()));
    grid.overrides.push_back(set);
  }
  GridOutput output(args, out);
  std::printf("urpe demo: can a Transformer tell positions apart when every token looks alike?\n"
              "Position identification (target at position i is i), n = 32, V = 100: noPE has no\n"
              "position information, RPE's softmax rows sum to 1, URPE multiplies by a learned Toeplitz C.\n\n");
  run_synthetic_grid(grid, out, "demo", output.continuation());
  if (output.old_run_comes_back()) return output.finish();
  const std::string summary = draw_grid_summary(out);
  std::printf("\n%s\nPlots: %s/plots/accuracy.png, %s/plots/curves_pi.png, %s/plots/urpe_c_pi.png\nAll on one page: %s\n",
              read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str(), summary.c_str());
  return output.finish();
}

}  // namespace urpe::cli
