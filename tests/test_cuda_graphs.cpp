// A training step captured as a CUDA graph (cuda_graph = on; train/loop/captured_step.h,
// docs/cuda.md#cuda-graphs): the allocator's graph pools, the context's refusals while it
// captures, and the tiny encoder trained eagerly and with the switch, which must give the same
// losses and parameters bit for bit, with one host wait per replayed step, and fall back to
// eager (the same numbers again) when the capture fails. Built against the CUDA simulator
// (test_cuda_sim_graphs) the capture is the simulator's emulation, which refuses a wait or an
// allocation inside it as CUDA does. Without a CUDA device: skipped (exit 77). No timing here:
// `urpe bench step --set cuda_graph=on` measures on a GPU.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/io/safetensors.h"
#include "ops/linear_cross_entropy.h"
#include "cuda_training_util.h"
#include "tensor/cuda_backend.h"
#include "test_util.h"
#include "train/config/run_config.h"
#include "train/families/encoder/encoder_trainer.h"

#if defined(URPE_CUDA_SIM)
#include <urpe_sim_checks.h>  // urpe_sim::graph_nodes

#include "tensor/cuda_context.h"  // the allocator and the context (needs the simulator's headers here)
#endif

using namespace urpe;

namespace {

[[maybe_unused]] const bool skipped_without_cuda =
    (test::skip_without_cuda("CUDA graph suite", "urpe_test_cuda_graphs"), false);

// A run of the tiny encoder: every step's loss, the final parameters (and Adam's moments), and
// each step's host waits: those counted from the end of step s − 1 (the loop's on_step, after the
// loss read) to the end of step s, which hold step s − 1's evaluation when it had one.
struct EncoderRun {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;
  std::vector<uint64_t> waits;     // [s − 1]: step s's window
  std::vector<uint64_t> sim_waits;  // the same windows, as the simulator counts its waiting calls
  std::vector<std::string> metric_rows;  // metrics.csv's rows: step, split, loss, metric
  std::string stderr_text;
};

// tests/cuda_training_util.h's tiny encoder (dropout 0.1) with clipping on, on `task`: etp (the
// logits, then cross_entropy) or pi (the head fused with the loss, linear_cross_entropy); `graph`
// switches the capture. `at_step_2` runs at the end of step 2 (before the capture).
EncoderRun train_run(const Config& config, const std::string& family, const std::function<void()>& at_step_2 = {});

EncoderRun train_tiny_encoder(bool graph, int steps, const std::function<void()>& at_step_2 = {},
                              const std::string& task = "etp") {
  const Config config = resolve_config(
      "", "", {"seq_len=12", "vocab=6", "layers=2", "d_model=16", "heads=2", "d_ff=32", "batch=4",
               "steps=" + std::to_string(steps), "warmup=2", "eval_every=4", "valid_size=8", "dropout=0.1",
               "task=" + task, "pe=urpe", "lr=0.01", "attention=materialized", "clip=0.5",
               std::string("cuda_graph=") + (graph ? "on" : "off"), "device=cuda"});
  return train_run(config, "encoder", at_step_2);
}

// A run of config (train_family: "encoder" or "graphormer"), recorded as EncoderRun says.
EncoderRun train_run(const Config& config, const std::string& family, const std::function<void()>& at_step_2) {
  const bool graph = config.get_bool("cuda_graph");
  const std::string dir = test::temp_dir(graph ? "graph" : "eager");
  EncoderRun run;
  uint64_t waits = 0;
  const cuda::HostSyncObserver previous = cuda::set_host_sync_observer([&](cuda::HostSync, size_t) { ++waits; });
#if defined(URPE_CUDA_SIM)
  uint64_t sim_start = urpe_sim::explicit_wait_count();
#endif
  TrainOptions options;
  options.quiet = true;
  options.on_step = [&](int64_t s, double loss) {
    run.losses.push_back(loss);
    run.waits.push_back(waits);
    waits = 0;
#if defined(URPE_CUDA_SIM)
    run.sim_waits.push_back(urpe_sim::explicit_wait_count() - sim_start);
    sim_start = urpe_sim::explicit_wait_count();
#endif
    if (s == 2 && at_step_2) at_step_2();
  };
  // The run's stderr (the fallback's one line), through a file.
  const std::string err_path = dir + ".stderr";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int file = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(file, 2);
  ::close(file);
  test::train_family(family, config, dir, options);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  cuda::set_host_sync_observer(previous);
  std::ifstream in(err_path);
  std::stringstream text;
  text << in.rdbuf();
  run.stderr_text = text.str();
  std::ifstream metrics(dir + "/metrics.csv");
  for (std::string line; std::getline(metrics, line);) {
    size_t cut = 0;
    for (int commas = 0; commas < 4 && cut != std::string::npos; ++commas) cut = line.find(',', cut + (commas > 0));
    run.metric_rows.push_back(line.substr(0, cut));
  }
  const TensorFile checkpoint = load_safetensors(dir + "/model.safetensors");
  for (const NamedTensor& t : checkpoint.tensors)
    if (t.first.rfind("model.", 0) == 0 || t.first.rfind("adam.", 0) == 0) run.parameters.push_back(t);
  std::system(("rm -rf '" + dir + "' '" + err_path + "'").c_str());
  return run;
}

void check_same(const EncoderRun& a, const EncoderRun& b) {
  CHECK(a.metric_rows == b.metric_rows);  // the train and valid losses and metrics as logged
  CHECK(a.metric_rows.size() > 2);
  REQUIRE(a.losses.size() == b.losses.size());
  for (size_t k = 0; k < a.losses.size(); ++k) {
    INFO("step " << k + 1);
    CHECK(a.losses[k] == b.losses[k]);  // bit for bit
  }
  REQUIRE(a.parameters.size() == b.parameters.size());
  REQUIRE(!a.parameters.empty());
  for (size_t k = 0; k < a.parameters.size(); ++k) {
    INFO(a.parameters[k].first);
    CHECK(a.parameters[k].first == b.parameters[k].first);
    CHECK(a.parameters[k].second.to_vector_f32() == b.parameters[k].second.to_vector_f32());
  }
}

// A captured run: no fallback said on stderr, and steps 6 and 7 (replays whose windows hold no
// evaluation) wait for the host once each, the loss read, by urpe's count and by the simulator's.
void check_one_wait_per_replay(const EncoderRun& graph) {
  INFO("stderr: " << graph.stderr_text);
  CHECK(graph.stderr_text.find("cuda_graph") == std::string::npos);  // no fallback
  for (int s : {6, 7}) {
    INFO("step " << s);
    CHECK(graph.waits[s - 1] == 1);
#if defined(URPE_CUDA_SIM)
    CHECK(graph.sim_waits[s - 1] == 1);
#endif
  }
}

}  // namespace

