// The per-op profiler (tensor/op_profile.h, base/profile/): what it records of real ops — each
// GEMM's FLOPs exactly 2·m·n·k, backward under the forward's scopes, the phases — the key
// averages' arithmetic on a hand-made recording, a Chrome trace that parses with every begin
// matched by its end in nesting order, the peaks cache, and the commands: `urpe bench peaks`,
// `urpe profile` and `urpe train --trace` on tiny configs.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "cli_util.h"
#include "data/synthetic.h"
#include "doctest/doctest.h"
#include "models/encoder.h"
#include "ops/cast.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "scratch_dir.h"
#include "test_util.h"
#include "base/io/json.h"
#include "base/dist/communicator.h"
#include "base/io/run_dir.h"
#include "train/optim/optimizer.h"
#include "base/profile/chrome_trace.h"
#include "base/profile/key_averages.h"
#include "base/profile/machine_peaks.h"
#include "base/profile/op_recorder.h"
#include "base/profile/profile_report.h"
#include "tensor/host_allocator.h"

using namespace urpe;
using profile::Phase;
using profile::Recording;
using profile::Span;
using profile::SpanKind;

namespace {

// The op spans of a recording named `name`, in order.
std::vector<Span> ops_named(const Recording& r, const std::string& name) {
  std::vector<Span> out;
  for (const Span& s : r.spans)
    if (s.kind == SpanKind::op && r.name_of(s) == name) out.push_back(s);
  return out;
}

// Names of the spans enclosing span `index`, innermost first.
std::vector<std::string> ancestors(const Recording& r, size_t index) {
  std::vector<std::string> names;
  for (int32_t p = r.spans[index].parent; p >= 0; p = r.spans[static_cast<size_t>(p)].parent)
    names.push_back(r.name_of(r.spans[static_cast<size_t>(p)]));
  return names;
}

// One recorded training step of a tiny URPE encoder (forward, loss, backward, Adam).
Recording record_encoder_steps(int steps) {
  EncoderConfig c;
  c.seq_len = 8;
  c.vocab = 20;
  c.d_model = 16;
  c.heads = 2;
  c.d_ff = 32;
  c.num_classes = 8;
  TransformerEncoder model(c, 3);
  Adam adam(model.parameters().tensors());
  const Tensor tokens = test::random_ids({4, 8}, 20, 5), targets = test::random_ids({32}, 8, 6);
  Rng dropout_rng(7);
  profile::OpRecorder recorder{Device::cpu()};
  for (int step = 1; step <= steps; ++step) {
    recorder.begin_step(step);
    adam.zero_grad();
    const Tensor logits = model.forward(tokens, true, &dropout_rng);
    const Tensor loss = cross_entropy(reshape(logits, {32, 8}), targets);
    loss.backward();
    adam.step(1e-3f);
    recorder.end_step();
  }
  return recorder.take();
}

struct TraceEvent {
  std::string name, ph;
  double ts = 0, dur = 0;
  int64_t tid = 0;
  std::string scope, device;
};

std::vector<TraceEvent> parse_trace(const std::string& text) {
  const json::Value doc = json::Value::parse(text);
  std::vector<TraceEvent> events;
  for (const json::Value& e : doc.at("traceEvents").items()) {
    TraceEvent t;
    t.name = e.at("name").as_string();
    t.ph = e.at("ph").as_string();
    REQUIRE(e.at("pid").is_number());
    if (t.ph == "M") continue;
    t.ts = e.at("ts").as_number();
    t.tid = e.at("tid").as_integer();
    if (t.ph == "X") t.dur = e.at("dur").as_number();
    if (const json::Value* args = e.find("args"); args && args->contains("scope")) {
      t.scope = args->at("scope").as_string();
      t.device = args->at("device").as_string();
    }
    events.push_back(t);
  }
  return events;
}

// Peaks for the roofline without measuring: a round machine.
profile::MachinePeaks round_peaks(const std::string& key) {
  profile::MachinePeaks p;
  p.key = key;
  p.device = "cpu";
  p.measured = "2026-11-26T00:00:00Z";
  p.gemm_gflops = 100;
  p.bandwidth_gbs = 10;
  p.copy_gbs = 8;
  p.triad_gbs = 10;
  return p;
}

}  // namespace

