// What each subcommand is called, takes and runs. Commands whose issue has not landed yet have no
// handler and say which part of the project will bring them.
#include "train/cli/command_table.h"

#include "train/cli/handlers.h"
#include "train/run_config.h"

namespace urpe::cli {

std::vector<CommandSpec> command_table() {
  std::vector<CommandSpec> table;

  table.push_back({"demo", "demo [--out DIR] [--device cpu|cuda]",
                   "tiny URPE vs RPE vs noPE run on the synthetic tasks; prints a table, writes plots",
                   {{"out", "DIR", "runs/demo", "where the runs, table and plots go"},
                    {"device", "NAME", "cpu", "cpu, cuda or cuda:N"},
                    {"seed", "N", "1", "random seed"}},
                   run_demo, "", ""});

  table.push_back({"train", "train --preset NAME | --config FILE [--set key=value]... --out DIR",
                   "train one model from a preset or a config file",
                   {{"preset", "NAME", "", "a built-in configuration"},
                    {"config", "FILE", "", "a config file of 'key = value' lines"},
                    {"set", "KEY=VALUE", "", "override one config key (repeatable)"},
                    {"out", "DIR", "", "run directory (config, metrics, checkpoint, plots)"},
                    {"resume", "DIR", "", "continue a run from its checkpoint"},
                    {"profile-steps", "A:B", "", "wrap training steps A..B in cudaProfilerStart/Stop (for nsys/ncu --profile-from-start off)"},
                    {"tf32", "", "", "allow TF32 tensor-core GEMMs on CUDA (off by default: full fp32)"},
                    {"quiet", "", "", "no progress output"}},
                   run_train, "", run_config_help()});

  table.push_back({"eval", "eval --run DIR [--split valid|test]",
                   "evaluate a trained run's checkpoint on a split",
                   {{"run", "DIR", "", "run directory written by 'urpe train'"},
                    {"split", "NAME", "valid", "valid or test"}},
                   run_eval, "", ""});

  table.push_back({"repro", "repro synthetic|lm|molecules|table5 [--scale tiny|small|paper] [--seeds K] "
                            "[--lengths 128,256,512] [--batch B] --out DIR",
                   "reproduce one of the paper's experiments and write results.md/json and plots",
                   {{"scale", "NAME", "tiny", "tiny, small or paper"},
                    {"seeds", "K", "1", "number of seeds per configuration"},
                    {"out", "DIR", "", "output directory"},
                    {"device", "NAME", "cpu", "cpu, cuda or cuda:N"},
                    {"lengths", "N,N,...", "128,256,512", "table5: sequence lengths"},
                    {"batch", "B", "32", "table5: sequences per forward"},
                    {"layers", "L", "12", "table5: encoder layers (the paper's 12; fewer for a quick check)"},
                    {"repeats", "N", "3", "table5: timed forward passes per row (median reported)"}},
                   run_repro, "",
                   "Experiments: synthetic (built: noPE/RPE/URPE on PI and ETP, Figure 1 and 2);\n"
                   "lm (built: Transformer-XL vs Transformer-XL + URPE, Table 4; tiny/small train on the\n"
                   "embedded corpus on a CPU; paper = the WikiText-103 base at L = 4, 8, 16, needs the\n"
                   "wikitext-103 directory and a GPU);\n"
                   "molecules (built: Graphormer vs Graphormer + URPE, Table 2);\n"
                   "table5 (built: Table 5, inference time and peak memory of RPE vs URPE with the\n"
                   "materialized and the fused attention, 12 layers, d = 768, 12 heads, batch 32).\n"});

  table.push_back({"plot", "plot --run DIR", "redraw a run's plots from its files",
                   {{"run", "DIR", "", "run directory"}},
                   run_plot, "", ""});

  table.push_back({"bench", "bench kernels|step|attention [--device cpu|cuda] [--tf32] [--sizes table5|smoke] "
                            "[--seq-len N] [--batch B] [--attention fused|materialized] [--lengths N,N]",
                   "time the kernels or a training step",
                   {{"device", "NAME", "cpu", "cpu, cuda or cuda:N"},
                    {"repeats", "N", "50", "timed runs per measurement (the median is reported)"},
                    {"tf32", "", "off", "TF32 tensor-core GEMMs (CUDA only)"},
                    {"sizes", "NAME", "table5",
                     "CUDA table sizes: table5, or smoke (a tiny model that checks the table runs)"},
                    {"seq-len", "N", "128", "bench step: sequence length n"},
                    {"batch", "B", "32", "bench step: sequences per step"},
                    {"attention", "PATH", "materialized", "bench step: materialized (the training default) or fused attention"},
                    {"lengths", "N,N,...", "1024,4096", "bench attention: sequence lengths"}},
                   run_bench, "",
                   "'bench kernels' times each kernel beside its references (copy bandwidth, sgemm);\n"
                   "with --device cuda: CUDA events, L2 flushed before every run, median of --repeats\n"
                   "runs, at the paper's Table 5 sizes (batch 32, 12 heads, head dim 64, N = 128/256/512),\n"
                   "each row as a % of the copy bandwidth and sgemm rate measured at start on the device.\n"
                   "'bench step' times a full training step of the URPE encoder (n=128, d=128, 4 heads,\n"
                   "2 layers, d_ff 512, batch 32) and its peak memory; --repeats sets its timed steps\n"
                   "(default 20); --seq-len 1024 --batch 4 is the long-sequence bench.\n"
                   "'bench attention' times the attention alone, fused against materialized, forward and\n"
                   "forward + backward, with the peak memory each call allocates (batch 1, 4 heads, head\n"
                   "dim 32 unless --batch; --lengths 1024,4096 by default; --repeats runs, default 3).\n"});
  return table;
}

}  // namespace urpe::cli
