// The presets of the paper's experiments against the paper's Appendix C, value by value: one
// table per preset, each row citing the section (or, where the section is silent, the official
// code) it comes from (train/config/paper_presets.h, docs/reproduce.md). Also the ZINC heads arithmetic
// of paper_presets.h, the selection sets `repro molecules --grid paper` runs, and the repro plans
// of §5.3 and §5.4.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "doctest/doctest.h"
#include "models/graphormer.h"
#include "tensor/error.h"
#include "train/families/graphormer/graphormer_config.h"
#include "train/optim/optimizer.h"
#include "train/config/paper_presets.h"
#include "train/repro/lm.h"
#include "train/repro/molecule_grid.h"
#include "train/repro/molecules.h"
#include "train/repro/pretrain.h"
#include "train/repro/synthetic.h"
#include "train/repro/table5.h"
#include "train/config/run_config.h"

using namespace urpe;

namespace {

struct Row {
  const char* key;
  const char* value;
  const char* source;  // the section of the paper, or the code where it is silent
};

// Every row of `rows` against the preset's resolved config: numbers as numbers, words as words.
void check_rows(const std::string& preset, const std::vector<Row>& rows) {
  const Config c = resolve_config(preset, "", {});
  for (const Row& row : rows) {
    INFO(preset << ": " << row.key << " = " << row.value << " (" << row.source << ")");
    char* end = nullptr;
    const double number = std::strtod(row.value, &end);
    if (*row.value != '\0' && *end == '\0') CHECK(c.get_float(row.key) == doctest::Approx(number).epsilon(1e-12));
    else CHECK(c.get_string(row.key) == row.value);
  }
}

}  // namespace

TEST_CASE("C.1: pi-paper and etp-paper are the synthetic setting of Appendix C.1") {
  const std::vector<Row> rows = {
      {"layers", "3", "C.1: 3 layers"},
      {"heads", "12", "C.1: 12 heads"},
      {"d_model", "768", "C.1: hidden dimension 768"},
      {"seq_len", "128", "C.1: sequence length 128"},
      {"vocab", "1000", "C.1: V from {10, 1000, 10000}, one documented choice (repro --scale paper runs all)"},
      {"lr", "7e-5", "C.1: peak learning rate 7e-5"},
      {"warmup", "6000", "C.1: 6K-step warm-up, then linear decay to 0 (train/loop/schedule.h)"},
      {"steps", "40000", "C.1: 40K steps"},
      {"batch", "512", "C.1: batch size 512"},
      {"dropout", "0", "C.1: dropout 0.0"},
      {"clip", "0", "C.1: gradient clip norm 0.0"},
      {"weight_decay", "0", "C.1: weight decay 0.0"},
      {"d_ff", "3072", "silent in C.1: lsj2408/URPE simulate_*.sh, fairseq RoBERTa base"},
      {"init_std", "0.02", "silent in C.1: fairseq init_bert_params"},
      {"valid_size", "6400", "silent in C.1: lsj2408/URPE simulate_*.sh"},
      {"task_protocol", "official", "silent in C.1: lsj2408/URPE SimDataset"},
  };
  check_rows("pi-paper", rows);
  check_rows("etp-paper", rows);
  CHECK(resolve_config("pi-paper", "", {}).get_string("task") == "pi");
  CHECK(resolve_config("etp-paper", "", {}).get_string("task") == "etp");
  // C.1's V and Figure 3's n: the paper-scale grid sweeps V; --lengths 256,512 fits the model.
  CHECK(synthetic_grid_for_scale("paper").vocabs == std::vector<int64_t>{10, 1000, 10000});
  for (const char* n : {"seq_len=256", "seq_len=512"}) CHECK(resolve_config("pi-paper", "", {n}).get_int("seq_len") > 128);
}

TEST_CASE("Adam's hyper-parameters are the (0.9, 0.999, 1e-8) of C.1, C.2, C.3.1 and C.3.2") {
  const AdamConfig adam;
  CHECK(adam.beta1 == doctest::Approx(0.9));
  CHECK(adam.beta2 == doctest::Approx(0.999));
  CHECK(adam.eps == doctest::Approx(1e-8));
}