TEST_CASE("profile: every GEMM counts exactly 2·m·n·k FLOPs, forward and backward") {
  const Tensor a2 = test::random_param({5, 7}, 1), b2 = test::random_param({7, 3}, 2);  // (5×7)·(7×3)
  const Tensor a4 = test::random_param({2, 3, 6, 4}, 3), b4 = test::random_param({2, 3, 5, 4}, 4);  // a·bᵀ, 6 items
  const Tensor x3 = test::random_param({2, 9, 4}, 5), w = test::random_param({4, 11}, 6);  // shared B, folded
  const Tensor xl = test::random_param({3, 10, 8}, 7), wl = test::random_param({6, 8}, 8), bl = test::random_param({6}, 9);
  profile::OpRecorder recorder{Device::cpu()};
  recorder.begin_step(1);
  const Tensor c2 = matmul(a2, b2);
  const Tensor c4 = matmul(a4, b4, false, true);
  const Tensor c3 = matmul(x3, w);
  const Tensor yl = linear(xl, wl, bl);
  sum_all(add(add(sum_all(c2), sum_all(c4)), add(sum_all(c3), sum_all(yl)))).backward();
  recorder.end_step();
  const Recording r = recorder.take();

  const std::vector<Span> forward = ops_named(r, "matmul");
  REQUIRE(forward.size() == 3);
  CHECK(forward[0].cost.flops == 2.0 * 5 * 3 * 7);
  CHECK(forward[1].cost.flops == 2.0 * 6 * 6 * 5 * 4);
  CHECK(forward[2].cost.flops == 2.0 * 18 * 11 * 4);
  // (5×7)·(7×3): A, B and C once each
  CHECK(forward[0].cost.bytes == 4.0 * (5 * 7 + 7 * 3 + 5 * 3));
  // Backward: two GEMMs per product (∂A, ∂B), each 2·m·n·k of the forward's sizes.
  const std::vector<Span> backward = ops_named(r, "matmul backward");
  REQUIRE(backward.size() == 3);
  double sum = 0;
  for (const Span& s : backward) sum += s.cost.flops;
  CHECK(sum == 2 * (2.0 * 5 * 3 * 7 + 2.0 * 6 * 6 * 5 * 4 + 2.0 * 18 * 11 * 4));
  for (const Span& s : backward) CHECK(s.phase == Phase::backward);
  // linear: the GEMM alone (the bias is copied, not computed); backward two GEMMs and Σ_rows g.
  const std::vector<Span> lin = ops_named(r, "linear"), lin_back = ops_named(r, "linear backward");
  REQUIRE(lin.size() == 1);
  REQUIRE(lin_back.size() == 1);
  CHECK(lin[0].cost.flops == 2.0 * 30 * 6 * 8);
  CHECK(lin_back[0].cost.flops == 2 * (2.0 * 30 * 6 * 8) + 30 * 6);
}

TEST_CASE("profile: a step's memory, live at its start and its peak above that; the run's peak kept") {
  // The host allocator's counters are exact (size classes, no caching counted), so the bounds are
  // what the tensors hold: 1 MiB live across both steps; step 1 makes 3 MiB on top of it, step 2
  // 2 MiB; before the first step a 6 MiB tensor came and went (the run's peak, not a step's).
  constexpr int64_t kMiB = int64_t(1) << 20;
  profile::OpRecorder recorder{Device::cpu()};
  { const Tensor before = Tensor::zeros({6 * kMiB / 4}); }
  const Tensor kept = Tensor::zeros({kMiB / 4});
  const size_t live = host::in_use_bytes();
  for (const int64_t made : {int64_t(3), int64_t(2)}) {
    recorder.begin_step(made == 3 ? 1 : 2);
    { const Tensor during = Tensor::zeros({made * kMiB / 4}); }
    recorder.end_step();
  }
  const Recording r = recorder.take();
  CHECK(r.step_live_bytes == double(live));
  CHECK(r.step_peak_above_bytes >= 3.0 * kMiB);
  CHECK(r.step_peak_above_bytes < 3.0 * kMiB + 4096);  // a size class's rounding at most
  CHECK(r.peak_bytes >= double(live) + 5.0 * kMiB);    // the 6 MiB before the steps (1 MiB of it freed since)
  const std::string md = profile::profile_markdown(profile::summarize(r, std::nullopt), [&] {
    profile::ReportHeader h;
    h.title = "memory";
    h.step_live_bytes = r.step_live_bytes;
    h.step_peak_above_bytes = r.step_peak_above_bytes;
    return h;
  }());
  CHECK(md.find("- a step's memory: ") != std::string::npos);
  CHECK(md.find(" MiB more during it (the activations the backward keeps") != std::string::npos);
}

