// Gradient accumulation (`accum_steps`, train/loop/grad_accumulation.h): a batch trained as micro-batches
// takes the same optimizer steps as the batch in one piece, to float rounding, for every family
// (the encoder, Transformer-XL with its memory carried per column, Graphormer with each
// micro-batch padded on its own); and the official synthetic-task protocol (data/synthetic.h).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "data/synthetic.h"
#include "ops/activation.h"
#include "ops/layer_norm.h"
#include "ops/matmul.h"
#include "test_util.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/safetensors.h"
#include "train/families/txl/txl_trainer.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/config/run_config.h"

using namespace urpe;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/urpe_test_accum_" + std::to_string(::getpid()) + "_" + name;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return dir;
}

TrainOptions quiet_collecting(std::vector<double>& losses) {
  TrainOptions o;
  o.quiet = true;
  o.on_step = [&losses](int64_t, double loss) { losses.push_back(loss); };
  return o;
}

// The gradients of the two runs' one step agree: Adam's first moment after step 1 is 0.1·g for
// every parameter. Each tensor to `rtol` of its largest magnitude, or of a thousandth of the
// largest gradient anywhere for a tensor whose gradient is zero but for rounding (the key bias:
// softmax ignores it). Parameters are compared through this, not after Adam's update: Adam divides
// by √v + 1e-8, so it scales the rounding noise of such a zero gradient up to a step of ~lr·1e-2.
void check_same_gradients(const std::string& a, const std::string& b, double rtol) {
  const TensorFile fa = load_safetensors(a), fb = load_safetensors(b);
  REQUIRE(fa.tensors.size() == fb.tensors.size());
  double global = 0;
  for (const auto& [name, x] : fb.tensors)
    if (name.rfind("adam.m.", 0) == 0)
      for (float v : x.to_vector_f32()) global = std::max(global, std::fabs(static_cast<double>(v)));
  REQUIRE(global > 0);
  int compared = 0;
  for (const auto& [name, x] : fa.tensors) {
    if (name.rfind("adam.m.", 0) != 0) continue;
    INFO(name);
    const std::vector<float> u = x.to_vector_f32(), v = fb.at(name).to_vector_f32();
    REQUIRE(u.size() == v.size());
    double largest = 0, worst = 0;
    for (size_t k = 0; k < u.size(); ++k) {
      largest = std::max(largest, std::fabs(static_cast<double>(v[k])));
      worst = std::max(worst, std::fabs(static_cast<double>(u[k]) - v[k]));
    }
    CHECK(worst <= rtol * std::max(largest, 1e-3 * global));
    ++compared;
  }
  CHECK(compared > 3);
}

void check_close_losses(const std::vector<double>& a, const std::vector<double>& b, double rtol) {
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("step " << k + 1 << ": " << a[k] << " vs " << b[k]);
    CHECK(std::fabs(a[k] - b[k]) <= rtol * std::fabs(b[k]));
  }
}

