// The presets of the paper's experiments (see paper_presets.h): Appendix C's values, and the
// official code's where the appendix is silent, each named in the description.
#include "train/config/paper_presets.h"

namespace urpe {

namespace {

// C.1: 3 layers, 12 heads, d = 768; Adam (0.9, 0.999, 1e-8) — fixed in train/optim/optimizer.h; peak lr
// 7e-5 after a 6K-step warm-up, then linear to 0; 40K steps of batch 512; dropout, clipping and
// weight decay 0; n = 128. Silent there, from lsj2408/URPE simulate_*.sh and fairseq's RoBERTa
// base: d_ff 3072, init N(0, 0.02), 6,400 validation sequences, the task protocol. The batch of
// 512 trains as 4 micro-batches of 128 (7 GiB of activations each, docs/synthetic_encoder.md).
constexpr const char* kSyntheticPaper =
    "task_protocol = official\nseq_len = 128\nvocab = 1000\nlayers = 3\nd_model = 768\nheads = 12\n"
    "d_ff = 3072\ninit_std = 0.02\ndropout = 0\nweight_decay = 0\nclip = 0\nbatch = 512\naccum_steps = 4\n"
    "steps = 40000\nlr = 7e-5\nwarmup = 6000\neval_every = 2000\nvalid_size = 6400\n";

// Transformer-XL base as the official PyTorch script trains it (kimiyoung/transformer-xl
// pytorch/run_wt103_base.sh, docs/transformer_xl.md#presets): every value C.2 gives (16 layers,
// 10 heads, d = 410, d_ff 2100, dropout 0.1, lr 2.5e-4, 200K steps) is already the script's; C.2
// adds weight decay 0.01, which the script does not use.
constexpr const char* kTxlBase =
    "model = txl\ncorpus = wikitext-103\nlayers = 16\nd_model = 410\nheads = 10\nd_head = 41\n"
    "d_inner = 2100\ndropout = 0.1\ndropatt = 0.0\ntgt_len = 150\nmem_len = 150\nclamp_len = -1\n"
    "cutoffs = 20000,40000,200000\ninit_std = 0.02\nbatch = 60\nlr = 2.5e-4\nschedule = cosine\n"
    "warmup = 0\nsteps = 200000\nclip = 0.25\nseed = 1111\neval_every = 4000\n"
    "eval_batch = 10\neval_tgt_len = 64\neval_mem_len = 640\neval_clamp_len = 400\nsame_length = true\n";

// C.3.1 (ZINC): 12 layers, d = d_ffn = 80, heads 8 (the text's 32 cannot divide 80: paper_presets.h),
// Adam (0.9, 0.999, 1e-8), a 60K-step warm-up then linear decay to 0, 600K steps (subset) or 800K
// (full). From C.3.1's sets: batch 256 of {128, 256, 512}, dropout 0.1 of {0, 0.1} and weight
// decay 0.01 of {0, 0.01} (the GV1 ZINC script's values, which lie in the sets), lr 4e-4 of
// {4e-4, 5e-4} (the script's 2e-4 does not; the smaller of the two). Silent there, from the GV1
// ZINC script (microsoft/Graphormer examples/benchmarking-gnns @1fdec9a, docs/graphormer.md): the
// attention and input dropouts 0.1, 20 hops of multi-hop edge encoding, the ZINC embedding tables.
constexpr const char* kZincModel =
    "model = graphormer\nlayers = 12\nd_model = 80\nd_ffn = 80\nheads = 8\nmulti_hop_max_dist = 20\n"
    "dropout = 0.1\nattention_dropout = 0.1\ninput_dropout = 0.1\nbatch = 256\nlr = 4e-4\nwarmup = 60000\n"
    "end_lr = 0\nweight_decay = 0.01\nclip = 0\neval_every = 2000\n";

// The GV1 ZINC script's own schedule (not the paper's): batch 256, 400K steps, warm-up 40K, lr 2e-4
// decaying to 1e-9, AdamW weight decay 0.01, no clipping.
constexpr const char* kZincGv1 =
    "model = graphormer\nlayers = 12\nd_model = 80\nd_ffn = 80\nheads = 8\nmulti_hop_max_dist = 20\n"
    "dropout = 0.1\nattention_dropout = 0.1\ninput_dropout = 0.1\nbatch = 256\nsteps = 400000\nwarmup = 40000\n"
    "lr = 2e-4\nend_lr = 1e-9\nweight_decay = 0.01\nclip = 0\neval_every = 2000\n";

// C.3.2 (PCQM4M): 6 layers, 32 heads, d = d_ffn = 512, batch 512, Adam (0.9, 0.999, 1e-8), lr 3e-4,
// 60K-step warm-up then linear to 0 over 1M steps, dropouts input 0.0 / attention 0.1 / hidden 0.0,
// weight decay 0. Silent there, from the GV1 PCQM4M script (examples/ogb-lsc @1fdec9a): gradient
// clipping 5.0, 5 hops of multi-hop edge encoding.
constexpr const char* kPcqm4m =
    "model = graphormer\nlayers = 6\nd_model = 512\nd_ffn = 512\nheads = 32\nmulti_hop_max_dist = 5\n"
    "input_dropout = 0\nattention_dropout = 0.1\ndropout = 0\nbatch = 512\nlr = 3e-4\nwarmup = 60000\n"
    "steps = 1000000\nend_lr = 0\nweight_decay = 0\nclip = 5\neval_every = 10000\n";

// C.4: "the BERT-base setting using the same hyper-parameters", 1M iterations, RPE the T5 version
// (bucketed, as UniLMv2). BERT-base's values are Devlin et al. 2019 (§3.1, Appendix A.2;
// google-research/bert): 12 layers, d = 768, 12 heads, d_ff 3072, dropout 0.1, batch 256 sequences
// of 512 tokens, lr 1e-4, 10K warm-up then linear decay, weight decay 0.01, 15% masking, a 30,522-id
// vocabulary. Here: URPE's C is the Toeplitz table of §4.2 (urpe_kind unique); the batch trains as
// 8 micro-batches of 32 (a memory choice, the same step).
constexpr const char* kMlmPaper =
    "task = mlm\nseq_len = 512\nvocab = 30522\nmask_prob = 0.15\nlayers = 12\nd_model = 768\nheads = 12\n"
    "d_ff = 3072\ndropout = 0.1\ninit_std = 0.02\nrpe_kind = bucketed\nurpe_kind = unique\nbatch = 256\n"
    "accum_steps = 8\nsteps = 1000000\nlr = 1e-4\nwarmup = 10000\nweight_decay = 0.01\nclip = 0\n"
    "eval_every = 10000\nvalid_size = 2048\n";

std::string with(const char* base, const std::string& extra) { return std::string(base) + extra; }

}  // namespace

const std::vector<Preset>& paper_presets() {
  static const std::vector<Preset> list = {
      {"pi-paper",
       "position identification as Appendix C.1 trains it: n = 128, V = 1000 (C.1's V is one of 10, 1000, 10000; "
       "`repro synthetic --scale paper` runs all three), 3 layers, 12 heads, d = 768, Adam, lr 7e-5, 6K warm-up, "
       "linear to 0, 40K steps of batch 512 (4 micro-batches of 128), no dropout, clipping or weight decay; "
       "d_ff 3072, init 0.02, 6,400 validation sequences and the task protocol from the official lsj2408/URPE "
       "simulate_*.sh",
       with(kSyntheticPaper, "task = pi\n")},
      {"etp-paper", "even token prediction as Appendix C.1 trains it (the values of pi-paper)",
       with(kSyntheticPaper, "task = etp\n")},
      {"txl-base", "WikiText-103 Transformer-XL base as the official script trains it (kimiyoung/transformer-xl "
                   "run_wt103_base.sh, docs/transformer_xl.md#presets, with the official final evaluation); "
                   "corpus = the wikitext-103 directory (wiki.*.tokens)",
       with(kTxlBase, "weight_decay = 0\n")},
      {"txl-base-paper", "Transformer-XL base as Appendix C.2 trains it (Table 1): 16 layers, 10 heads, d = 410, "
                         "d_ff 2100, dropout 0.1, weight decay 0.01 (decoupled), Adam, lr 2.5e-4, 200K steps; the rest "
                         "(batch 60, segments 150, memory 150, cosine schedule, clip 0.25, adaptive softmax) from the "
                         "official run_wt103_base.sh. §5.4 Table 4: the same at L = 4, 8, 16 (repro lm --scale paper)",
       with(kTxlBase, "weight_decay = 0.01\n")},
      {"graphormer-slim", "Graphormer on the ZINC subset as Appendix C.3.1 trains it (Table 2): 12 layers, "
                          "d = ffn = 80, 8 heads (C.3.1 prints 32, which cannot divide 80: docs/reproduce.md), Adam, "
                          "60K warm-up, linear to 0 at 600K steps; from C.3.1's sets batch 256, lr 4e-4, dropout 0.1, "
                          "weight decay 0.01 (repro molecules --grid paper runs them all); attention and input dropout "
                          "0.1 and 20 hops from the official GV1 ZINC script",
       with(kZincModel, "steps = 600000\n")},
      {"graphormer-slim-urpe", "graphormer-slim + URPE (Appendix C.3.1, Table 2)", with(kZincModel, "steps = 600000\npe = urpe\n")},
      {"graphormer-slim-full", "graphormer-slim on ZINC full (250K molecules) as Appendix C.3.1 trains it: 800K steps "
                               "(set dataset to the full ZINC file, docs/data.md)",
       with(kZincModel, "steps = 800000\n")},
      {"graphormer-slim-full-urpe", "graphormer-slim-full + URPE (Appendix C.3.1, Table 2 ZINC-Full)",
       with(kZincModel, "steps = 800000\npe = urpe\n")},
      {"graphormer-slim-gv1", "Graphormer-slim with the official GV1 ZINC script's schedule instead of the paper's "
                              "(microsoft/Graphormer examples/benchmarking-gnns: batch 256, 400K steps, warm-up 40K, "
                              "lr 2e-4 to 1e-9, weight decay 0.01; docs/graphormer.md#configurations)",
       kZincGv1},
      {"graphormer-pcqm4m", "Graphormer on PCQM4M as Appendix C.3.2 trains it (Table 3): 6 layers, 32 heads, "
                            "d = ffn = 512, batch 512, Adam, lr 3e-4, 60K warm-up, linear to 0 at 1M steps, dropout "
                            "input 0 / attention 0.1 / hidden 0, weight decay 0; clipping 5.0 and 5 hops from the "
                            "official GV1 PCQM4M script (set dataset to the PCQM4M CSV, read with OGB's features: docs/data.md)",
       kPcqm4m},
      {"graphormer-pcqm4m-urpe", "graphormer-pcqm4m + URPE (Appendix C.3.2, Table 3)", with(kPcqm4m, "pe = urpe\n")},
      {"mlm-paper", "masked-LM pre-training as Appendix C.4 runs it: BERT-base (12 layers, d = 768, 12 heads, "
                    "d_ff 3072, dropout 0.1, 512 tokens, batch 256 as 8 micro-batches, lr 1e-4, 10K warm-up, linear "
                    "decay, weight decay 0.01, 15% masking, 30,522 ids; Devlin et al. 2019) for 1M steps, T5 "
                    "(bucketed) RPE as UniLMv2; set pe to ape+rpe, rpe or urpe and corpus to a WikiText-format "
                    "directory (repro pretrain --scale paper runs the three)",
       kMlmPaper},
  };
  return list;
}

std::vector<PaperChoice> paper_selection(const std::string& preset) {
  if (paper_section_of(preset) != "C.3.1") return {};
  return {
      {"batch", {"128", "256", "512"}, "256", "the official GV1 ZINC script's batch"},
      {"lr", {"4e-4", "5e-4"}, "4e-4", "the smaller; the GV1 script's 2e-4 is not in the set"},
      {"dropout", {"0", "0.1"}, "0.1", "the GV1 script's dropout_rate"},
      {"weight_decay", {"0", "0.01"}, "0.01", "the GV1 script's weight decay (AdamW)"},
  };
}

std::string paper_section_of(const std::string& preset) {
  if (preset == "pi-paper" || preset == "etp-paper") return "C.1";
  if (preset == "txl-base-paper") return "C.2";
  if (preset.rfind("graphormer-slim", 0) == 0 && preset.find("gv1") == std::string::npos) return "C.3.1";
  if (preset.rfind("graphormer-pcqm4m", 0) == 0) return "C.3.2";
  if (preset == "mlm-paper") return "C.4";
  return "";
}

}  // namespace urpe