TEST_CASE("profile: backward runs under the forward's scopes, each phase on its own") {
  const Recording r = record_encoder_steps(1);
  REQUIRE(r.steps.size() == 1);
  bool forward_core = false, backward_core = false, adam = false;
  for (size_t k = 0; k < r.spans.size(); ++k) {
    const Span& s = r.spans[k];
    if (s.kind != SpanKind::op) continue;
    const std::vector<std::string> up = ancestors(r, k);
    CHECK(up.back() == "step 1");  // everything inside the step
    // The encoder's attention on the CPU: the fused block op (ops/urpe_self_attention.h).
    if (r.name_of(s) == "urpe_self_attention" && !forward_core) {
      forward_core = true;
      CHECK(s.phase == Phase::forward);
      REQUIRE(up.size() == 3);
      CHECK(up[0] == "encoder.layer0.attention");
      CHECK(up[1] == "encoder.layer0");
    }
    if (r.name_of(s) == "urpe_self_attention backward") {
      backward_core = true;
      CHECK(s.phase == Phase::backward);
      REQUIRE(up.size() >= 2);
      CHECK(up[0].find(".attention") != std::string::npos);
    }
    if (r.name_of(s) == "adam_update") {
      adam = true;
      CHECK(s.phase == Phase::optimizer);
      CHECK(s.cost.bytes > 0);
    }
    CHECK(s.end_us >= s.begin_us);
  }
  CHECK(forward_core);
  CHECK(backward_core);
  CHECK(adam);
}

TEST_CASE("profile: a sharded optimizer's collectives are the communication phase") {
  // One process: ZeRO-1 over a world of one still reduce-scatters and all-gathers (its own range).
  const Tensor w = test::random_param({6, 5}, 11), b = test::random_param({5}, 12);
  Adam adam({w, b}, AdamConfig{}, dist::world());
  profile::OpRecorder recorder{Device::cpu()};
  recorder.begin_step(1);
  sum_all(add(matmul(test::random_values({3, 6}, 13), w), b)).backward();
  adam.step_sharded(1e-3f, 0.5, 1.0, false);
  recorder.end_step();
  const Recording r = recorder.take();
  const std::vector<Span> scatter = ops_named(r, "reduce_scatter_gradients"), gather = ops_named(r, "all_gather_parameters");
  REQUIRE(scatter.size() == 1);
  REQUIRE(gather.size() == 1);
  CHECK(scatter[0].phase == Phase::communication);
  CHECK(gather[0].phase == Phase::communication);
  CHECK(scatter[0].cost.bytes == 4.0 * (30 + 5));  // the gradients this rank contributes
  const std::vector<Span> update = ops_named(r, "adam_update");
  REQUIRE(update.size() == 1);
  CHECK(update[0].phase == Phase::optimizer);  // back to the optimizer's phase after the collective
  CHECK(update[0].cost.bytes == 28.0 * 35);
}

TEST_CASE("profile: off, the hooks record nothing and nodes carry no scope") {
  CHECK(profile::active() == nullptr);
  const Tensor a = test::random_param({3, 4}, 1), b = test::random_param({4, 2}, 2);
  const Tensor c = matmul(a, b);
  REQUIRE(c.grad_fn());
  CHECK(c.grad_fn()->scope == nullptr);
  // A recorder that is not recording a step ignores whatever reaches it.
  profile::OpRecorder idle{Device::cpu()};
  {
    const profile::ActiveRecorder on(&idle);
    const Tensor d = matmul(a, b);
    sum_all(d).backward();
  }
  CHECK(idle.recording_so_far().spans.empty());
  CHECK(profile::active() == nullptr);
}