TEST_CASE("C.2: txl-base-paper is Transformer-XL base as Appendix C.2 trains it; §5.4 Table 4 varies L") {
  check_rows("txl-base-paper", {
                                   {"layers", "16", "C.2: 16 decoder layers"},
                                   {"heads", "10", "C.2: 10 heads"},
                                   {"d_model", "410", "C.2: hidden dimension 410 (the text's '41')"},
                                   {"d_inner", "2100", "C.2: feed-forward dimension 2100"},
                                   {"dropout", "0.1", "C.2: dropout 0.1"},
                                   {"weight_decay", "0.01", "C.2: weight decay 0.01"},
                                   {"lr", "2.5e-4", "C.2: peak learning rate 2.5e-4"},
                                   {"steps", "200000", "C.2: 200K steps"},
                                   {"corpus", "wikitext-103", "C.2: WikiText-103"},
                                   {"d_head", "41", "silent in C.2: run_wt103_base.sh"},
                                   {"tgt_len", "150", "silent in C.2: run_wt103_base.sh"},
                                   {"mem_len", "150", "silent in C.2: run_wt103_base.sh"},
                                   {"batch", "60", "silent in C.2: run_wt103_base.sh"},
                                   {"schedule", "cosine", "silent in C.2: run_wt103_base.sh"},
                                   {"warmup", "0", "silent in C.2: run_wt103_base.sh"},
                                   {"clip", "0.25", "silent in C.2: run_wt103_base.sh"},
                                   {"dropatt", "0", "silent in C.2: run_wt103_base.sh"},
                               });
  // The official script's own preset differs from C.2 in the weight decay only.
  CHECK(resolve_config("txl-base", "", {}).get_float("weight_decay") == 0.0);
  const LmReproPlan plan = lm_plan_for_scale("paper");
  CHECK(plan.preset == "txl-base-paper");
  CHECK(plan.layers == std::vector<int64_t>{4, 8, 16});  // §5.4, Table 4
}

TEST_CASE("C.3.1: graphormer-slim(-full)(-urpe) is Graphormer on ZINC as Appendix C.3.1 trains it") {
  const std::vector<Row> common = {
      {"layers", "12", "C.3.1: 12 layers"},
      {"d_model", "80", "C.3.1: hidden dimension 80"},
      {"d_ffn", "80", "C.3.1: feed-forward dimension 80"},
      {"heads", "8", "C.3.1 prints 32 heads; Table 2's parameter counts give 8 (paper_presets.h)"},
      {"batch", "256", "C.3.1: batch from {128, 256, 512}"},
      {"lr", "4e-4", "C.3.1: peak learning rate from {4e-4, 5e-4}"},
      {"warmup", "60000", "C.3.1: 60K-step warm-up"},
      {"end_lr", "0", "C.3.1: then linear decay to zero"},
      {"dropout", "0.1", "C.3.1: dropout from {0.0, 0.1}"},
      {"weight_decay", "0.01", "C.3.1: weight decay from {0.0, 0.01}"},
      {"attention_dropout", "0.1", "silent in C.3.1: GV1 ZINC script (default 0.1)"},
      {"input_dropout", "0.1", "silent in C.3.1: GV1 ZINC script (default 0.1)"},
      {"multi_hop_max_dist", "20", "silent in C.3.1: GV1 ZINC script"},
      {"clip", "0", "silent in C.3.1: GV1 ZINC script (no clipping)"},
  };
  for (const char* preset : {"graphormer-slim", "graphormer-slim-urpe"}) {
    check_rows(preset, common);
    check_rows(preset, {{"steps", "600000", "C.3.1: 600K steps on ZINC-Subset"}});
  }
  for (const char* preset : {"graphormer-slim-full", "graphormer-slim-full-urpe"}) {
    check_rows(preset, common);
    check_rows(preset, {{"steps", "800000", "C.3.1: 800K steps on ZINC-Full"}});
  }
  CHECK(resolve_config("graphormer-slim", "", {}).get_string("pe") == "none");
  CHECK(resolve_config("graphormer-slim-urpe", "", {}).get_string("pe") == "urpe");
  // C.3.1's budget: fewer than 500K parameters, with and without URPE.
  for (const char* preset : {"graphormer-slim", "graphormer-slim-urpe"})
    CHECK(graphormer_parameter_count(graphormer_config_from(resolve_config(preset, "", {}))) < 500000);
  // §5.3: four seeds.
  const MoleculeRepro paper = molecule_repro_for_scale("paper");
  CHECK(paper.preset == "graphormer-slim");
  CHECK(paper.seeds == 4);
}