#if defined(URPE_CUDA_SIM)
TEST_CASE("a graph pool: blocks from the eager cache, freed back to the pool only, eager again when it retires") {
  cuda::CachingAllocator allocator(0);
  const size_t bytes = 3000;  // class 3072
  void* cached = allocator.allocate(bytes);
  allocator.release(cached, bytes);  // on the eager free list
  REQUIRE(allocator.bytes_cached() == cuda::CachingAllocator::size_class(bytes));

  const int pool = allocator.create_pool();
  allocator.set_active_pool(pool);
  void* taken = allocator.allocate(bytes);
  CHECK(taken == cached);  // taken from the eager cache: no cudaMalloc
  CHECK(allocator.owned_by_pool(taken));
  CHECK(allocator.bytes_cached() == 0);
  // Nothing of another class is cached: a capture may not call cudaMalloc.
  CHECK_THROWS_WITH_AS(allocator.allocate(100000), doctest::Contains("cannot call cudaMalloc"), Error);
  allocator.release(taken, bytes);  // back to the pool, not to the eager lists
  CHECK(allocator.bytes_cached() == 0);
  CHECK(allocator.pool_free_bytes(pool) == cuda::CachingAllocator::size_class(bytes));
  CHECK(allocator.allocate(bytes) == taken);  // reused inside the capture (stream-ordered)
  allocator.release(taken, bytes);
  allocator.set_active_pool(0);

  // Eager again: the pool's block is not handed out; a new one comes from the driver.
  void* eager = allocator.allocate(bytes);
  CHECK(eager != taken);
  // An eager block freed while the pool is active is the graph's from then on (the captured work
  // may have read it).
  allocator.set_active_pool(pool);
  allocator.release(eager, bytes);
  CHECK(allocator.owned_by_pool(eager));
  CHECK(allocator.pool_bytes(pool) == 2 * cuda::CachingAllocator::size_class(bytes));
  allocator.set_active_pool(0);

  // Retired (its graph destroyed): its blocks are the eager cache's.
  allocator.retire_pool(pool);
  CHECK(!allocator.owned_by_pool(taken));
  CHECK(allocator.bytes_cached() == 2 * cuda::CachingAllocator::size_class(bytes));
  CHECK(allocator.pool_bytes(pool) == 0);
  void* again = allocator.allocate(bytes);
  CHECK((again == taken || again == eager));
  allocator.release(again, bytes);
}