TEST_CASE("profile: key averages of a hand-made recording") {
  // step 1 (10 ms): forward op "outer" 0..6 ms holding "inner" 1..4 ms; backward op "g" 7..9 ms.
  Recording r;
  r.device = "cpu";
  r.names = {"step 1", "outer", "inner", "g", "layer"};
  auto span = [&](int32_t name, SpanKind kind, Phase phase, int32_t parent, double b, double e, double flops,
                  double bytes) {
    Span s;
    s.name = name;
    s.kind = kind;
    s.phase = phase;
    s.parent = parent;
    s.step = 1;
    s.begin_us = b * 1000;
    s.end_us = e * 1000;
    s.cost = {flops, bytes};
    r.spans.push_back(s);
  };
  span(0, SpanKind::step, Phase::forward, -1, 0, 10, 0, 0);
  span(4, SpanKind::scope, Phase::forward, 0, 0, 6.5, 0, 0);
  span(1, SpanKind::op, Phase::forward, 1, 0, 6, 2e9, 1e6);   // 2 GFLOP of its own
  span(2, SpanKind::op, Phase::forward, 2, 1, 4, 0, 3e7);     // 30 MB
  span(3, SpanKind::op, Phase::backward, 0, 7, 9, 0, 0);
  r.steps = {0};
  const profile::MachinePeaks peaks = round_peaks("test");  // 100 GFLOP/s, 10 GB/s
  const profile::ProfileSummary s = profile::summarize(r, peaks);
  CHECK(s.step_ms == doctest::Approx(10));
  REQUIRE(s.ops.size() == 3);
  // sorted by self time: inner 3, outer 6 − 3 = 3 (ties by name), g 2
  CHECK(s.ops[0].name == "inner");
  CHECK(s.ops[1].name == "outer");
  CHECK(s.ops[2].name == "g");
  CHECK(s.ops[1].self_ms == doctest::Approx(3));
  CHECK(s.ops[1].total_ms == doctest::Approx(6));
  CHECK(s.ops[0].self_ms == doctest::Approx(3));
  CHECK(s.ops_self_ms == doctest::Approx(8));  // the top-level ops: 6 + 2
  CHECK(s.phase_self_ms[static_cast<int>(Phase::backward)] == doctest::Approx(2));
  // bounds: outer max(2e9 / 1e11, 1e6 / 1e10) s = 20 ms; inner 3e7 / 1e10 s = 3 ms
  CHECK(s.ops[1].bound_ms == doctest::Approx(20));
  CHECK(s.ops[0].bound_ms == doctest::Approx(3));
  CHECK(s.bound_ms == doctest::Approx(23));
  // the scope table: outer and inner under "layer", g outside every scope
  REQUIRE(s.scopes.size() == 2);
  CHECK(s.scopes[0].scope == "layer");
  CHECK(s.scopes[0].self_ms == doctest::Approx(6));
  const std::string table = profile::key_averages_table(s);
  CHECK(table.find("| op | phase | calls | self ms | total ms | % of step | GFLOP/s | GB/s | % of roofline |") == 0);
  CHECK(table.find("| outer | forward | 1 | 3.000 | 6.000 | 30.0 | 666.67 | 0.33 | 666.7 |") != std::string::npos);
}

