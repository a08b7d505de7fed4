// What each subcommand is called, takes and runs. Commands whose issue has not landed yet have no
// handler and say which part of the project will bring them.
#include "app/cli/command_table.h"

#include "app/cli/handlers.h"
#include "train/config/run_config.h"

namespace urpe::cli {

// The same promise for every command that writes a directory (see run_dir.h, OutputClaim).
static const char* const kOverwriteHelp =
    "replace the run already in DIR (its config.txt, metrics.csv, model.safetensors, results.*, plots/, "
    "runs/; other files stay) once the new run has saved its first checkpoint: a stop (Ctrl-C, SIGTERM, SIGHUP) "
    "or an error before that puts the old run back as it was. Without it such a DIR is refused";
// Grids stopped by Ctrl-C or SIGTERM (docs/runs.md#interrupted-grids).
// --dry-run of train, repro and profile (docs/reproduce.md#every-value-and-its-source).
static const char* const kDryRunHelp =
    "print the resolved configuration of every run the command would start, one line per key: its value and its "
    "source (the paper's section, the official script, the preset's own reason, a default's reason, or your --set), "
    "then exit without training or writing anything (--out may be left out)";
static const char* const kGridResumeHelp =
    "continue the grid in --out that Ctrl-C or SIGTERM stopped (give the same options again): finished runs "
    "are reused, a stopped run resumes from its checkpoint, the rest start";

std::vector<CommandSpec> command_table() {
  std::vector<CommandSpec> table;

  table.push_back({"demo", "demo [--out DIR] [--overwrite | --resume] [--device cpu|cuda] [--set KEY=VALUE]...",
                   "tiny URPE vs RPE vs noPE run on the synthetic tasks; prints a table, writes plots",
                   {{"out", "DIR", "runs/demo", "where the runs, table and plots go"},
                    {"overwrite", "", "", kOverwriteHelp},
                    {"resume", "", "", kGridResumeHelp},
                    {"device", "NAME", "cpu", "cpu, cuda or cuda:N"},
                    {"seed", "N", "1", "random seed", {0, 4294967295}},
                    {"set", "KEY=VALUE", "", "override one config key of every run (repeatable; not task, pe, vocab, seed, device), e.g. steps=200"}},
                   run_demo, "", "", 0});

  table.push_back({"train", "train --preset NAME | --config FILE [--set key=value]... --out DIR [--overwrite] [--dry-run]",
                   "train one model from a preset or a config file",
                   {{"preset", "NAME", "", "a built-in configuration"},
                    {"config", "FILE", "", "a config file of 'key = value' lines"},
                    {"set", "KEY=VALUE", "",
                     "override one config key (repeatable); with --resume only steps, eval_every, device or precision"},
                    {"out", "DIR", "", "run directory (config, metrics, checkpoint, plots)"},
                    {"overwrite", "", "", kOverwriteHelp},
                    {"resume", "DIR", "",
                     "continue a run from its checkpoint (refused when the directory's checkpoint, best checkpoint "
                     "and config.txt are not of one run)"},
                    {"init-from", "RUN", "",
                     "start the parameters from run directory RUN's last checkpoint, matched by name; only urpe_c "
                     "may be missing there and stays ones (fine-tune an RPE run into URPE, paper 4.2); logs a "
                     "step-0 validation"},
                    {"profile-steps", "A:B", "", "wrap training steps A..B in cudaProfilerStart/Stop (for nsys/ncu --profile-from-start off)"},
                    {"trace", "", "", "record every op of the --profile-steps window (default steps 2..6) and write DIR/profile/: "
                     "profile.md, trace.json (Perfetto), plots/roofline.png (docs/profiling.md)"},
                    {"tf32", "", "", "allow TF32 tensor-core GEMMs on CUDA (off by default: full fp32)"},
                    {"dry-run", "", "", kDryRunHelp},
                    {"quiet", "", "", "no progress output"}},
                   run_train, "", run_config_help(), 0});

  table.push_back({"eval", "eval --run DIR [--split valid|test] [--checkpoint last|best] [--device cpu|cuda]",
                   "evaluate a trained run's checkpoint on a split",
                   {{"run", "DIR", "", "run directory written by 'urpe train'"},
                    {"split", "NAME", "valid", "valid or test"},
                    {"checkpoint", "WHICH", "last",
                     "last (model.safetensors) or best (model.best.safetensors: the best validation metric)"},
                    {"device", "NAME", "the run's",
                     "cpu, cuda or cuda:N: where to evaluate (a run trained on a GPU can be scored on a CPU)"}},
                   run_eval, "", "", 0});

  table.push_back({"repro", "repro synthetic|lm|molecules|pretrain|table5 [--scale tiny|small|paper] [--seeds K] "
                   "[--set key=value]... [--tf32] --out DIR [--overwrite | --resume] [--dry-run] [--pes LIST] [--lengths LIST] "
                   "[--tasks LIST] [--data DIR] [--corpus DIR] [--grid paper|key=v1,v2]... [--preset NAME] [--batch B] "
                   "[--layers L]",
                   "reproduce one of the paper's experiments and write results.md/json and plots",
                   {{"scale", "NAME", "tiny", "tiny, small or paper (paper: the presets of Appendix C, docs/reproduce.md)"},
                    {"seeds", "K", "1", "number of seeds per configuration (molecules --scale paper: 4, as Tables 2 and 3 "
                     "average (§5.3))", {1, 100}},
                    {"set", "KEY=VALUE", "",
                     "override one config key in every run of the grid, after the scale's settings (repeatable; e.g. "
                     "attention=fused, accum_steps=4, device=cuda, a data path); recorded in results.md"},
                    {"tf32", "", "", "TF32 tensor-core GEMMs on CUDA in every run (off: full fp32); recorded in results.md"},
                    {"dry-run", "", "", kDryRunHelp},
                    {"out", "DIR", "", "output directory"},
                    {"overwrite", "", "", kOverwriteHelp},
                    {"resume", "", "", kGridResumeHelp},
                    {"device", "NAME", "cpu", "cpu, cuda or cuda:N"},
                    {"pes", "LIST", "none,rpe,urpe",
                     "synthetic: the positional encodings, one table column each, e.g. "
                     "none,ape,sinusoidal,rpe,alibi,rope,shaw,urpe,rope+urpe,alibi+urpe"},
                    {"lengths", "LIST", "",
                     "synthetic: sequence lengths n, one table row each (default the preset's; C.1 Figure 3: 256,512); "
                     "table5: the lengths timed (default 128,256,512, §5.4)"},
                    {"tasks", "LIST", "pi,etp", "synthetic: the tasks, pi and/or etp"},
                    {"data", "DIR", "",
                     "molecules: the dataset instead of the embedded molecules: a graph-file directory "
                     "(tools/zinc_to_urpe.py: ZINC subset or full), a ZINC-250k or SMILES CSV (docs/data.md); "
                     "required at --scale paper, where --data embedded trains on the stand-in anyway"},
                    {"corpus", "DIR", "",
                     "lm, pretrain: the corpus instead of the scale's default: a WikiText directory, e.g. wikitext-103 "
                     "(wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens; docs/data.md); required at --scale "
                     "paper, where --corpus embedded trains on the stand-in anyway"},
                    {"finetune", "", "",
                     "lm only: then continue every RPE run for half its steps as RPE and as URPE with C = 1 "
                     "(urpe train --init-from; paper 4.2) and compare"},
                    {"grid", "paper|KEY=V1,V2", "",
                     "molecules: run a grid of settings and select per model by validation MAE (repeatable); paper = "
                     "Appendix C.3.1's selection: batch {128,256,512} x lr {4e-4,5e-4} x dropout {0,0.1} x weight decay "
                     "{0,0.01}"},
                    {"preset", "NAME", "the scale's",
                     "molecules: the Graphormer preset (graphormer-slim: C.3.1 ZINC subset; graphormer-slim-full: ZINC "
                     "full; graphormer-pcqm4m: C.3.2), which also picks the paper's row beside ours"},
                    {"batch", "B", "32", "table5: sequences per forward (§5.4: 32)", {1, 4096}},
                    {"layers", "L", "12", "table5: encoder layers (§5.4: 12; fewer for a quick check)", {1, 96}},
                    {"repeats", "N", "3", "table5: timed forward passes per row (median reported)", {1, 1000}}},
                   run_repro, "",
                   "Experiments (docs/reproduce.md; --scale paper uses the presets of Appendix C):\n"
                   "synthetic: noPE/RPE/URPE on PI and ETP (Figure 1; C.1: pi-paper, etp-paper, V = 10, 1000, 10000;\n"
                   "Figure 3: --tasks pi --lengths 256,512); --pes picks the encodings; a line under the table sorts\n"
                   "the encodings by Theorem 2's identical-token probe;\n"
                   "lm: Transformer-XL vs Transformer-XL + URPE (Tables 1 and 4; C.2: txl-base-paper at L = 4, 8, 16,\n"
                   "§5.4); tiny/small train on the embedded corpus on a CPU; paper needs the wikitext-103 directory\n"
                   "(--corpus DIR) and a GPU;\n"
                   "molecules: Graphormer vs Graphormer + URPE (Tables 2 and 3; C.3.1: graphormer-slim, 4 seeds;\n"
                   "--preset graphormer-slim-full or graphormer-pcqm4m (C.3.2); --grid paper: C.3.1's selection);\n"
                   "pretrain: masked-LM pre-training, APE+RPE vs RPE vs URPE by validation MLM loss (C.4: the paper's\n"
                   "1.86 / 1.94 / 1.87 beside ours; tiny and small on the embedded corpus, paper = mlm-paper);\n"
                   "table5: inference time and peak memory of RPE vs URPE with the materialized and the fused\n"
                   "attention (§5.4: 12 layers, d = 768, 12 heads, batch 32; the paper's log2 ms and GB beside ours).\n",
                   1});

  table.push_back({"plot", "plot --run DIR", "redraw a run's plots from its files",
                   {{"run", "DIR", "", "run directory"}},
                   run_plot, "", "", 0});

  table.push_back({"profile",
                   "profile --run DIR | --preset NAME [--config FILE] [--set key=value]... [--steps A:B] "
                   "[--device cpu|cuda] --out DIR [--overwrite] [--dry-run]",
                   "every op's time, FLOPs and bytes against the machine's roofline: a table, a trace and a picture",
                   {{"run", "DIR", "", "profile the config of this run directory"},
                    {"preset", "NAME", "", "profile a built-in configuration"},
                    {"config", "FILE", "", "profile a config file"},
                    {"set", "KEY=VALUE", "", "override one config key (repeatable; not with --run)"},
                    {"steps", "A:B", "2:6", "record training steps A..B (the run trains B steps)"},
                    {"device", "NAME", "the config's", "cpu, cuda or cuda:N"},
                    {"out", "DIR", "", "writes DIR/profile.md, DIR/trace.json, DIR/plots/roofline.png and DIR/run/"},
                    {"dry-run", "", "", kDryRunHelp},
                    {"overwrite", "", "", "replace a profile already in DIR"},
                    {"quiet", "", "", "no progress output"}},
                   run_profile, "",
                   "Trains the config for B steps (steps, eval_every and warmup cut to B; one evaluation after the\n"
                   "window) and records every op of steps A..B: forward, backward, optimizer and collectives, each\n"
                   "with its scope (the NVTX range names), FLOPs and bytes from the op's own formula. Times are the\n"
                   "host's on a CPU and the CUDA stream's (an event pair per op) on a GPU. The roofline uses the\n"
                   "machine's measured peaks (urpe bench peaks; measured once and cached when missing).\n"
                   "profile.md: the key-averages table sorted by self time (op, phase, calls, self, total, % of\n"
                   "step, GFLOP/s, GB/s, % of the roofline bound) and the step against the ops' bounds;\n"
                   "trace.json: open in ui.perfetto.dev. docs/profiling.md explains them.\n",
                   0});

  table.push_back({"bench", "bench peaks|kernels|step|attention [--device cpu|cuda] [--tf32] [--math fp32|tf32|bf16] [--sizes table5|smoke] "
                            "[--model encoder|txl|graphormer] [--seq-len N] [--batch B] [--attention fused|materialized] [--lengths N,N] "
                            "[--heads H] [--head-dim D] [--causal] [--tc-pipeline auto|on|off] [--tc-rows auto|1|2] [--set cuda_graph=on]",
                   "measure the machine's peaks, time the kernels or a training step",
                   {{"device", "NAME", "cpu", "cpu, cuda or cuda:N"},
                    {"repeats", "N", "50", "timed runs per measurement (the median is reported)", {1, 1000000}},
                    {"tf32", "", "off", "TF32 tensor cores: the GEMMs and the fused attention's kernels (CUDA only)"},
                    {"math", "NAME", "fp32",
                     "bench attention: fp32, tf32 (= --tf32) or bf16 (the fused attention on BF16 tensor-core tiles "
                     "reading bf16 q, k, v and dO, the GEMMs TF32, as precision=bf16; CUDA only)"},
                    {"sizes", "NAME", "table5",
                     "CUDA table sizes: table5, or smoke (a tiny model that checks the table runs); bench peaks: "
                     "smoke measures tiny sizes (checks it runs, not the machine's limits); bench attention: smoke "
                     "measures the TF32 reference GEMM at 256³"},
                    {"model", "NAME", "encoder", "bench step: the family, encoder, txl or graphormer (app/bench/step_models.h)"},
                    {"seq-len", "N", "128", "bench step: sequence length n (encoder; txl: tgt_len = mem_len)"},
                    {"batch", "B", "32", "bench step: sequences (encoder 32, txl 16) or graphs (graphormer 128) per step"},
                    {"attention", "PATH", "materialized", "bench step: materialized (the training default) or fused attention; bench attention: only this path (default both)"},
                    {"lengths", "N,N,...", "1024,4096", "bench attention: sequence lengths (above 4096: --attention fused only)"},
                    {"heads", "H", "4", "bench attention: heads", {1, 1024}},
                    {"head-dim", "D", "32", "bench attention: head dim (the fused kernels take up to 128)", {1, 128}},
                    {"causal", "", "off", "bench attention: causal mask on both paths"},
                    {"tc-pipeline", "MODE", "auto",
                     "bench attention: the tensor-core kernels' software-pipelined variants (cp.async staging of the "
                     "next tile: forward and dQ key tiles, dK/dV query tiles; the same bits): auto where a GPU "
                     "measured them faster (d 64: BF16 tiles, TF32 backward), on, or off; what ran is stated on every "
                     "fused row (CUDA, --math tf32 or bf16)"},
                    {"tc-rows", "MODE", "auto",
                     "bench attention: the tensor-core forward's 16-row blocks of queries per warp: 1 (64 rows a block), "
                     "2 (FlashAttention-2's 32 rows a warp, 128 a block; BF16 tiles at head dims 33-64 only, elsewhere 1; "
                     "the same bits), auto (2 without --causal from 1024 query rows on, where an H200 measured it faster; "
                     "1 elsewhere); what ran is stated on every fused row (CUDA, "
                     "--math tf32 or bf16)"},
                    {"set", "KEY=VALUE", "",
                     "bench step: cuda_graph=on times the step captured once as a CUDA graph and replayed against "
                     "the eager step, in alternating rounds, with the ops' GPU time and the idle share 1 - ops / step, "
                     "and each replay's GPU span (CUDA events around its launch) with its idle share 1 - span / step "
                     "(CUDA; encoder, graphormer)"}},
                   run_bench, "",
                   "'bench peaks' measures the machine's ceilings for the roofline of 'urpe profile': sgemm\n"
                   "GFLOP/s at large square sizes and the bench model's GEMM shapes, and memory bandwidth (STREAM\n"
                   "copy and triad on a CPU; device copy, cuBLAS sgemm and TF32 on CUDA); it stores them in the\n"
                   "peaks cache ($URPE_PEAKS_CACHE, else ~/.cache/urpe/peaks.json); --sizes smoke only checks it runs.\n"
                   "'bench kernels' times each kernel beside its references (copy bandwidth, sgemm);\n"
                   "with --device cuda: CUDA events, L2 flushed before every run, median of --repeats\n"
                   "runs, at the paper's Table 5 sizes (batch 32, 12 heads, head dim 64, N = 128/256/512),\n"
                   "each row as a % of the copy bandwidth and sgemm rate measured at start on the device.\n"
                   "'bench step' times a full training step (forward, backward, Adam) of a family at its bench\n"
                   "configuration: the URPE encoder (n=128, d=128, 4 heads, 2 layers, d_ff 512, batch 32),\n"
                   "--model txl (Transformer-XL + URPE) or --model graphormer (Graphormer + URPE), with its CPU\n"
                   "time, FLOPs (the ops' cost formulas) as a share of the measured sgemm rate, peak memory and\n"
                   "the allocator's reuse; --repeats sets its timed steps (default 20); --seq-len 1024 --batch 4\n"
                   "is the long-sequence bench. tools/torch_bench.py times the same steps in PyTorch.\n"
                   "'bench attention' times the attention alone, fused against materialized, forward and\n"
                   "forward + backward, with the peak memory each call allocates (batch 1, 4 heads, head\n"
                   "dim 32 unless --batch, --heads, --head-dim; --lengths 1024,4096 by default; --repeats runs,\n"
                   "default 3), FLOPs in FlashAttention's count (forward 4·B·H·n²·d, halved when --causal;\n"
                   "backward 2.5× forward), TFLOP/s and, on CUDA, the share of the cuBLAS TF32 GEMM rate\n"
                   "measured at start; every row names its math (fp32, or tf32 with --tf32).\n",
                   1});
  CommandSpec theory{"theory", "theory probe|construction|rowsums|denominator [OPTIONS]",
                     "the paper's statements as measurements: Theorem 2, Proposition 4, row sums of C, the denominator",
                     {}, nullptr, "", ""};
  theory.subcommands.push_back(
      {"theory probe",
       "theory probe --run DIR | --repro DIR | --preset NAME [--pe LIST] [--set KEY=VALUE]... [--out DIR]",
       "Theorem 2: identical tokens through every layer; spread of the hidden states and PI accuracy",
       {{"run", "DIR", "", "a run directory (encoder or txl; repeatable)"},
        {"repro", "DIR", "", "every run under DIR/runs/ (a 'urpe repro' or 'urpe demo' directory)"},
        {"preset", "NAME", "", "a freshly initialised (untrained) model of this preset"},
        {"pe", "LIST", "", "with --preset: one model per positional encoding, e.g. none,ape,rpe,urpe"},
        {"set", "KEY=VALUE", "", "with --preset: override one config key (repeatable)"},
        {"tokens", "N", "64", "token values probed: all of them when vocab <= N, else a seeded sample of N"},
        {"seed", "N", "1", "seed of that sample"},
        {"out", "DIR", "runs/theory", "writes DIR/probe.json and DIR/plots/probe_spread.png"}},
       run_theory_probe, "",
       "For each model and layer: spread = max_{i,j} |h_i - h_j| / mean_i |h_i| over sequences of n identical\n"
       "tokens (layer 0 = the input to block 1), and the position-identification accuracy on them.\n"
       "Theorem 2: for noPE and RPE the spread is 0 up to float rounding (<= 1e-5) at every layer and the\n"
       "accuracy is at most 1/n; APE and a trained URPE are not bound by it.\n"});
  theory.subcommands.push_back(
      {"theory construction", "theory construction [--n N] [--c SPEC] [--out DIR]",
       "Proposition 4: the explicit URPE layer whose row sums are (1, (n-1)/n, ..., 1/n)",
       {{"n", "N", "8", "sequence length", {1, 4096}},
        {"c", "SPEC", "upper", "the Toeplitz C: upper, ones, linear:A, random[:SEED] or a file of 2n - 1 numbers"},
        {"out", "DIR", "runs/theory", "writes DIR/construction.json and DIR/plots/construction.png"}},
       run_theory_construction, "",
       "Builds one attention layer with the engine's SelfAttention and URPE core: W_Q = W_K = 0, B = 0, C the\n"
       "upper-triangular ones, W_V = W_O = I, and prints A·1 beside the closed form (n - i)/n, the layer's\n"
       "output for identical tokens, and A·1 with C = 1 (all ones: RPE). --c puts your own C in the layer,\n"
       "c at the offsets j - i = -(n-1) ... n-1: upper (Proposition 4's), ones (RPE), linear:A (1 + A(j - i)/(n - 1)),\n"
       "random[:SEED] (uniform in [0, 2]) or FILE (2n - 1 numbers, offset -(n-1) first); the report then says\n"
       "whether it still gives every position its own output, and which two positions come closest.\n"});
  theory.subcommands.push_back(
      {"theory rowsums", "theory rowsums --run DIR [--tokens N] [--sequences N] | --c SPEC [--n N] [--out DIR]",
       "row sums A·1 of a trained URPE encoder per layer and head, and C's prediction (1/n) sum_j C[i,j]",
       {{"run", "DIR", "", "a run directory of an encoder with pe = urpe"},
        {"c", "SPEC", "", "instead of --run: a C of your own (as in theory construction), its v_i and c_window.png"},
        {"n", "N", "32", "with --c: sequence length", {1, 4096}},
        {"tokens", "N", "64", "identical-token sequences: every token value when vocab <= N, else a sample of N"},
        {"sequences", "N", "256", "sequences of the run's task (fresh draws)"},
        {"seed", "N", "1", "seed of the token sample and the task sequences"},
        {"out", "DIR", "runs/theory", "writes DIR/rowsums.json, DIR/plots/rowsums_head<h>.png and DIR/plots/c_window.png"}},
       run_theory_rowsums, "",
       "With --c the command needs no run: it prints v_i = (1/n) sum_j c[j - i] per position (the row sums under a\n"
       "uniform softmax), says whether every v_i differs, and draws c against the offset beside v_i.\n"});
  theory.subcommands.push_back(
      {"theory denominator", "theory denominator [--preset NAME] [--seeds K] [--set KEY=VALUE]... [--out DIR]",
       "train URPE next to attention without the softmax denominator (attention_norm = exp)",
       {{"preset", "NAME", "pi-tiny", "an encoder preset"},
        {"seeds", "K", "3", "seeds per variant", {1, 100}},
        {"set", "KEY=VALUE", "", "override one config key in every run (repeatable; not pe, attention_norm, seed)"},
        {"out", "DIR", "runs/theory/denominator", "runs/, denominator.md, denominator.json, plots/denominator_loss.png"},
        {"quiet", "", "", "no progress output"}},
       run_theory_denominator, "",
       "Variants: urpe-softmax (the paper), urpe-exp (A = exp(S/sqrt(dh) + B) * C, no denominator) and rpe-exp\n"
       "(no C either). Reports each run's validation accuracy, the first step with a non-finite training loss\n"
       "(the run stops there) and the largest loss spike (rise over the lowest loss of the 20 steps before).\n"});
  table.push_back(theory);

  table.push_back(
      {"analyze",
       "analyze --run DIR | --compare DIR [DIR]... --out OUT [--contexts C] [--layers LIST] [--data split|random] "
       "[--save-hidden] [--overwrite]",
       "where position lives in the hidden states: the position/context decomposition per layer",
       {{"run", "DIR", "", "a run directory (encoder or txl)"},
        {"compare", "DIR", "", "runs side by side: each DIR an 'urpe analyze' output, a run or a repro directory"},
        {"out", "DIR", "", "writes OUT/analysis.json, OUT/analysis.md, OUT/decomposition.safetensors and OUT/plots/"},
        {"contexts", "C", "256", "contexts C (encoder: fresh task sequences; txl: corpus windows)", {2, 65536}},
        {"layers", "LIST", "all", "the layers analysed, e.g. 0,2,4-6 (0 = input to block 1, L = last block's output)"},
        {"data", "KIND", "split", "split: the run's own data (task sequences, corpus windows); random: i.i.d. uniform tokens"},
        {"split", "NAME", "valid", "txl: the corpus split the windows come from (train, valid or test)"},
        {"save-hidden", "", "", "also write the analysed states, OUT/hidden.safetensors (for tools/analyze_reference.py)"},
        {"seed", "N", "1", "seed of the sequences, the window offsets and the Gaussian baseline", {0, 2147483647}},
        {"solver", "NAME", "lapack", "eigensolver: lapack (OpenBLAS's dsyev) or jacobi (the fallback without it)"},
        {"overwrite", "", "", "replace an analysis already in OUT"}},
       run_analyze, "",
       "Per layer (0 = input to block 1), with mu = mean h, pos_t = mean_c h - mu, ctx_c = mean_t h - mu,\n"
       "resid = h - mu - pos_t - ctx_c: the variance shares of |h - mu|^2 (and the ANOVA identity's error),\n"
       "singular values of P = [pos_1 .. pos_T], stable rank, the rank holding 90% of the energy, the\n"
       "relative norm sqrt(C) s1(P) / s1(h - mu), the smoothness E10 (DCT energy of the Gram matrix of\n"
       "the unit pos_t), the incoherence |cos(pos_t, ctx_c)| beside Gaussian vectors, and for the embedded\n"
       "corpus the mean cos of ctx within and between topics (each source in the corpus's sources.tsv:\n"
       "the six novels and the Bible; without it Austen and the Bible found from the text).\n"
       "Encoders: each head's attention logits of block l split exactly into pos.pos, pos.ctx, ctx.pos and\n"
       "ctx.ctx (the input of W_Q/W_K written as (mu + pos) + cvec), their shares, how often the pos.pos row\n"
       "maximum is on the diagonal, and for URPE heads pictures of B, P, C, A = P * C and A.1.\n"
       "decomposition.safetensors holds layer<l>.mu, .pos (T x d) and .ctx (C x d) per analysed layer;\n"
       "with --compare the tensor files are named <file>_<run>.safetensors. Graphormer runs are not\n"
       "supported (atoms have no sequence positions).\n",
       32});
  return table;
}

}  // namespace urpe::cli