TEST_CASE("a pool's block still live when its graph goes returns to the eager cache when released") {
  cuda::CachingAllocator allocator(0);
  const size_t bytes = 1024;
  allocator.release(allocator.allocate(bytes), bytes);
  const int pool = allocator.create_pool();
  allocator.set_active_pool(pool);
  void* live = allocator.allocate(bytes);
  allocator.set_active_pool(0);
  allocator.retire_pool(pool);
  CHECK(allocator.bytes_cached() == 0);
  allocator.release(live, bytes);
  CHECK(allocator.bytes_cached() == cuda::CachingAllocator::size_class(bytes));
  CHECK(!allocator.owned_by_pool(live));
}

TEST_CASE("a capture refuses an upload and a host wait with an error naming it, and records stream work") {
  const Device gpu = parse_device("cuda");
  cuda::Context& context = *gpu.context();
  Rng rng(7);
  const Tensor host = Tensor::uniform({1000}, 0.5f, 1.5f, rng);
  const Tensor x = host.to(gpu);
  Tensor y = Tensor::zeros({1000}, DType::f32, gpu);
  y.fill(2.0f);
  { const Tensor dropped = host.to(gpu); }  // a cached block of the class the refused upload asks for

  context.begin_capture();
  CHECK(context.capturing());
  CHECK_THROWS_WITH_AS(host.to(gpu), doctest::Contains("an upload from the host inside the captured step"), Error);
  CHECK_THROWS_WITH_AS(cuda::synchronize(&context), doctest::Contains("a host wait for the GPU"), Error);
  context.abort_capture();
  CHECK(!context.capturing());
  CHECK(context.allocator().active_pool() == 0);

  // A capture of a copy: recorded, run at each launch, with the values the source holds then.
  context.begin_capture();
  y.copy_from(x);
  const cuda::CapturedGraphPtr graph = context.end_capture();
  CHECK(urpe_sim::graph_nodes(graph->graph()) == std::vector<std::string>{"memcpy"});
  CHECK(y.to_vector_f32() == std::vector<float>(1000, 2.0f));  // not run by the capture
  graph->launch();
  CHECK(y.to_vector_f32() == host.to_vector_f32());
}
#endif

TEST_CASE("linear_cross_entropy counts its targets on the device: no host wait, a bad target raised at the next read") {
  // The fused head of position identification: its M (targets counted) used to be read back at
  // every call, which a captured step cannot hold.
  const Device gpu = parse_device("cuda");
  Rng rng(5);
  const Tensor h = Tensor::uniform({6, 4}, -1.0f, 1.0f, rng), w = Tensor::uniform({3, 4}, -1.0f, 1.0f, rng);
  const Tensor targets = Tensor::from_vector(std::vector<int32_t>{0, 2, -100, 1, 1, -100}, {6});
  const Tensor loss = linear_cross_entropy(h, w, Tensor(), targets, -100);
  uint64_t waits = 0;
  const cuda::HostSyncObserver previous = cuda::set_host_sync_observer([&](cuda::HostSync, size_t) { ++waits; });
  const Tensor loss_gpu = linear_cross_entropy(h.to(gpu), w.to(gpu), Tensor(), targets.to(gpu), -100);
  CHECK(waits == 0);
  CHECK(std::abs(loss_gpu.item() - loss.item()) <= 1e-6f * std::abs(loss.item()));  // M = 4 on both
  const Tensor bad = Tensor::from_vector(std::vector<int32_t>{0, 2, -100, 3, 1, -100}, {6});
  const Tensor unread = linear_cross_entropy(h.to(gpu), w.to(gpu), Tensor(), bad.to(gpu), -100);
  CHECK_THROWS_WITH_AS(unread.item(), doctest::Contains("target 3 at row 3 is out of range [0, 3)"), Error);
  cuda::set_host_sync_observer(previous);
}