TEST_CASE("C.3.1's heads: Table 2's counts rule out 32 heads and pick 8 with a 302-entry C per head") {
  // The model's own parameter formula, GV1's ZINC tables, as C.3.1 describes the model otherwise.
  auto count = [](int64_t heads) {
    GraphormerConfig c = graphormer_preset("graphormer-slim");
    c.heads = heads;
    return graphormer_parameter_count(c);
  };
  const int64_t added = 491737 - 489321;  // Table 2: URPE's parameters
  CHECK(added == 2416);
  // One C table of K entries per head: H·K = 2,416. 32 heads would need 75.5 entries each.
  CHECK(added % 32 != 0);
  CHECK(80 % 32 != 0);  // nor can 32 heads split d = 80
  // The baseline is 486,081 + 105·H + 40·H² (edge, spatial and virtual-distance tables per head,
  // the multi-hop matrices per head pair); at 32 heads it is over C.3.1's 500K budget.
  for (int64_t h : {1, 2, 4, 8, 16, 32}) CHECK(count(h) == 486081 + 105 * h + 40 * h * h);
  CHECK(count(32) == 530401);
  CHECK(count(32) > 500000);
  // Of the head counts dividing both 80 and 2,416, 8 is nearest Table 2's 489,321.
  int64_t nearest = 0;
  for (int64_t h = 1; h <= 80; ++h)
    if (80 % h == 0 && added % h == 0 && (nearest == 0 || std::llabs(count(h) - 489321) < std::llabs(count(nearest) - 489321)))
      nearest = h;
  CHECK(nearest == 8);
  CHECK(count(8) - 489321 == 160);  // 2·80: one LayerNorm of width 80
  CHECK(added / 8 == 302);          // C entries per head in the paper's model
  // Ours: C over SPD 0..max_spd plus 3 graph-token entries, 42 per head at max_spd = 38.
  GraphormerConfig urpe = graphormer_preset("graphormer-slim-urpe");
  CHECK(graphormer_parameter_count(urpe) - count(8) == 8 * 42);
  urpe.max_spd = 298;  // a 302-entry table reproduces Table 2's URPE count exactly (its extra entries unused)
  CHECK(graphormer_parameter_count(urpe) - count(8) == added);
}

TEST_CASE("C.3.1's selection: the sets the grid runs, the preset's choice inside each") {
  for (const char* preset : {"graphormer-slim", "graphormer-slim-urpe", "graphormer-slim-full"}) {
    const std::vector<PaperChoice> choices = paper_selection(preset);
    REQUIRE(choices.size() == 4);
    CHECK(choices[0].key == "batch");
    CHECK(choices[0].values == std::vector<std::string>{"128", "256", "512"});
    CHECK(choices[1].key == "lr");
    CHECK(choices[1].values == std::vector<std::string>{"4e-4", "5e-4"});
    CHECK(choices[2].key == "dropout");
    CHECK(choices[2].values == std::vector<std::string>{"0", "0.1"});
    CHECK(choices[3].key == "weight_decay");
    CHECK(choices[3].values == std::vector<std::string>{"0", "0.01"});
    const Config c = resolve_config(preset, "", {});
    for (const PaperChoice& choice : choices) {
      INFO(preset << " " << choice.key);
      CHECK(std::find(choice.values.begin(), choice.values.end(), choice.preset_value) != choice.values.end());
      CHECK(c.get_float(choice.key) == doctest::Approx(std::stod(choice.preset_value)));
      CHECK(!choice.why.empty());
    }
  }
  CHECK(paper_selection("graphormer-pcqm4m").empty());  // C.3.2 fixes every value
  CHECK(paper_selection("pi-paper").empty());
  // --grid paper: 3 × 2 × 2 × 2 settings, every one a valid config.
  const std::vector<std::vector<std::string>> points = grid_points(parse_grid_options({"paper"}, "graphormer-slim"));
  REQUIRE(points.size() == 24);
  CHECK(points.front() == std::vector<std::string>{"batch=128", "lr=4e-4", "dropout=0", "weight_decay=0"});
  CHECK(points.back() == std::vector<std::string>{"batch=512", "lr=5e-4", "dropout=0.1", "weight_decay=0.01"});
  for (const std::vector<std::string>& p : points) CHECK_NOTHROW(resolve_config("graphormer-slim", "", p));
  CHECK(grid_point_name(points.front()) == "batch128-lr4e-4-dropout0-weight_decay0");
  CHECK_THROWS_WITH_AS(parse_grid_options({"paper"}, "graphormer-pcqm4m"), doctest::Contains("no set to select from"),
                       Error);
}