// `sets` with `extra` key=value pairs replacing (or adding to) them.
std::vector<std::string> with(const std::vector<std::string>& sets, const std::vector<std::string>& extra) {
  auto key_of = [](const std::string& s) { return s.substr(0, s.find('=')); };
  std::vector<std::string> out;
  for (const std::string& s : sets) {
    bool replaced = false;
    for (const std::string& e : extra) replaced = replaced || key_of(e) == key_of(s);
    if (!replaced) out.push_back(s);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

using Trainer = std::function<void(const Config&, const std::string&, const TrainOptions&)>;

// Trains `sets` as one batch and as `accum` micro-batches: the same losses at every step, and the
// same gradient at the first (a second pair of one-step runs).
void check_accumulation(const Trainer& train, const std::vector<std::string>& sets, int accum, const std::string& dir) {
  const std::string micro_set = "accum_steps=" + std::to_string(accum);
  std::vector<double> whole_losses, micro_losses, unused;
  train(resolve_config("", "", sets), dir + "/whole", quiet_collecting(whole_losses));
  train(resolve_config("", "", with(sets, {micro_set})), dir + "/micro", quiet_collecting(micro_losses));
  check_close_losses(micro_losses, whole_losses, 1e-5);
  const std::vector<std::string> one_step = with(sets, {"steps=1", "warmup=0"});
  train(resolve_config("", "", one_step), dir + "/whole1", quiet_collecting(unused));
  train(resolve_config("", "", with(one_step, {micro_set})), dir + "/micro1", quiet_collecting(unused));
  check_same_gradients(dir + "/micro1/model.safetensors", dir + "/whole1/model.safetensors", 1e-5);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

const std::vector<std::string> kEncoderSets = {"seq_len=8", "vocab=30", "layers=1", "d_model=16", "heads=2",
                                               "d_ff=32", "batch=8", "steps=4", "warmup=1", "eval_every=4",
                                               "valid_size=8", "dropout=0", "lr=0.01"};

}  // namespace

TEST_CASE("accum_steps: the encoder's batch of 8 as 4 micro-batches of 2 takes the same steps") {
  // simple ETP, and official PI (an unscored position) and ETP (the tied head).
  for (const auto& [protocol, task] : std::vector<std::pair<const char*, const char*>>{
           {"simple", "etp"}, {"official", "pi"}, {"official", "etp"}}) {
    INFO(protocol << " " << task);
    const std::vector<std::string> sets =
        with(kEncoderSets, {std::string("task_protocol=") + protocol, std::string("task=") + task});
    check_accumulation([](const Config& c, const std::string& d, const TrainOptions& o) { train_encoder(c, d, o); },
                       sets, 4, temp_dir(std::string("encoder_") + protocol + task));
  }
}

TEST_CASE("accum_steps: Graphormer's micro-batches (each padded to its own largest molecule) match the batch") {
  std::ostringstream csv;
  csv << "smiles,y\n";
  for (int k = 1; k <= 8; ++k) {  // sizes 1 … 14 atoms: micro-batches pad differently
    const std::string chain(static_cast<size_t>(k), 'C');
    csv << chain << "," << 0.3 * k << "\n" << chain << "O," << 0.3 * k - 1 << "\n";
    csv << "c1ccccc1" << chain << "," << 0.2 * k + 1 << "\n";
  }
  const std::string dir = temp_dir("molecules");
  fs::create_directories(dir);
  std::ofstream(dir + "/toy.csv") << csv.str();
  const std::vector<std::string> sets = {"model=graphormer", "dataset=" + dir + "/toy.csv", "target_column=y",
                                         "layers=1", "d_model=8", "d_ffn=8", "heads=2", "multi_hop_max_dist=3",
                                         "max_spd=6", "batch=8", "steps=4", "warmup=1", "eval_every=2",
                                         "eval_batch=4", "lr=3e-3", "dropout=0", "attention_dropout=0",
                                         "input_dropout=0"};
  check_accumulation([](const Config& c, const std::string& d, const TrainOptions& o) { train_graphormer(c, d, o); },
                     sets, 4, dir + "/runs");
  fs::remove_all(dir);
}

TEST_CASE("accum_steps: Transformer-XL's micro-batches carry their columns' memory like the batch") {
  const std::string dir = temp_dir("lm");
  fs::create_directories(dir);
  std::string text;
  const char* words[] = {"the cat", "a dog", "sat on", "ran to", "the mat", "a tree", "."};
  Rng rng(5);
  for (int line = 0; line < 60; ++line) {
    for (int w = 0; w < 6; ++w) text += std::string(words[rng.below(7)]) + " ";
    text += "\n";
  }
  for (const char* split : {"train", "valid", "test"}) std::ofstream(dir + "/" + split + ".txt") << text;
  // 6 steps within the first epoch: every column's memory is carried from step to step (joined
  // from the micro-batches' memories, then split again).
  const std::vector<std::string> sets = {"model=txl", "corpus=" + dir, "layers=1", "d_model=16", "heads=2",
                                         "d_head=8", "d_inner=32", "tgt_len=6", "mem_len=6", "batch=4",
                                         "steps=6", "warmup=1", "eval_every=3", "lr=0.01", "dropout=0",
                                         "dropatt=0", "eval_batch=2", "cutoffs=", "max_eval_tokens=0"};
  check_accumulation([](const Config& c, const std::string& d, const TrainOptions& o) { train_txl(c, d, o); }, sets,
                     2, dir + "/runs");
  fs::remove_all(dir);
}

TEST_CASE("accum_steps must divide the batch: one error naming the key") {
  CHECK_THROWS_WITH_AS(resolve_config("", "", with(kEncoderSets, {"accum_steps=3"})),
                       doctest::Contains("accum_steps (3) must divide batch (8)"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", with(kEncoderSets, {"accum_steps=0"})),
                       doctest::Contains("accum_steps"), Error);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"task_protocol=fairseq"}), doctest::Contains("task_protocol"), Error);
}