TEST_CASE("profile: GEMMs on tensor cores are bounded by their math's measured rate, the rest by sgemm's") {
  // A GPU-like peaks table: sgemm 50, TF32 400, BF16→FP32 700 TFLOP/s; 3000 GB/s.
  profile::MachinePeaks peaks = round_peaks("tensor cores");
  peaks.device = "cuda";
  peaks.gemm_gflops = 50e3;
  peaks.tf32_gflops = 400e3;
  peaks.bf16_gflops = 700e3;
  peaks.bandwidth_gbs = 3000;
  using profile::Cost;
  using profile::GemmMath;
  const Cost gemm{2e12, 1e9};  // 2 TFLOP, 1 GB: compute-bound in every math
  CHECK(profile::roofline_bound_ms(peaks, gemm) == doctest::Approx(40));  // 2e12 / 5e13 s
  CHECK(profile::roofline_bound_ms(peaks, profile::with_math(gemm, GemmMath::fp32)) == doctest::Approx(40));
  CHECK(profile::roofline_bound_ms(peaks, profile::with_math(gemm, GemmMath::tf32)) == doctest::Approx(5));
  CHECK(profile::roofline_bound_ms(peaks, profile::with_math(gemm, GemmMath::bf16)) == doctest::Approx(2e12 / 7e14 * 1e3));
  // A linear: its GEMM in TF32 and its bias's 1 GFLOP of additions at the sgemm rate, summed.
  const Cost linear = profile::with_math(gemm, GemmMath::tf32) + Cost{1e9, 1e8};
  CHECK(linear.flops == 2e12 + 1e9);
  CHECK(linear.tf32_flops == 2e12);
  CHECK(profile::roofline_bound_ms(peaks, linear) == doctest::Approx(5 + 0.02));
  // Memory still bounds a TF32 GEMM that moves more than it computes: 30 GB at 3000 GB/s.
  CHECK(profile::roofline_bound_ms(peaks, profile::with_math(Cost{2e12, 3e10}, GemmMath::tf32)) == doctest::Approx(10));
  // The ceilings by math, and where a missing rate falls back to.
  std::string source;
  CHECK(profile::gemm_ceiling_gflops(peaks, GemmMath::bf16, &source) == 700e3);
  CHECK(source == "BF16 GEMM rate");
  profile::MachinePeaks no_bf16 = peaks;
  no_bf16.bf16_gflops = 0;
  CHECK(profile::gemm_ceiling_gflops(no_bf16, GemmMath::bf16, &source) == 400e3);
  CHECK(source == "TF32 GEMM rate (no BF16 rate measured)");
  profile::MachinePeaks sgemm_only = no_bf16;
  sgemm_only.tf32_gflops = 0;
  CHECK(profile::gemm_ceiling_gflops(sgemm_only, GemmMath::tf32, &source) == 50e3);
  CHECK(source == "sgemm rate (no TF32 rate measured)");

  // The key averages of a step with one GEMM of each math (each 2 TFLOP in 50 ms) and the header
  // that names the ceilings.
  Recording r;
  r.device = "cuda";
  r.names = {"step 1", "matmul fp32", "matmul tf32", "matmul bf16"};
  auto span = [&](int32_t name, SpanKind kind, int32_t parent, double b, double e, const Cost& cost) {
    Span sp;
    sp.name = name;
    sp.kind = kind;
    sp.parent = parent;
    sp.step = 1;
    sp.begin_us = b * 1000;
    sp.end_us = e * 1000;
    sp.cost = cost;
    r.spans.push_back(sp);
  };
  span(0, SpanKind::step, -1, 0, 200, Cost{});
  span(1, SpanKind::op, 0, 0, 50, gemm);
  span(2, SpanKind::op, 0, 50, 100, profile::with_math(gemm, GemmMath::tf32));
  span(3, SpanKind::op, 0, 100, 150, profile::with_math(gemm, GemmMath::bf16));
  r.steps = {0};
  const profile::ProfileSummary s = profile::summarize(r, peaks);
  std::map<std::string, const profile::OpAverage*> by_name;
  for (const profile::OpAverage& op : s.ops) by_name[op.name] = &op;
  REQUIRE(by_name.size() == 3);
  CHECK(by_name["matmul fp32"]->bound_ms == doctest::Approx(40));
  CHECK(by_name["matmul tf32"]->bound_ms == doctest::Approx(5));
  CHECK(by_name["matmul bf16"]->bound_ms == doctest::Approx(2e12 / 7e14 * 1e3));
  CHECK(by_name["matmul tf32"]->cost.tf32_flops == 2e12);
  CHECK(s.bound_ms == doctest::Approx(40 + 5 + 2e12 / 7e14 * 1e3));
  const std::string table = profile::key_averages_table(s);
  CHECK(table.find("| matmul fp32 | forward | 1 | 50.000 | 50.000 | 25.0 | 40000.00 | 20.00 | 80.0 |") != std::string::npos);
  CHECK(table.find("| matmul tf32 | forward | 1 | 50.000 | 50.000 | 25.0 | 40000.00 | 20.00 | 10.0 |") != std::string::npos);
  CHECK(table.find("| matmul bf16 | forward | 1 | 50.000 | 50.000 | 25.0 | 40000.00 | 20.00 | 5.7 |") != std::string::npos);
  const std::string md = profile::profile_markdown(s, {"tensor cores", "", "", "", -1});
  CHECK(md.find("tensor-core GEMMs TF32 400000.0 GFLOP/s, BF16→FP32 700000.0 GFLOP/s") != std::string::npos);
  CHECK(md.find("- GEMMs on tensor cores: 2000.000 GFLOP per step in TF32, bounded at 400000.0 GFLOP/s (the TF32 GEMM "
                "rate); 2000.000 GFLOP per step in BF16, bounded at 700000.0 GFLOP/s (the BF16 GEMM rate)") !=
        std::string::npos);
  const std::string md_old = profile::profile_markdown(profile::summarize(r, no_bf16), {"old entry", "", "", "", -1});
  CHECK(md_old.find("in BF16, bounded at 400000.0 GFLOP/s (the TF32 GEMM rate (no BF16 rate measured))") != std::string::npos);
  // The picture draws the two tensor-core ceilings above sgemm's.
  const std::string dir = test::make_scratch_dir("urpe_profile_tensor_cores");
  profile::write_profile(dir, r, peaks, {"tensor cores", "", "", "", -1});
  CHECK(path_exists(join_path(join_path(dir, "plots"), "roofline.png")));
}

