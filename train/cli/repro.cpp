// `urpe repro` and `urpe demo`: the paper's experiments as single commands.
#include <cstdio>

#include "bench/bench_kernels.h"
#include "tensor/error.h"
#include "train/cli/handlers.h"
#include "train/repro/molecules.h"
#include "train/repro/lm.h"
#include "train/repro/synthetic.h"
#include "train/repro/table5.h"
#include "train/io/run_dir.h"

namespace urpe::cli {

int run_repro(const Args& args) {
  URPE_CHECK(args.positional.size() == 1,
             "urpe repro: name one experiment: synthetic, lm, molecules or table5 (see 'urpe repro --help')");
  const std::string experiment = args.positional[0];
  const std::string out = args.get("out");
  URPE_CHECK(!out.empty(), "urpe repro: --out DIR is required");
  const long seeds = args.get_int("seeds", 1);
  URPE_CHECK(seeds >= 1 && seeds <= 100, "urpe repro: --seeds must be between 1 and 100, got " << seeds);
  if (experiment == "synthetic") {
    SyntheticGrid grid = synthetic_grid_for_scale(args.get("scale", "tiny"));
    grid.seeds = seeds;
    grid.device = args.get("device", "cpu");
    run_synthetic_grid(grid, out, "synthetic");
    std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
                read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
    return 0;
  }
  if (experiment == "lm") {
    LmReproPlan plan = lm_plan_for_scale(args.get("scale", "tiny"));
    plan.seeds = seeds;
    plan.device = args.get("device", "cpu");
    run_lm_repro(plan, out);
    std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
                read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
    return 0;
  }
  if (experiment == "molecules") {
    MoleculeRepro repro = molecule_repro_for_scale(args.get("scale", "tiny"));
    repro.seeds = seeds;
    repro.device = args.get("device", "cpu");
    run_molecule_repro(repro, out);
    std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
                read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
    return 0;
  }
  URPE_CHECK(experiment == "table5",
             "urpe repro: unknown experiment '" << experiment << "' (expected synthetic, lm, molecules or table5)");
  Table5Options options;
  options.device = args.get("device", "cpu");
  bench::require_cuda_device("repro table5", options.device);
  if (args.has("lengths")) options.lengths = parse_lengths(args.get("lengths"));
  const long batch = args.get_int("batch", options.batch);
  URPE_CHECK(batch >= 1 && batch <= 4096, "option --batch: expected a batch size between 1 and 4096, got " << args.get("batch"));
  options.batch = batch;
  const long layers = args.get_int("layers", options.layers);
  URPE_CHECK(layers >= 1 && layers <= 96, "option --layers: expected between 1 and 96 layers, got " << args.get("layers"));
  options.layers = layers;
  const long repeats = args.get_int("repeats", options.repeats);
  URPE_CHECK(repeats >= 1 && repeats <= 1000, "option --repeats: expected between 1 and 1000 timed runs, got " << args.get("repeats"));
  options.repeats = static_cast<int>(repeats);
  run_table5(options, out);
  std::printf("\n%s\nwrote %s/results.md, %s/results.json and %s/plots/\n",
              read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
  return 0;
}

int run_demo(const Args& args) {
  const std::string out = args.get("out", "runs/demo");
  SyntheticGrid grid = synthetic_grid_for_scale("tiny");
  grid.tasks = {"pi"};
  grid.vocabs = {100};
  grid.device = args.get("device", "cpu");
  grid.first_seed = args.get_int("seed", 1);
  grid.seeds = 1;
  std::printf("urpe demo: can a Transformer tell positions apart when every token looks alike?\n"
              "Position identification (target at position i is i), n = 32, V = 100: noPE has no\n"
              "position information, RPE's softmax rows sum to 1, URPE multiplies by a learned Toeplitz C.\n\n");
  run_synthetic_grid(grid, out, "demo");
  std::printf("\n%s\nPlots: %s/plots/accuracy.png, %s/plots/curves_pi.png, %s/plots/urpe_c_pi.png\n",
              read_text_file(join_path(out, "results.md")).c_str(), out.c_str(), out.c_str(), out.c_str());
  return 0;
}

}  // namespace urpe::cli