TEST_CASE("official protocol: the fairseq generator's ids, targets, classes and unscored position") {
  Rng rng(7);
  const int64_t n = 8, V = 40;
  const SyntheticTask pi(SyntheticKind::position_identification, n, V, TaskProtocol::official);
  const SyntheticBatch p = pi.sample(3, rng);
  const std::vector<int32_t> ptok = p.tokens.to_vector_i32(), ptgt = p.targets.to_vector_i32();
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t i = 0; i < n; ++i) CHECK(ptgt[s * n + i] == 1 + i);  // 1 + position
  CHECK(pi.ignore_index() == 1);                                     // position 0: the padding id, not scored
  CHECK(pi.scored_per_sequence() == n - 1);
  CHECK(pi.num_classes() == 11 + V);
  CHECK(pi.input_ids() == 11 + V);
  // Tokens: V − 20 ids from 11 (np.random.choice(V − 20) + 11): 11 … V − 10, every one drawn.
  const SyntheticTask etp(SyntheticKind::even_token_prediction, n, V, TaskProtocol::official);
  const SyntheticBatch e = etp.sample(400, rng);
  const std::vector<int32_t> tok = e.tokens.to_vector_i32(), tgt = e.targets.to_vector_i32();
  CHECK(*std::min_element(tok.begin(), tok.end()) == 11);
  CHECK(*std::max_element(tok.begin(), tok.end()) == V - 10);
  for (int64_t s = 0; s < 400; ++s)
    for (int64_t k = 0; k < n; ++k) CHECK(tgt[s * n + k] == (k < n / 2 ? tok[s * n + 2 * k + 1] : V - 2));
  CHECK(etp.num_classes() == 11 + V);
  CHECK(etp.scored_per_sequence() == n);
  // V ≤ 20 (the official code has no ids to draw): all V ids 11 … 10 + V; PI's classes fit 1 + i.
  const SyntheticTask small(SyntheticKind::even_token_prediction, n, 10, TaskProtocol::official);
  const std::vector<int32_t> stok = small.sample(200, rng).tokens.to_vector_i32();
  CHECK(*std::min_element(stok.begin(), stok.end()) == 11);
  CHECK(*std::max_element(stok.begin(), stok.end()) == 20);
  CHECK(SyntheticTask(SyntheticKind::position_identification, 128, 10, TaskProtocol::official).num_classes() == 129);
  for (const char* task : {"pi", "etp"}) {  // the paper's |V| = 10 trains: 21 classes (ETP tied to 21 rows)
    const Config config = resolve_config("", "", with(kEncoderSets, {"task_protocol=official", "vocab=10",
                                                                     std::string("task=") + task}));
    const TransformerEncoder model(encoder_config_from(config), 1);
    Rng data(2);
    const Tensor logits = model.forward(task_from_config(config).sample(2, data).tokens, false, nullptr);
    CHECK(logits.shape() == Shape{2, 8, 21});
  }
  // The simple protocol draws from the same stream offsets: the same uniforms, other ids.
  Rng a(3), b(3);
  const std::vector<int32_t> simple = SyntheticTask(SyntheticKind::even_token_prediction, n, 100).sample(2, a).tokens.to_vector_i32();
  const std::vector<int32_t> official =
      SyntheticTask(SyntheticKind::even_token_prediction, n, 100, TaskProtocol::official).sample(2, b).tokens.to_vector_i32();
  CHECK(a.offset() == b.offset());
  CHECK(simple != official);
}