TEST_CASE("profile: a CPU GEMM counts its FLOPs as FP32, bf16 operands too (the CPU widens them)") {
  Rng rng(5);
  const Tensor a = Tensor::uniform({6, 5}, -1, 1, rng), b = Tensor::uniform({5, 4}, -1, 1, rng);
  profile::OpRecorder recorder{Device::cpu()};
  recorder.begin_step(1);
  matmul(a, b);
  matmul(cast(a, DType::bf16), cast(b, DType::bf16));
  recorder.end_step();
  const Recording r = recorder.take();
  const std::vector<Span> gemms = ops_named(r, "matmul");
  REQUIRE(gemms.size() == 2);
  for (const Span& g : gemms) {
    CHECK(g.cost.flops == 2.0 * 6 * 5 * 4);
    CHECK(g.cost.tf32_flops == 0);
    CHECK(g.cost.bf16_flops == 0);
  }
}

TEST_CASE("profile: the Chrome trace parses and every begin has its end, properly nested") {
  const Recording r = record_encoder_steps(2);
  const std::vector<TraceEvent> events = parse_trace(profile::chrome_trace_json(r));
  std::map<int64_t, std::vector<std::string>> stacks;
  std::map<int64_t, double> last_ts;
  size_t begins = 0, max_depth = 0;
  bool core_nested = false, backward_nested = false;
  for (const TraceEvent& e : events) {
    REQUIRE((e.ph == "B" || e.ph == "E"));  // a CPU recording has no stream track
    INFO("event " << e.ph << " " << e.name << " at " << e.ts << " on track " << e.tid);
    CHECK(e.ts >= last_ts[e.tid]);
    last_ts[e.tid] = e.ts;
    std::vector<std::string>& stack = stacks[e.tid];
    if (e.ph == "B") {
      ++begins;
      stack.push_back(e.name);
      max_depth = std::max(max_depth, stack.size());
      const size_t d = stack.size();
      if (e.name == "urpe_self_attention" && d == 4 && stack[0].rfind("step ", 0) == 0 && stack[1] == "encoder.layer0" &&
          stack[2] == "encoder.layer0.attention" && e.tid == 1 && e.scope == "encoder.layer0.attention" &&
          e.device == "cpu")
        core_nested = true;
      if (e.name == "urpe_self_attention backward" && d >= 3 && stack[d - 2].find(".attention") != std::string::npos &&
          e.tid == 2)
        backward_nested = true;
    } else {
      REQUIRE_FALSE(stack.empty());
      CHECK(stack.back() == e.name);
      stack.pop_back();
    }
  }
  for (const auto& [tid, stack] : stacks) CHECK(stack.empty());
  CHECK(begins > 50);
  CHECK(max_depth >= 4);  // step → layer → attention → op (→ an op an op calls)
  CHECK(core_nested);
  CHECK(backward_nested);
  CHECK(stacks.count(3) == 1);  // the optimizer's track
}