TEST_CASE("the tiny encoder trained with cuda_graph = on equals eager bit for bit, one host wait per replayed step") {
  // Dropout 0.1 (its masks from the step anchor), clipping at 0.5: step 3 is captured, steps 4–7
  // replay it. Even token prediction (cross_entropy) and position identification (the fused head).
  const int steps = 7;
  for (const std::string task : {"etp", "pi"}) {
    INFO("task " << task);
    const EncoderRun eager = train_tiny_encoder(false, steps, {}, task);
    const EncoderRun graph = train_tiny_encoder(true, steps, {}, task);
    check_same(eager, graph);
    check_one_wait_per_replay(graph);  // steps 4 … 7 replay
  }
}

TEST_CASE("a capture that fails says so once on stderr and the run goes on eagerly, with the same numbers") {
  // A failure injected into the capture at step 3: its first allocation throws (through the
  // allocator's observer, as an op that reads the device or uploads would throw inside it). Step 3
  // allocates nothing before its capture (the batch goes to the static buffers, the pool is
  // pre-filled without the observer), so the first allocation after step 2 is the capture's.
  const int steps = 5;
  const EncoderRun eager = train_tiny_encoder(false, steps);
  bool armed = false;
  int injected = 0;
  const cuda::AllocationObserver previous = cuda::set_allocation_observer([&](const void*, size_t) {
    if (armed) {
      armed = false;
      ++injected;
      URPE_FAIL("an allocation refused by the test");
    }
  });
  const EncoderRun fallback = train_tiny_encoder(true, steps, [&] { armed = true; });
  cuda::set_allocation_observer(previous);
  CHECK(injected == 1);
  check_same(eager, fallback);
  INFO("stderr: " << fallback.stderr_text);
  const std::string line = "cuda_graph: the training step could not be captured; every step runs eagerly";
  CHECK(fallback.stderr_text.find(line + ": an allocation refused by the test") != std::string::npos);
  CHECK(fallback.stderr_text.find(line) == fallback.stderr_text.rfind(line));  // said once
}

TEST_CASE("tiny Graphormer with cuda_graph = on equals eager with the same fixed shapes bit for bit") {
  // Graphormer's batches padded to one shape (fixed_shapes; cuda_graph = on implies it): the
  // eager run with fixed_shapes = true and the captured run (step 3 captured, 4–7 replayed) log
  // the same losses and end with the same parameters and Adam moments, bit for bit; dropout 0.1
  // everywhere (input, attention, outputs), clipping at 0.5, URPE; one host wait per replayed step.
  // The batches' own sizes differ from step to step (toy molecules of 1–16 atoms), so the
  // replays read new ids, maps and targets at the same addresses.
  const int steps = 7;
  auto config = [&](bool graph) {
    Config c = test::tiny_family_config("graphormer", "cuda", steps);
    for (const std::string& set : {std::string("dropout=0.1"), std::string("attention_dropout=0.1"),
                                   std::string("input_dropout=0.1"), std::string("clip=0.5"),
                                   std::string("fixed_shapes=true"), std::string("cuda_graph=") + (graph ? "on" : "off")})
      c.apply_override(set);
    return c;
  };
  const EncoderRun eager = train_run(config(false), "graphormer");
  const EncoderRun graph = train_run(config(true), "graphormer");
  check_same(eager, graph);
  check_one_wait_per_replay(graph);
}