TEST_CASE("C.3.2: graphormer-pcqm4m(-urpe) is Graphormer on PCQM4M as Appendix C.3.2 trains it") {
  const std::vector<Row> rows = {
      {"layers", "6", "C.3.2: 6 layers"},
      {"heads", "32", "C.3.2: 32 heads"},
      {"d_model", "512", "C.3.2: hidden dimension 512"},
      {"d_ffn", "512", "C.3.2: feed-forward dimension 512"},
      {"batch", "512", "C.3.2: batch size 512"},
      {"lr", "3e-4", "C.3.2: peak learning rate 3e-4"},
      {"warmup", "60000", "C.3.2: 60K-step warm-up"},
      {"steps", "1000000", "C.3.2: 1M steps"},
      {"end_lr", "0", "C.3.2: linear decay to zero"},
      {"input_dropout", "0", "C.3.2: input embedding dropout 0.0"},
      {"attention_dropout", "0.1", "C.3.2: attention dropout 0.1"},
      {"dropout", "0", "C.3.2: hidden dropout 0.0"},
      {"weight_decay", "0", "C.3.2: weight decay 0.0"},
      {"clip", "5", "silent in C.3.2: GV1 examples/ogb-lsc (--gradient_clip_val 5.0)"},
      {"multi_hop_max_dist", "5", "silent in C.3.2: GV1 examples/ogb-lsc"},
  };
  check_rows("graphormer-pcqm4m", rows);
  check_rows("graphormer-pcqm4m-urpe", rows);
  // C.3.2's budget, < 12.5M parameters; and with GV1's OGB embedding tables this architecture has
  // Table 3's 12.5M (12,550,721), which supports 32 heads of d = 512 there.
  CHECK(graphormer_parameter_count(graphormer_config_from(resolve_config("graphormer-pcqm4m-urpe", "", {}))) < 12500000);
  GraphormerConfig ogb = graphormer_config_from(resolve_config("graphormer-pcqm4m", "", {}));
  ogb.num_atoms = 512 * 9 + 1;
  ogb.num_edges = 512 * 3 + 1;
  ogb.num_spatial = 512;
  ogb.num_degree = 512;
  ogb.num_edge_dis = 128;
  CHECK(graphormer_parameter_count(ogb) == 12550721);
}

TEST_CASE("C.4: mlm-paper is BERT-base masked-LM pre-training with T5's relative bias") {
  check_rows("mlm-paper", {
                              {"task", "mlm", "C.4: masked language modelling"},
                              {"steps", "1000000", "C.4: 1M iterations"},
                              {"rpe_kind", "bucketed", "C.4: RPE is T5's, following UniLMv2"},
                              {"layers", "12", "C.4: BERT-base (Devlin et al. 2019, §3)"},
                              {"d_model", "768", "C.4: BERT-base"},
                              {"heads", "12", "C.4: BERT-base"},
                              {"d_ff", "3072", "C.4: BERT-base"},
                              {"dropout", "0.1", "C.4: BERT-base hyper-parameters (Devlin et al. A.2)"},
                              {"batch", "256", "C.4: BERT-base hyper-parameters (A.2)"},
                              {"seq_len", "512", "C.4: BERT-base hyper-parameters (A.2)"},
                              {"lr", "1e-4", "C.4: BERT-base hyper-parameters (A.2)"},
                              {"warmup", "10000", "C.4: BERT-base hyper-parameters (A.2)"},
                              {"weight_decay", "0.01", "C.4: BERT-base hyper-parameters (A.2)"},
                              {"mask_prob", "0.15", "C.4: BERT's masked LM (§3.1)"},
                              {"vocab", "30522", "C.4: BERT-base's vocabulary size"},
                          });
  const PretrainPlan plan = pretrain_plan_for_scale("paper");
  CHECK(plan.preset == "mlm-paper");
  CHECK(plan.pes == std::vector<std::string>{"ape+rpe", "rpe", "urpe"});  // C.4's three models
}

TEST_CASE("§5.4: repro table5's model and sizes are Table 5's") {
  const Table5Options o;
  CHECK(o.layers == 12);
  CHECK(o.d_model == 768);
  CHECK(o.heads == 12);
  CHECK(o.batch == 32);
  CHECK(o.lengths == std::vector<int64_t>{128, 256, 512});
}

TEST_CASE("every paper preset's --help line cites its section") {
  const std::string help = run_config_help();
  for (const Preset& p : paper_presets()) {
    const std::string section = paper_section_of(p.name);
    INFO(p.name << ": " << p.description);
    if (section.empty()) {  // the official scripts' presets name their script instead
      CHECK((p.description.find("official") != std::string::npos));
      continue;
    }
    CHECK(p.description.find("Appendix " + section) != std::string::npos);
    CHECK(help.find("  " + p.name + ": " + p.description) != std::string::npos);
  }
  CHECK(paper_section_of("pi-tiny").empty());
  CHECK(paper_section_of("graphormer-slim-gv1").empty());
}