TEST_CASE("profile: the peaks cache keeps one entry per machine; a broken cache names its file") {
  const std::string path = join_path(test::make_scratch_dir("urpe_peaks_cache"), "sub/peaks.json");
  CHECK_FALSE(profile::cached_peaks("machine A", path).has_value());  // no file yet
  profile::MachinePeaks a = round_peaks("machine A"), b = round_peaks("machine B");
  a.gemms.push_back({"square 64", 1, 64, 64, 64, 12.5});
  b.gemm_gflops = 7;
  profile::store_peaks(a, path);
  profile::store_peaks(b, path);
  a.gemm_gflops = 200;  // measured again: replaces its own entry only
  profile::store_peaks(a, path);
  const auto read_a = profile::cached_peaks("machine A", path), read_b = profile::cached_peaks("machine B", path);
  REQUIRE(read_a.has_value());
  REQUIRE(read_b.has_value());
  CHECK(read_a->gemm_gflops == 200);
  CHECK(read_b->gemm_gflops == 7);
  REQUIRE(read_a->gemms.size() == 1);
  CHECK(read_a->gemms[0].gflops == 12.5);
  CHECK(profile::roofline_bound_ms(*read_a, 2e9, 1e6) == doctest::Approx(10));  // 2 GFLOP at 200 GFLOP/s
  CHECK(read_a->bf16_gflops == 0);  // not measured
  profile::MachinePeaks c = round_peaks("machine C");
  c.tf32_gflops = 300;
  c.bf16_gflops = 600;
  profile::store_peaks(c, path);
  const auto read_c = profile::cached_peaks("machine C", path);
  REQUIRE(read_c.has_value());
  CHECK(read_c->tf32_gflops == 300);
  CHECK(read_c->bf16_gflops == 600);
  {  // an entry written before the BF16 rate was cached reads as "not measured"
    const std::string old_path = join_path(test::make_scratch_dir("urpe_peaks_old"), "peaks.json");
    write_text_atomic(old_path,
                      "{\"format\": \"urpe machine peaks v1\", \"machines\": [{\"key\": \"old\", \"device\": \"cuda\", "
                      "\"measured\": \"2026-11-25T00:00:00Z\", \"gemm_gflops\": 50000, \"bandwidth_gbs\": 3000, "
                      "\"copy_gbs\": 3000, \"triad_gbs\": 0, \"tf32_gflops\": 400000, \"smoke\": false, \"gemms\": []}]}");
    const auto old = profile::cached_peaks("old", old_path);
    REQUIRE(old.has_value());
    CHECK(old->tf32_gflops == 400000);
    CHECK(old->bf16_gflops == 0);
  }
  write_text_atomic(path, "{\"format\": \"something else\"}");
  std::string message;
  try {
    profile::cached_peaks("machine A", path);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.find(path) != std::string::npos);
  CHECK(message.find("urpe bench peaks") != std::string::npos);
}

// bench/precision_table.py (bench/gpu_session.sh precision's table): two rounds of fp32 and bf16
// profiles of a tiny run, named as the session names them; the table's row has both medians, the
// speed-up and a step's memory bf16 / fp32 from the profiles' lines (bf16 keeps less: the FFN's
// activations are 2 bytes). Needs python3 (standard library only): skipped without it.
TEST_CASE("bench/precision_table.py: the precision table from a call's profiles") {
  if (test::run_command("python3 -c 'import re, collections'").code != 0) {
    MESSAGE("skipped: needs python3 to run bench/precision_table.py");
    return;
  }
  const std::string dir = test::make_scratch_dir("urpe_precision_table");
  const std::string env = "URPE_PEAKS_CACHE=" + join_path(dir, "peaks.json") + " ";
  const std::string tiny = "--preset pi-tiny --set seq_len=16 --set d_model=32 --set d_ff=128 --set batch=4 "
                           "--set valid_size=8 --quiet --steps 2:3 ";
  for (const char* precision : {"fp32", "bf16"})
    for (int round = 1; round <= 2; ++round) {
      const std::string out = join_path(dir, std::string("tiny_") + precision + "_" + std::to_string(round));
      const test::CliResult r = test::run_command(env + std::string(URPE_BINARY) + " profile " + tiny +
                                                  "--set precision=" + precision + " --out " + out);
      INFO(r.output);
      REQUIRE(r.code == 0);
    }
  const test::CliResult table =
      test::run_command("python3 " + std::string(URPE_SOURCE_DIR) + "/bench/precision_table.py " + dir);
  INFO(table.output);
  REQUIRE(table.code == 0);
  CHECK(table.output.find("(the mean over 2 round(s)") != std::string::npos);
  const size_t row = table.output.find("| tiny | ");
  REQUIRE(row != std::string::npos);
  std::vector<std::string> cells;
  std::string line = table.output.substr(row, table.output.find('\n', row) - row);
  for (size_t at = 1; at < line.size();) {
    const size_t bar = line.find('|', at);
    if (bar == std::string::npos) break;
    std::string cell = line.substr(at, bar - at);
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    cells.push_back(cell);
    at = bar + 1;
  }
  REQUIRE(cells.size() == 11);  // run, 3 medians, 2 speed-ups, 2 step memories, ratio, 2 peaks
  CHECK(cells[1] != "—");       // fp32 median
  CHECK(cells[2] == "—");       // no tf32 run
  CHECK(cells[3] != "—");       // bf16 median
  CHECK(cells[4] != "—");       // fp32 / bf16
  const double ratio = std::stod(cells[8]);  // a step's memory, bf16 / fp32: deterministic sizes
  CHECK(ratio > 0.3);
  CHECK(ratio < 0.95);
  const test::CliResult empty = test::run_command("python3 " + std::string(URPE_SOURCE_DIR) +
                                                  "/bench/precision_table.py " + join_path(dir, "tiny_fp32_1"));
  CHECK(empty.code != 0);
  CHECK(empty.output.find("no NAME_PRECISION_ROUND profiles") != std::string::npos);
}

