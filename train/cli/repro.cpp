// `urpe repro`: the paper's experiments as single commands. The --out directory is taken through
// an OutputClaim: another run there is refused unless --overwrite.
#include <algorithm>
#include <cstdio>

#include "tensor/error.h"
#include "train/cli/handlers.h"
#include "train/repro/molecules.h"
#include "train/repro/lm.h"
#include "train/repro/synthetic.h"
#include "train/run_config.h"
#include "train/io/run_dir.h"

namespace urpe::cli {

// One of the built experiments at `scale` into `out` (already claimed).
static void run_experiment(const std::string& experiment, const std::string& scale, long seeds,
                           const std::string& device, const std::string& out, bool finetune) {
  if (experiment == "synthetic") {
    SyntheticGrid grid = synthetic_grid_for_scale(scale);
    grid.seeds = seeds;
    grid.device = device;
    run_synthetic_grid(grid, out, "synthetic");
  } else if (experiment == "lm") {
    LmReproPlan plan = lm_plan_for_scale(scale);
    plan.seeds = seeds;
    plan.device = device;
    // --finetune: half the preset's steps again, RPE continued vs URPE fine-tuned (paper §4.2).
    if (finetune) plan.finetune_steps = std::max<int64_t>(1, resolve_config(plan.preset, "", {}).get_int("steps") / 2);
    run_lm_repro(plan, out);
  } else {
    MoleculeRepro repro = molecule_repro_for_scale(scale);
    repro.seeds = seeds;
    repro.device = device;
    run_molecule_repro(repro, out);
  }
  std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
              read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
}

int run_repro(const Args& args) {
  URPE_CHECK(args.positional.size() == 1,
             "urpe repro: name one experiment: synthetic, lm, molecules or table5 (see 'urpe repro --help')");
  const std::string experiment = args.positional[0];
  const std::string out = args.get("out");
  URPE_CHECK(!out.empty(), "urpe repro: --out DIR is required");
  const long seeds = args.get_int("seeds", 1);
  URPE_CHECK(seeds >= 1 && seeds <= 100, "urpe repro: --seeds must be between 1 and 100, got " << seeds);
  const std::string scale = args.get("scale", "tiny");
  URPE_CHECK(scale == "tiny" || scale == "small" || scale == "paper",
             "urpe repro: --scale '" << scale << "': expected tiny, small or paper");
  const bool built = experiment == "synthetic" || experiment == "lm" || experiment == "molecules";
  URPE_CHECK(built || experiment == "table5",
             "urpe repro: unknown experiment '" << experiment << "' (expected synthetic, lm, molecules or table5)");
  if (!built) {
    std::fprintf(stderr, "urpe: error: 'urpe repro table5' is not built yet: it arrives with the efficiency "
                         "benchmark (the paper's Table 5)\n");
    return 3;
  }
  URPE_CHECK(!args.has("finetune") || experiment == "lm",
             "urpe repro: --finetune applies to 'repro lm' only (RPE continued vs URPE fine-tuned)");
  OutputClaim claim(out, "--out", args.has("overwrite"));
  run_experiment(experiment, scale, seeds, args.get("device", "cpu"), out, args.has("finetune"));
  claim.done();
  return 0;
}

}  // namespace urpe::cli