TEST_CASE("official protocol: the head is dense → GELU → LayerNorm → linear, tied to the embedding for ETP") {
  for (const char* task : {"pi", "etp"}) {
    INFO(task);
    const Config config = resolve_config("", "", with(kEncoderSets, {"task_protocol=official", std::string("task=") + task}));
    const TransformerEncoder model(encoder_config_from(config), 3);
    const ParameterSet& params = model.parameters();
    const bool tied = std::string(task) == "etp";
    CHECK(params.find("head.weight").defined() == !tied);  // tied: the token embedding is the weight
    const Tensor weight = tied ? params.find("embed_tokens.weight") : params.find("head.weight");
    CHECK(weight.size(0) == 41);  // 11 + V classes (V = 30)
    const Tensor tokens = test::random_ids({2, 8}, 41, 9);
    HiddenStates states;
    const Tensor logits = model.forward(tokens, false, nullptr, &states);
    const Tensor x = states.blocks.back();  // the last layer's output
    const Tensor h = layer_norm(gelu(linear(x, params.find("head.dense.weight"), params.find("head.dense.bias"))),
                                params.find("head.layer_norm.weight"), params.find("head.layer_norm.bias"));
    const std::vector<float> want = linear(h, weight, params.find("head.bias")).to_vector_f32();
    const std::vector<float> got = logits.to_vector_f32();
    REQUIRE(want.size() == got.size());
    for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-6));
  }
  // fairseq's padding row (id 1) of the token embedding starts at zero, the others do not.
  const Config etp = resolve_config("", "", with(kEncoderSets, {"task_protocol=official", "task=etp"}));
  const std::vector<float> table =
      TransformerEncoder(encoder_config_from(etp), 3).parameters().find("embed_tokens.weight").to_vector_f32();
  for (int k = 0; k < 16; ++k) {
    CHECK(table[1 * 16 + k] == 0.0f);
    CHECK(table[11 * 16 + k] != 0.0f);
  }
  // The simple protocol keeps today's linear head and V-row embedding.
  const TransformerEncoder simple(encoder_config_from(resolve_config("", "", with(kEncoderSets, {"task=etp"}))), 3);
  CHECK(!simple.parameters().find("head.dense.weight").defined());
  CHECK(simple.parameters().find("embed_tokens.weight").size(0) == 30);
}

TEST_CASE("official PI: position 0 is not scored by the loss or the accuracy") {
  const Config config = resolve_config("", "", with(kEncoderSets, {"task_protocol=official", "task=pi"}));
  const TransformerEncoder model(encoder_config_from(config), 3);
  const SyntheticTask task = task_from_config(config);
  const EncoderEvalResult full = evaluate_encoder(model, task, 8, 64);
  // By hand: mean cross-entropy and accuracy over positions 1 … n − 1 of the same held-out set
  // (encoder_trainer.cpp's validation seed).
  Rng valid_rng(0x7a11d5e7ULL);
  const SyntheticBatch data = task.sample(8, valid_rng);
  const std::vector<float> logits = model.forward(data.tokens, false, nullptr).to_vector_f32();
  const std::vector<int32_t> targets = data.targets.to_vector_i32();
  const int64_t classes = task.num_classes();
  double loss = 0, correct = 0, scored = 0;
  for (size_t row = 0; row < targets.size(); ++row) {
    if (row % 8 == 0) continue;
    const float* l = logits.data() + row * classes;
    double m = l[0], sum = 0;
    for (int64_t c = 0; c < classes; ++c) m = std::max(m, static_cast<double>(l[c]));
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(l[c] - m);
    loss += m + std::log(sum) - l[targets[row]];
    correct += std::max_element(l, l + classes) - l == targets[row];
    ++scored;
  }
  CHECK(scored == 8 * 7);
  CHECK(full.loss == doctest::Approx(loss / scored).epsilon(1e-5));
  CHECK(full.accuracy == doctest::Approx(correct / scored).epsilon(1e-12));
}

TEST_CASE("paper presets: official protocol, batch 512 as 4 micro-batches; tiny and small unchanged") {
  for (const char* name : {"pi-paper", "etp-paper"}) {
    const Config c = resolve_config(name, "", {});
    CHECK(c.get_string("task_protocol") == "official");
    CHECK(c.get_int("batch") == 512);
    CHECK(c.get_int("accum_steps") == 4);
    CHECK(c.get_int("steps") == 40000);
    CHECK(c.get_int("warmup") == 6000);
    CHECK(c.get_float("lr") == doctest::Approx(7e-5));
  }
  for (const char* name : {"pi-tiny", "etp-tiny", "pi-small", "etp-small"}) {
    const Config c = resolve_config(name, "", {});
    CHECK(c.get_string("task_protocol") == "simple");
    CHECK(c.get_int("accum_steps") == 1);
  }
  CHECK(resolve_config("txl-base-paper", "", {}).get_float("weight_decay") == doctest::Approx(0.01));
  CHECK(resolve_config("txl-base", "", {}).get_float("weight_decay") == 0.0);
}