TEST_CASE("urpe bench peaks, urpe profile and urpe train --trace on tiny configs") {
  const std::string dir = test::make_scratch_dir("urpe_profile_cli");
  const std::string env = "URPE_PEAKS_CACHE=" + join_path(dir, "peaks.json") + " ";
  const std::string bin = env + std::string(URPE_BINARY) + " ";
  const test::CliResult peaks = test::run_command(bin + "bench peaks --sizes smoke");
  INFO(peaks.output);
  REQUIRE(peaks.code == 0);
  CHECK(peaks.output.find("STREAM triad") != std::string::npos);
  const json::Value cache = json::read_file(join_path(dir, "peaks.json"));
  REQUIRE(cache.at("machines").size() == 1);
  CHECK(cache.at("machines")[0].at("key").as_string().rfind("cpu | ", 0) == 0);
  CHECK(cache.at("machines")[0].at("smoke").as_bool());

  const std::string tiny = "--preset pi-tiny --set seq_len=8 --set d_model=16 --set d_ff=32 --set batch=4 "
                           "--set valid_size=8 --set warmup=1 --quiet ";
  const std::string out = join_path(dir, "prof");
  const test::CliResult r = test::run_command(bin + "profile " + tiny + "--steps 2:3 --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string md = read_text_file(join_path(out, "profile.md"));
  CHECK(md.find("| op | phase | calls | self ms | total ms | % of step | GFLOP/s | GB/s | % of roofline |") !=
        std::string::npos);
  CHECK(md.find("| urpe_self_attention backward | backward | 2 |") != std::string::npos);  // 2 layers a step
  CHECK(md.find("steps recorded: 2, 3") != std::string::npos);
  CHECK(md.find("- peak tensor memory: ") != std::string::npos);  // the allocator's high-water mark
  CHECK(md.find("- a step's memory: ") != std::string::npos);     // live at its start, and its peak above that
  CHECK(md.find("at smoke sizes") != std::string::npos);  // the cache's entry is cited as it is
  CHECK(path_exists(join_path(out, "plots/roofline.png")));
  CHECK_FALSE(path_exists(join_path(out, "run/model.safetensors")));
  CHECK(parse_trace(read_text_file(join_path(out, "trace.json"))).size() > 100);

  // A second profile into the same directory is refused, and bad windows are named.
  const test::CliResult again = test::run_command(bin + "profile " + tiny + "--steps 2:3 --out " + out);
  CHECK(again.code == 1);
  CHECK(again.output.find("already holds a profile (profile.md)") != std::string::npos);
  const test::CliResult bad = test::run_command(bin + "profile " + tiny + "--steps 3:2 --out " + join_path(dir, "bad"));
  CHECK(bad.code == 1);
  CHECK(bad.output.find("option --steps") != std::string::npos);
  const test::CliResult both = test::run_command(bin + "profile --run " + out + " --preset pi-tiny --out " + join_path(dir, "x"));
  CHECK(both.code == 1);
  CHECK(both.output.find("either --run DIR") != std::string::npos);

  // urpe train --trace: the run as usual, plus DIR/profile/ for the default window.
  const std::string run = join_path(dir, "run");
  const test::CliResult t = test::run_command(bin + "train " + tiny + "--set steps=3 --set eval_every=3 --trace --out " + run);
  INFO(t.output);
  REQUIRE(t.code == 0);
  CHECK(path_exists(join_path(run, "model.safetensors")));
  const std::string traced = read_text_file(join_path(run, "profile/profile.md"));
  CHECK(traced.find("steps recorded: 2, 3") != std::string::npos);
  // ... and urpe profile --run of that run.
  const test::CliResult from_run = test::run_command(bin + "profile --run " + run + " --steps 1:1 --quiet --out " +
                                                     join_path(dir, "from_run"));
  INFO(from_run.output);
  CHECK(from_run.code == 0);
  CHECK(path_exists(join_path(dir, "from_run/profile.md")));
}
