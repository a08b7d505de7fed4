// The presets of the paper's experiments (see paper_presets.h): Appendix C's values, and the
// official code's where the appendix is silent, each named in the description.
#include "train/config/paper_presets.h"

namespace urpe {

namespace {

// Each line is "key = value  # source" (train/config/config_sources.h): `paper SECTION` for the
// paper's text, `script FILE` for the official code where the paper is silent or defers to it,
// `urpe:` for the preset's own choice with its reason. `--dry-run` prints them, key by key.

// C.1 (synthetic PI and ETP). The official scripts are lsj2408/URPE's simulate_{noPE,RPE,URPE}.sh.
constexpr const char* kSyntheticPaper =
    "model = encoder  # paper C.1: the vanilla Transformer (encoder), as RoBERTa-base's post-LN blocks in the "
    "official code\n"
    "task_protocol = official  # script simulate_URPE.sh: the fairseq synthetic_task generator, criterion and "
    "RoBERTa head (C.1 describes the tasks only)\n"
    "seq_len = 128  # paper C.1: sequence length 128 (Figure 3: 256 and 512, --lengths)\n"
    "vocab = 1000  # paper C.1: V from {10, 1000, 10000}; 1000 is simulate_URPE.sh's VOCAB_SIZE (repro --scale "
    "paper runs all three)\n"
    "layers = 3  # paper C.1: 3 layers\n"
    "d_model = 768  # paper C.1: hidden dimension 768\n"
    "heads = 12  # paper C.1: 12 attention heads\n"
    "d_ff = 3072  # script simulate_URPE.sh: --arch roberta_base (C.1 gives no feed-forward width)\n"
    "init_std = 0.02  # script simulate_URPE.sh: roberta_base's init_bert_params, N(0, 0.02)\n"
    "rpe_kind = unique  # script simulate_URPE.sh: --rel-pos-unique, one bias per distance and head; C.1 says "
    "T5-style RPE, whose own table is bucketed (rpe_kind = bucketed)\n"
    "urpe_kind = unique  # script simulate_URPE.sh: --ur-attn-unique, the Toeplitz C of §4.2\n"
    "dropout = 0  # paper C.1: dropout 0.0\n"
    "attention_dropout = 0  # script simulate_URPE.sh: --attention-dropout 0.0 (C.1: dropout 0.0)\n"
    "weight_decay = 0  # paper C.1: weight decay 0.0\n"
    "clip = 0  # paper C.1: gradient clip norm 0.0\n"
    "batch = 512  # paper C.1: batch size 512 (simulate_URPE.sh: 32 per GPU x update-freq 4 x 4 GPUs)\n"
    "accum_steps = 4  # urpe: 4 micro-batches of 128, so that one micro-batch's activations (7 GiB) fit a GPU; "
    "the same step\n"
    "steps = 40000  # paper C.1: 40K steps\n"
    "lr = 7e-5  # paper C.1: peak learning rate 7e-5\n"
    "warmup = 6000  # paper C.1: 6K-step warm-up, then linear decay to zero\n"
    "eval_every = 2000  # urpe: a validation every 2,000 steps (20 points on the curve)\n"
    "valid_size = 6400  # script simulate_URPE.sh: --dataset-valid-size 6400\n";

// C.2 (Transformer-XL base on WikiText-103). Where C.2 is silent the values are the official
// kimiyoung/transformer-xl pytorch/run_wt103_base.sh and the train.py / eval.py defaults it uses
// (docs/transformer_xl.md#presets); every value C.2 gives but the weight decay is the script's too.
constexpr const char* kTxlBase =
    "model = txl  # paper C.2: Transformer-XL base\n"
    "corpus = wikitext-103  # paper C.2: WikiText-103 (the tokenised wikitext-103-v1 directory, docs/data.md)\n"
    "layers = 16  # paper C.2: 16 decoder layers\n"
    "d_model = 410  # paper C.2: hidden dimension 410 (§5.2; C.2's text prints 41)\n"
    "heads = 10  # paper C.2: 10 attention heads\n"
    "d_head = 41  # script run_wt103_base.sh: --d_head 41\n"
    "d_inner = 2100  # paper C.2: feed-forward dimension 2100\n"
    "dropout = 0.1  # paper C.2: dropout 0.1\n"
    "dropatt = 0.0  # script run_wt103_base.sh: --dropatt 0.0\n"
    "tgt_len = 150  # script run_wt103_base.sh: --tgt_len 150\n"
    "mem_len = 150  # script run_wt103_base.sh: --mem_len 150\n"
    "clamp_len = -1  # script train.py: --clamp_len default -1 (no clamp)\n"
    "cutoffs = 20000,40000,200000  # script train.py: the wt103 adaptive-softmax cutoffs (--adaptive)\n"
    "init_std = 0.02  # script train.py: --init_std default 0.02\n"
    "batch = 60  # script run_wt103_base.sh: --batch_size 60\n"
    "lr = 2.5e-4  # paper C.2: peak learning rate 2.5e-4\n"
    "schedule = cosine  # script train.py: --scheduler default cosine (C.2 gives no schedule)\n"
    "warmup = 0  # script run_wt103_base.sh: --warmup_step 0\n"
    "steps = 200000  # paper C.2: 200K steps\n"
    "clip = 0.25  # script train.py: --clip default 0.25\n"
    "seed = 1111  # script train.py: --seed default 1111\n"
    "eval_every = 4000  # script train.py: --eval-interval default 4000\n"
    "eval_batch = 10  # script eval.py: --batch_size default 10\n"
    "eval_tgt_len = 64  # script run_wt103_base.sh eval: --tgt_len 64\n"
    "eval_mem_len = 640  # script run_wt103_base.sh eval: --mem_len 640\n"
    "eval_clamp_len = 400  # script run_wt103_base.sh eval: --clamp_len 400\n"
    "same_length = true  # script run_wt103_base.sh eval: --same_length\n";

// C.3.1 (Graphormer on ZINC). The official code is Graphormer's paper release (GV1,
// microsoft/Graphormer @1fdec9a): examples/benchmarking-gnns/README.md (the ZINC script) and
// graphormer/model.py. heads and max_spd: docs/reproduce.md#zinc-heads-and-the-size-of-c.
constexpr const char* kZincModel =
    "model = graphormer  # paper C.3.1: Graphormer\n"
    "layers = 12  # paper C.3.1: 12 layers\n"
    "d_model = 80  # paper C.3.1: hidden dimension 80\n"
    "d_ffn = 80  # paper C.3.1: feed-forward dimension 80\n"
    "heads = 8  # urpe: C.3.1 prints 32 heads, which cannot split d = 80 and which Table 2's parameter counts "
    "rule out; 8 is the GV1 ZINC script's --num_heads and the only count that gives Table 2's 489,321\n"
    "max_spd = 298  # urpe: 302 C entries per head (distances 0..298 and 3 graph-token entries), so that URPE "
    "adds Table 2's 491,737 - 489,321 = 2,416 = 8 x 302 parameters\n"
    "embedding_tables = zinc  # script model.py: GV1's ZINC tables (atoms 64, edges 64, spatial 40, degree 64, "
    "40 hops)\n"
    "multi_hop_max_dist = 20  # script benchmarking-gnns/README.md: --multi_hop_max_dist 20\n"
    "init_std = 0.02  # script model.py: init_params, embeddings N(0, 0.02), linears N(0, 0.02/sqrt(layers))\n"
    "dropout = 0.1  # paper C.3.1: dropout from {0.0, 0.1}; 0.1 is the GV1 ZINC script's --dropout_rate\n"
    "attention_dropout = 0.1  # script model.py: --attention_dropout_rate default 0.1 (C.3.1 gives one dropout)\n"
    "input_dropout = 0.1  # script model.py: --intput_dropout_rate default 0.1\n"
    "batch = 256  # paper C.3.1: batch from {128, 256, 512}; 256 is the GV1 ZINC script's --batch_size\n"
    "lr = 4e-4  # paper C.3.1: peak learning rate from {4e-4, 5e-4}; urpe takes the smaller (the script's 2e-4 "
    "is in neither)\n"
    "warmup = 60000  # paper C.3.1: 60K-step warm-up\n"
    "end_lr = 0  # paper C.3.1: then linear decay to zero\n"
    "weight_decay = 0.01  # paper C.3.1: weight decay from {0.0, 0.01}; 0.01 is the GV1 script's --weight_decay\n"
    "decay_biases_and_norms = true  # script model.py: torch.optim.AdamW(self.parameters()), every parameter "
    "decayed\n"
    "clip = 0  # script benchmarking-gnns/README.md: no --gradient_clip_val, PyTorch Lightning's default 0 (no "
    "clipping); C.3.1 gives none\n"
    "eval_every = 2000  # urpe: a validation every 2,000 steps (the script validates every 10 epochs)\n";

// The GV1 ZINC script's own schedule (not the paper's).
constexpr const char* kZincGv1 =
    "model = graphormer  # script benchmarking-gnns/README.md: the GV1 ZINC run\n"
    "layers = 12  # script benchmarking-gnns/README.md: --n_layers 12\n"
    "d_model = 80  # script benchmarking-gnns/README.md: --hidden_dim 80\n"
    "d_ffn = 80  # script benchmarking-gnns/README.md: --ffn_dim 80\n"
    "heads = 8  # script benchmarking-gnns/README.md: --num_heads 8\n"
    "embedding_tables = zinc  # script model.py: GV1's ZINC tables\n"
    "multi_hop_max_dist = 20  # script benchmarking-gnns/README.md: --multi_hop_max_dist 20\n"
    "dropout = 0.1  # script benchmarking-gnns/README.md: --dropout_rate 0.1\n"
    "attention_dropout = 0.1  # script model.py: --attention_dropout_rate default 0.1\n"
    "input_dropout = 0.1  # script model.py: --intput_dropout_rate default 0.1\n"
    "batch = 256  # script benchmarking-gnns/README.md: --batch_size 256\n"
    "steps = 400000  # script benchmarking-gnns/README.md: tot_updates 400000\n"
    "warmup = 40000  # script benchmarking-gnns/README.md: warmup_updates 40000\n"
    "lr = 2e-4  # script benchmarking-gnns/README.md: --peak_lr 2e-4\n"
    "end_lr = 1e-9  # script model.py: --end_lr default 1e-9\n"
    "weight_decay = 0.01  # script model.py: --weight_decay default 0.01 (AdamW)\n"
    "clip = 0  # script benchmarking-gnns/README.md: no --gradient_clip_val (no clipping)\n"
    "eval_every = 2000  # urpe: a validation every 2,000 steps\n";

// C.3.2 (Graphormer on PCQM4M, Table 3). Its baseline row (0.1264) is GV1's Graphormer-Small
// (examples/ogb-lsc/README.md: 12.5M parameters, valid MAE 0.1264), so the model is that one, with
// GV1's OGB tables: docs/reproduce.md#pcqm4m-53-appendix-c32-table-3.
constexpr const char* kPcqm4m =
    "model = graphormer  # paper C.3.2: Graphormer\n"
    "layers = 6  # paper C.3.2: 6 layers\n"
    "d_model = 512  # paper C.3.2: hidden dimension 512\n"
    "d_ffn = 512  # paper C.3.2: feed-forward dimension 512\n"
    "heads = 32  # paper C.3.2: 32 attention heads\n"
    "embedding_tables = ogb  # script model.py: GV1's OGB tables (atoms 9 x 512 + 1, edges 3 x 512 + 1, spatial "
    "512, degree 512, 128 hops), Graphormer-Small's, Table 3's baseline: 12,550,721 parameters\n"
    "multi_hop_max_dist = 5  # script ogb-lsc/README.md: --multi_hop_max_dist 5\n"
    "init_std = 0.02  # script model.py: init_params\n"
    "input_dropout = 0  # paper C.3.2: input embedding dropout 0.0\n"
    "attention_dropout = 0.1  # paper C.3.2: attention dropout 0.1\n"
    "dropout = 0  # paper C.3.2: hidden-representation dropout 0.0\n"
    "batch = 512  # paper C.3.2: batch size 512\n"
    "lr = 3e-4  # paper C.3.2: peak learning rate 3e-4\n"
    "warmup = 60000  # paper C.3.2: 60K-step warm-up\n"
    "steps = 1000000  # paper C.3.2: 1M steps\n"
    "end_lr = 0  # paper C.3.2: then linear decay to zero\n"
    "weight_decay = 0  # paper C.3.2: weight decay 0.0\n"
    "clip = 5  # script ogb-lsc/README.md: --gradient_clip_val 5.0\n"
    "eval_every = 10000  # urpe: a validation every 10,000 steps\n";

// C.4 (masked-LM pre-training): "the BERT-base setting using the same hyper-parameters", 1M
// iterations, T5's RPE as UniLMv2. BERT-base's values are Devlin et al. 2019 (§3.1, Appendix A.2)
// and google-research/bert (bert_config.json of BERT-base, optimization.py).
constexpr const char* kMlmPaper =
    "model = encoder  # paper C.4: BERT-base, a post-LN Transformer encoder\n"
    "task = mlm  # paper C.4: masked language modelling\n"
    "seq_len = 512  # paper C.4 (BERT-base, Devlin et al. A.2): 512 tokens (BERT trains 90% of its steps at 128 "
    "first; urpe trains every step at 512)\n"
    "vocab = 30522  # paper C.4 (BERT-base): 30,522 WordPiece ids (urpe's word vocabulary stands in)\n"
    "mask_prob = 0.15  # paper C.4 (BERT §3.1): 15% of the positions masked\n"
    "layers = 12  # paper C.4 (BERT-base): 12 layers\n"
    "d_model = 768  # paper C.4 (BERT-base): hidden size 768\n"
    "heads = 12  # paper C.4 (BERT-base): 12 attention heads\n"
    "d_ff = 3072  # paper C.4 (BERT-base): intermediate size 3072\n"
    "dropout = 0.1  # paper C.4 (BERT-base): hidden_dropout_prob 0.1\n"
    "attention_dropout = 0.1  # script bert_config.json: attention_probs_dropout_prob 0.1\n"
    "init_std = 0.02  # script bert_config.json: initializer_range 0.02\n"
    "rpe_kind = bucketed  # paper C.4: the T5 relative position bias, as UniLMv2 (32 buckets)\n"
    "urpe_kind = unique  # paper §4.2: URPE's Toeplitz C\n"
    "batch = 256  # paper C.4 (BERT A.2): 256 sequences per batch\n"
    "accum_steps = 8  # urpe: 8 micro-batches of 32, so that one fits a GPU; the same step\n"
    "steps = 1000000  # paper C.4: 1M iterations\n"
    "lr = 1e-4  # paper C.4 (BERT A.2): learning rate 1e-4\n"
    "warmup = 10000  # paper C.4 (BERT A.2): 10K warm-up steps, then linear decay\n"
    "weight_decay = 0.01  # paper C.4 (BERT A.2): L2 weight decay 0.01\n"
    "decay_biases_and_norms = false  # script optimization.py: exclude_from_weight_decay LayerNorm and bias\n"
    "clip = 1  # script optimization.py: clip_by_global_norm(grads, clip_norm=1.0)\n"
    "eval_every = 10000  # urpe: a validation every 10,000 steps\n"
    "valid_size = 2048  # urpe: 2,048 validation windows\n";

constexpr const char* kZincSubsetSteps = "steps = 600000  # paper C.3.1: 600K steps on ZINC-Subset\n";
constexpr const char* kZincFullSteps = "steps = 800000  # paper C.3.1: 800K steps on ZINC-Full\n";
constexpr const char* kUrpe = "pe = urpe  # paper §5.3: Graphormer + URPE-based attention\n";

std::string with(const char* base, const std::string& extra) { return std::string(base) + extra; }

}  // namespace

const std::vector<Preset>& paper_presets() {
  static const std::vector<Preset> list = {
      {"pi-paper",
       "position identification as Appendix C.1 trains it: n = 128, V = 1000 (C.1's V is one of 10, 1000, 10000; "
       "`repro synthetic --scale paper` runs all three), 3 layers, 12 heads, d = 768, Adam, lr 7e-5, 6K warm-up, "
       "linear to 0, 40K steps of batch 512 (4 micro-batches of 128), no dropout, clipping or weight decay; "
       "d_ff 3072, init 0.02, one bias per distance (C.1's T5-style RPE as the script runs it), 6,400 validation "
       "sequences and the task protocol from the official lsj2408/URPE simulate_*.sh (--dry-run: every value's source)",
       with(kSyntheticPaper, "task = pi  # paper C.1: position identification (§5.1)\n")},
      {"etp-paper", "even token prediction as Appendix C.1 trains it (the values of pi-paper)",
       with(kSyntheticPaper, "task = etp  # paper C.1: even token prediction (§5.1)\n")},
      {"txl-base", "WikiText-103 Transformer-XL base as the official script trains it (kimiyoung/transformer-xl "
                   "run_wt103_base.sh, docs/transformer_xl.md#presets, with the official final evaluation); "
                   "corpus = the wikitext-103 directory (wiki.*.tokens)",
       with(kTxlBase, "weight_decay = 0  # script run_wt103_base.sh: no weight decay\n")},
      {"txl-base-paper", "Transformer-XL base as Appendix C.2 trains it (Table 1): 16 layers, 10 heads, d = 410, "
                         "d_ff 2100, dropout 0.1, weight decay 0.01 (decoupled), Adam, lr 2.5e-4, 200K steps; the rest "
                         "(batch 60, segments 150, memory 150, cosine schedule, clip 0.25, adaptive softmax) from the "
                         "official run_wt103_base.sh. §5.4 Table 4: the same at L = 4, 8, 16 (repro lm --scale paper)",
       with(kTxlBase, "weight_decay = 0.01  # paper C.2: weight decay 0.01 (decoupled, AdamW)\n")},
      {"graphormer-slim", "Graphormer on the ZINC subset as Appendix C.3.1 trains it (Table 2): 12 layers, "
                          "d = ffn = 80, 8 heads (C.3.1 prints 32, which cannot divide 80: docs/reproduce.md), Adam, "
                          "60K warm-up, linear to 0 at 600K steps; from C.3.1's sets batch 256, lr 4e-4, dropout 0.1, "
                          "weight decay 0.01 (repro molecules --grid paper runs them all); attention and input dropout "
                          "0.1, 20 hops and no clipping from the official GV1 ZINC script; a 302-entry C per head "
                          "(Table 2's +2,416 parameters)",
       with(kZincModel, kZincSubsetSteps)},
      {"graphormer-slim-urpe", "graphormer-slim + URPE (Appendix C.3.1, Table 2)", with(kZincModel, std::string(kZincSubsetSteps) + kUrpe)},
      {"graphormer-slim-full", "graphormer-slim on ZINC full (250K molecules) as Appendix C.3.1 trains it: 800K steps "
                               "(set dataset to the full ZINC file, docs/data.md)",
       with(kZincModel, kZincFullSteps)},
      {"graphormer-slim-full-urpe", "graphormer-slim-full + URPE (Appendix C.3.1, Table 2 ZINC-Full)",
       with(kZincModel, std::string(kZincFullSteps) + kUrpe)},
      {"graphormer-slim-gv1", "Graphormer-slim with the official GV1 ZINC script's schedule instead of the paper's "
                              "(microsoft/Graphormer examples/benchmarking-gnns: batch 256, 400K steps, warm-up 40K, "
                              "lr 2e-4 to 1e-9, weight decay 0.01; docs/graphormer.md#configurations)",
       kZincGv1},
      {"graphormer-pcqm4m", "Graphormer on PCQM4M as Appendix C.3.2 trains it (Table 3): 6 layers, 32 heads, "
                            "d = ffn = 512, batch 512, Adam, lr 3e-4, 60K warm-up, linear to 0 at 1M steps, dropout "
                            "input 0 / attention 0.1 / hidden 0, weight decay 0; clipping 5.0, 5 hops and the OGB "
                            "embedding tables (12,550,721 parameters) from the official GV1 PCQM4M code (set dataset "
                            "to the PCQM4M CSV, read with OGB's features: docs/data.md)",
       kPcqm4m},
      {"graphormer-pcqm4m-urpe", "graphormer-pcqm4m + URPE (Appendix C.3.2, Table 3)", with(kPcqm4m, kUrpe)},
      {"mlm-paper", "masked-LM pre-training as Appendix C.4 runs it: BERT-base (12 layers, d = 768, 12 heads, "
                    "d_ff 3072, dropout 0.1 and attention dropout 0.1, 512 tokens, batch 256 as 8 micro-batches, "
                    "lr 1e-4, 10K warm-up, linear decay, weight decay 0.01 but not on biases and LayerNorms, "
                    "clipping 1.0, 15% masking, 30,522 ids; Devlin et al. 2019, google-research/bert) for 1M "
                    "steps, T5 (bucketed) RPE as UniLMv2; set pe to ape+rpe, rpe or urpe and corpus to a WikiText-format "
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
