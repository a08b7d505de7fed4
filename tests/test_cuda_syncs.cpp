// Host synchronisations of one steady-state CUDA training step (issue 37;
// docs/cuda.md#host-synchronisations): every time the host waits for the GPU the stream runs dry,
// so a step should wait only where it must (the loss read for logging). This suite trains each
// family on a tiny config, counts the waits of step 3 (after the first step's allocations and
// Adam's first update) through tensor/cuda_backend.h's observer, names the op open at each wait,
// prints the table and holds each family to its budget.
//
// Built against the CUDA simulator (test_cuda_sim_syncs) it also checks the count against the
// simulator's own count of the runtime calls that wait (tests/cuda_sim/runtime.cpp), so that no
// wait can bypass urpe's counter. Without a CUDA device: skipped (exit 77).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#if defined(URPE_CUDA_SIM)
#include <cuda_runtime.h>  // the simulator's, for urpe_sim::explicit_wait_count()
#include <urpe_sim_checks.h>  // the simulator's launch records and cuBLAS call log

#include "tensor/cuda_context.h"  // the cuBLAS handle's workspace (needs the simulator's headers here)
#endif

#include "ops/dropout.h"
#include "ops/optimizer_kernels.h"
#include "ops/urpe_attention.h"
#include "ops/urpe_attention_checks.h"
#include "ops/urpe_flash_attention.h"
#include "tensor/cuda_backend.h"
#include "tensor/op_profile.h"
#include "test_util.h"
#include "cuda_training_util.h"
#include "train/config/run_config.h"
#include "train/families/encoder/encoder_trainer.h"
#include "train/families/graphormer/graphormer_trainer.h"
#include "train/families/txl/txl_trainer.h"

using namespace urpe;

namespace {

[[maybe_unused]] const bool skipped_without_cuda =
    (test::skip_without_cuda("host synchronisation suite", "urpe_test_cuda_syncs"), false);

using test::temp_dir;

// The op recorder's hooks, reduced to what attribution needs: the ops open now (innermost last)
// and the phase. Costs and scopes are ignored.
class OpStack final : public profile::Recorder {
 public:
  void begin_op(const char* name, const Device&) override { ops_.emplace_back(name); }
  void begin_op(const std::string& name, const Device&) override { ops_.push_back(name); }
  void end_op() override {
    if (!ops_.empty()) ops_.pop_back();
  }
  void add_cost(const profile::Cost&) override {}
  void begin_scope(const std::string&) override {}
  void end_scope() override {}
  profile::ScopePath scope_path() override { return nullptr; }
  void enter_scopes(const profile::ScopePath&) override {}
  profile::Phase phase() const override { return phase_; }
  void set_phase(profile::Phase phase) override { phase_ = phase; }

  bool outside_ops() const { return ops_.empty(); }
  // "cross_entropy", "linear backward > matmul", or "(no op: forward)" between ops.
  std::string where() const {
    if (ops_.empty()) return std::string("(no op: ") + profile::phase_name(phase_) + ")";
    std::string out = ops_.front();
    for (size_t k = 1; k < ops_.size(); ++k) out += " > " + ops_[k];
    return out;
  }

 private:
  std::vector<std::string> ops_;
  profile::Phase phase_ = profile::Phase::forward;
};

// The waits of one step: by kind, and by (where, kind).
struct StepSyncs {
  cuda::HostSyncCounts counts;
  std::map<std::string, int> by_place;  // "op [kind]" → count
#if defined(URPE_CUDA_SIM)
  uint64_t sim_waits = 0, sim_uploads = 0;
  std::map<std::string, uint64_t> launches;  // kernel → launches in the step
  std::vector<urpe_sim::GemmCall> gemms;     // the step's cuBLAS calls
  bool read_after_update = false;            // the step's 4-byte read (the loss) came after Adam's launch
#endif
};

#if defined(URPE_CUDA_SIM)
std::map<std::string, uint64_t> launches_so_far() {
  std::map<std::string, uint64_t> out;
  for (const urpe_sim::KernelRecord& r : urpe_sim::launch_records()) out[r.kernel] = r.record.launches;
  return out;
}
#endif

// Each family's tiny config of test_cuda_training on CUDA, 4 steps; the encoder clips its gradient
// norm, so the device-side clipping is in what is counted.
Config family_config(const std::string& family) {
  return test::tiny_family_config(family, "cuda", 4, {"clip=1.0"});
}

// Trains `family` for 4 steps and returns the waits of step 3: from the end of step 2 (the loop's
// on_step callback) to the end of step 3 (the same callback, after the loss was read).
StepSyncs syncs_of_step_3(const std::string& family) {
  const Config config = family_config(family);
  const std::string dir = temp_dir(family);
  OpStack ops;
  StepSyncs step;
  bool counting = false;
#if defined(URPE_CUDA_SIM)
  std::map<std::string, uint64_t> launches_before;  // at the end of step 2
#endif
  const cuda::HostSyncObserver previous = cuda::set_host_sync_observer([&](cuda::HostSync kind, size_t bytes) {
    if (!counting) return;
    ++step.counts.by_kind[static_cast<int>(kind)];
    // Between ops (the batch's uploads, the loss read) the size tells them apart.
    const std::string size = bytes > 0 && ops.outside_ops() ? " " + std::to_string(bytes) + " B" : "";
    ++step.by_place[ops.where() + " [" + cuda::host_sync_name(kind) + size + "]"];
#if defined(URPE_CUDA_SIM)
    if (kind == cuda::HostSync::device_to_host && bytes == 4) {
      const char* adam = "adam_multi_tensor_kernel";
      step.read_after_update = launches_so_far()[adam] > launches_before[adam];
    }
#endif
  });
#if defined(URPE_CUDA_SIM)
  uint64_t sim_waits = 0, sim_uploads = 0;
  size_t gemms_before = 0;
#endif
  TrainOptions options;
  options.quiet = true;
  options.on_step = [&](int64_t s, double) {
    if (s == 2) {
      counting = true;
#if defined(URPE_CUDA_SIM)
      sim_waits = urpe_sim::explicit_wait_count();
      sim_uploads = urpe_sim::pageable_upload_count();
      launches_before = launches_so_far();
      gemms_before = urpe_sim::gemm_calls().size();
#endif
    } else if (s == 3) {
      counting = false;
#if defined(URPE_CUDA_SIM)
      step.sim_waits = urpe_sim::explicit_wait_count() - sim_waits;
      step.sim_uploads = urpe_sim::pageable_upload_count() - sim_uploads;
      for (const auto& [kernel, count] : launches_so_far())
        if (count > launches_before[kernel]) step.launches[kernel] = count - launches_before[kernel];
      const std::vector<urpe_sim::GemmCall> calls = urpe_sim::gemm_calls();
      step.gemms.assign(calls.begin() + static_cast<std::ptrdiff_t>(gemms_before), calls.end());
#endif
    }
  };
  {
    const profile::ActiveRecorder active(&ops);
    test::train_family(family, config, dir, options);
  }
  cuda::set_host_sync_observer(previous);
  std::system(("rm -rf '" + dir + "'").c_str());
  return step;
}

void print(const std::string& family, const StepSyncs& step) {
  std::printf("%s: %llu host synchronisations in step 3 (%llu synchronize, %llu device-to-host, %llu pageable upload)\n",
              family.c_str(), static_cast<unsigned long long>(step.counts.total()),
              static_cast<unsigned long long>(step.counts[cuda::HostSync::synchronize]),
              static_cast<unsigned long long>(step.counts[cuda::HostSync::device_to_host]),
              static_cast<unsigned long long>(step.counts[cuda::HostSync::pageable_upload]));
  for (const auto& [place, count] : step.by_place) std::printf("  %3d  %s\n", count, place.c_str());
  std::fflush(stdout);
}

#if defined(URPE_CUDA_SIM)
// The step's kernel launches by kernel (the simulator's records), most launched first: the
// deterministic picture of a step's launch structure that a GPU trace gives in time.
void print_launches(const std::string& family, const StepSyncs& step) {
  std::vector<std::pair<uint64_t, std::string>> rows;
  uint64_t total = 0;
  for (const auto& [kernel, count] : step.launches) {
    rows.emplace_back(count, kernel);
    total += count;
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  std::printf("%s: %llu kernel launches and %zu cuBLAS calls in step 3\n", family.c_str(),
              static_cast<unsigned long long>(total), step.gemms.size());
  for (const auto& [count, kernel] : rows) std::printf("  %4llu  %s\n", static_cast<unsigned long long>(count), kernel.c_str());
  std::fflush(stdout);
}

uint64_t launches_of(const StepSyncs& step, const std::string& kernel) {
  uint64_t n = 0;
  for (const auto& [name, count] : step.launches)
    if (name.find(kernel) != std::string::npos) n += count;
  return n;
}

// Graphormer's multi-hop edge term (models/graphormer.cpp): per-hop tables T_s = EdgeEmb·W_s read
// by embedding_sum. It used to be a per-hop matmul over the (hops, pairs, H) lookups, whose ∂W
// contracted over all B·n² node pairs (7.1 ms of a 34 ms ZINC step on the H200, one call). So:
// no GEMM of the step may contract over more rows than the token count B·(n+1) (the linear
// layers' ∂W, the largest legitimate k), read from the q/k/v projections (k = d_model = 16 in
// tests/cuda_training_util.h's tiny config), and the term is one embedding_sum each way.
void check_graphormer_structure(const StepSyncs& step) {
  constexpr int kDModel = 16;
  int tokens = 0, largest_k = 0;
  for (const urpe_sim::GemmCall& g : step.gemms) {
    if (g.k == kDModel) tokens = std::max({tokens, g.m, g.n});
    largest_k = std::max(largest_k, g.k);
  }
  CHECK(tokens > kDModel);
  CHECK(largest_k <= tokens);
  CHECK(launches_of(step, "embedding_sum_forward_kernel") == 1);
  // Its backward, and the small tables' embedding backward (ops/embedding_cuda.cu: one shared
  // tile, no sort): the node features' four lookups and the joint spatial table.
  CHECK(launches_of(step, "embedding_sum_backward_partial_kernel") == 6);
  CHECK(launches_of(step, "embedding_sum_backward_total_kernel") == 6);
  CHECK(launches_of(step, "embedding_backward_narrow_kernel") == 0);
  CHECK(launches_of(step, "embedding_backward_segments_kernel") == 0);
}
#endif

}  // namespace

// Each family's budget of waits in a steady step, and why (docs/cuda.md#host-synchronisations;
// before issue 37's changes: encoder 14, Transformer-XL 19, Graphormer 29 on these configs).
struct Budget {
  const char* family;
  uint64_t waits;
  const char* why;
};
constexpr Budget kBudgets[] = {
    {"encoder", 1, "the loss read for logging"},
    {"txl", 1, "the loss read (the segment's maps are kept, so the attention op's map check reads them back once per run)"},
    {"graphormer", 1,
     "the loss read (the multi-hop ids' bounds come from the collator, the C map's range from the model that "
     "made it)"},
};

TEST_CASE("the host synchronisations of a steady training step, per family, and where each comes from") {
  for (const Budget& budget : kBudgets) {
    const std::string family = budget.family;
    INFO("family: " << family << " (budget " << budget.waits << ": " << budget.why << ")");
    const StepSyncs step = syncs_of_step_3(family);
    print(family, step);
    CHECK(step.counts.total() > 0);  // at least the loss read for logging
    CHECK(step.counts.total() <= budget.waits);
    CHECK(step.counts[cuda::HostSync::pageable_upload] == 0);  // every upload goes through pinned staging
    CHECK(step.by_place.count("(no op: forward) [device-to-host 4 B]") == 1);  // the loss, read once
#if defined(URPE_CUDA_SIM)
    // Every wait the runtime saw went through urpe's counter (tensor/cuda_backend.h).
    CHECK(step.sim_waits == step.counts[cuda::HostSync::synchronize] + step.counts[cuda::HostSync::device_to_host]);
    CHECK(step.sim_uploads == step.counts[cuda::HostSync::pageable_upload]);
    // The loss is read once Adam's update is queued (train/loop/training_loop.cpp): the GPU runs
    // the update while the host waits, instead of idling through the read's round trip.
    CHECK(step.read_after_update);
    print_launches(family, step);
    if (family == "graphormer") check_graphormer_structure(step);
#endif
  }
}

TEST_CASE("a device map whose range its maker noted is checked without a read back") {
  // Graphormer's per-batch C buckets (models/graphormer.cpp, uploaded_c_map): a new map every
  // step, so the attention op's per-storage cache alone would read each one back.
  const Device gpu = parse_device("cuda");
  cuda::Context* context = gpu.context();
  Rng rng(77);
  const int64_t bsz = 2, heads = 2, n = 5;
  UrpeAttentionParams p;
  p.c_table = Tensor::uniform({heads, 4}, 0.5f, 1.5f, rng).to(gpu);
  std::vector<int32_t> buckets(bsz * n * n);
  for (size_t k = 0; k < buckets.size(); ++k) buckets[k] = static_cast<int32_t>(k % 4);
  const Tensor scores = Tensor::uniform({bsz, heads, n, n}, -1.0f, 1.0f, rng).to(gpu);
  p.c_map = Tensor::from_vector(buckets, {bsz, n, n}, gpu);
  note_bucket_map_range(p.c_map, 0, 3);
  const cuda::HostSyncCounts before = cuda::host_sync_counts(context);
  const Tensor a = urpe_attention(scores, p);
  CHECK(cuda::host_sync_counts(context).total() == before.total());
  // Without the note a fresh map is read back once.
  UrpeAttentionParams q = p;
  q.c_map = Tensor::from_vector(buckets, {bsz, n, n}, gpu);
  const std::vector<float> first = a.to_vector_f32();
  const cuda::HostSyncCounts before_read = cuda::host_sync_counts(context);
  const Tensor b = urpe_attention(scores, q);
  CHECK(cuda::host_sync_counts(context).total() == before_read.total() + 1);  // the map
  CHECK(b.to_vector_f32() == first);
}

TEST_CASE("an upload does not wait and its host source may change at once; a read waits once") {
  const Device gpu = parse_device("cuda");
  cuda::Context* context = gpu.context();
  std::vector<float> host(5000);
  for (size_t k = 0; k < host.size(); ++k) host[k] = 0.5f * static_cast<float>(k) - 7.0f;
  const std::vector<float> first = host;
  const cuda::HostSyncCounts before = cuda::host_sync_counts(context);
  const Tensor a = Tensor::from_vector(host, {5000}, gpu);
  for (float& x : host) x = -x;  // the staging block holds the first values
  const Tensor b = Tensor::from_vector(host, {5000}, gpu);
  CHECK(cuda::host_sync_counts(context).total() == before.total());  // two uploads, no wait
  CHECK(a.to_vector_f32() == first);
  CHECK(b.to_vector_f32() == host);
  const cuda::HostSyncCounts after = cuda::host_sync_counts(context);
  CHECK(after[cuda::HostSync::device_to_host] == before[cuda::HostSync::device_to_host] + 2);
  CHECK(after.total() == before.total() + 2);

  // A large upload goes through the staging block in slices over the threads (tensor/parallel_copy.h):
  // every element arrives, and still no wait.
  std::vector<float> large(3 * (1 << 18) + 1001);  // 3 MiB and a remainder
  for (size_t k = 0; k < large.size(); ++k) large[k] = static_cast<float>(k % 9973) * 0.25f - 17.0f;
  const cuda::HostSyncCounts before_large = cuda::host_sync_counts(context);
  const Tensor c = Tensor::from_vector(large, {static_cast<int64_t>(large.size())}, gpu);
  CHECK(cuda::host_sync_counts(context).total() == before_large.total());
  CHECK(c.to_vector_f32() == large);
}

TEST_CASE("Adam reads each step's lr and bias corrections from device memory the host uploads, without a wait") {
  // CUDA graphs (bench/cuda_notes.md): a replay repeats a launch's arguments, so the per-step
  // scalars live in a buffer at a fixed address that the host rewrites every step.
  const Device gpu = parse_device("cuda");
  cuda::Context* context = gpu.context();
  Rng rng(31);
  struct Twin {
    AdamSlot cpu, gpu;
  };
  std::vector<Twin> twins;
  for (const int64_t n : {int64_t(20000), int64_t(37)}) {  // three kernel chunks, and a small tensor
    const Tensor p = Tensor::uniform({n}, -1.0f, 1.0f, rng), g = Tensor::uniform({n}, -0.5f, 0.5f, rng);
    const Tensor m = Tensor::uniform({n}, -0.1f, 0.1f, rng), v = Tensor::uniform({n}, 0.01f, 0.2f, rng);
    twins.push_back({{p, g, m, v}, {p.to(gpu), g.to(gpu), m.to(gpu), v.to(gpu)}});
  }
  std::vector<AdamSlot> cpu_slots, gpu_slots;
  for (const Twin& t : twins) {
    cpu_slots.push_back(t.cpu);
    gpu_slots.push_back(t.gpu);
  }
  const Tensor scalars = Tensor::zeros({kAdamScalarFloats}, DType::f32, gpu);
  const float rates[] = {1e-2f, 3e-3f};
  for (int step = 1; step <= 2; ++step) {
    AdamHyper hyper;
    hyper.lr = rates[step - 1];
    hyper.step = step;
    hyper.weight_decay = 0.01f;
    // What the step would give with the other step's lr: a kernel that kept a stale lr lands here.
    AdamHyper stale = hyper;
    stale.lr = rates[2 - step];
    std::vector<Tensor> stale_params;
    for (const Twin& t : twins) {
      AdamSlot copy{t.cpu.param.clone(), t.cpu.grad, t.cpu.m.clone(), t.cpu.v.clone()};
      adam_update({copy}, stale);
      stale_params.push_back(copy.param);
    }
    adam_update(cpu_slots, hyper);
    const cuda::HostSyncCounts before = cuda::host_sync_counts(context);
    adam_update(gpu_slots, hyper, scalars);
    CHECK(cuda::host_sync_counts(context).total() == before.total());  // the upload does not wait
    // The buffer holds this step's scalars, bit for bit: what the kernel read.
    const AdamStepScalars expected = adam_step_scalars(hyper);
    const std::vector<float> held = scalars.to_vector_f32();
    CHECK(std::memcmp(held.data(), &expected, sizeof expected) == 0);
    for (size_t k = 0; k < twins.size(); ++k) {
      const std::vector<float> want = twins[k].cpu.param.to_vector_f32(), got = twins[k].gpu.param.to_vector_f32();
      const std::vector<float> wrong = stale_params[k].to_vector_f32();
      REQUIRE(got.size() == want.size());
      size_t off = 0, stale_hits = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        off += std::fabs(got[i] - want[i]) > 1e-6f * (1.0f + std::fabs(want[i]));
        stale_hits += std::fabs(got[i] - wrong[i]) <= 1e-6f * (1.0f + std::fabs(wrong[i]));
      }
      INFO("step " << step << ", tensor " << k);
      CHECK(off == 0);
      CHECK(stale_hits * 10 < got.size());  // the other lr's result is far from it
    }
  }
}

#if defined(URPE_CUDA_SIM)
TEST_CASE("a context gives cuBLAS its workspace at creation, so that a GEMM allocates nothing (CUDA graphs)") {
  const Device gpu = parse_device("cuda");
  cuda::Context& context = *gpu.context();
  const size_t bytes = cuda::Context::cublas_workspace_bytes(context.properties());
  CHECK(bytes == (context.properties().major >= 9 ? size_t(32) << 20 : size_t(4) << 20));
  CHECK(context.cublas_workspace_size() == bytes);
  CHECK(context.cublas_workspace() != nullptr);
  CHECK(urpe_sim::cublas_workspace_bytes(context.cublas()) == bytes);  // what the handle was given
  // Outside the caching allocator: the peak tensor memory stays the tensors'.
  CHECK(context.bytes_in_use() == 0);
}
#endif

#if defined(URPE_CUDA_SIM)
TEST_CASE("a captured Adam update replays each new step: its scalars come from the buffer the host uploads") {
  // The simulator's stream capture (tests/cuda_sim/include/cuda_runtime.h): launches on a
  // capturing stream are recorded, not run, and run with their captured arguments at each
  // cudaGraphLaunch, as on a GPU. Steps 2 and 3 replay the update captured once; before each
  // replay the host uploads that step's scalars (lr changes at step 3), and each replay must give
  // the eager update of that step.
  const Device gpu = parse_device("cuda");
  cuda::Context& context = *gpu.context();
  Rng rng(41);
  const int64_t n = 20000;  // three kernel chunks
  const Tensor p = Tensor::uniform({n}, -1.0f, 1.0f, rng), g = Tensor::uniform({n}, -0.5f, 0.5f, rng);
  const Tensor m = Tensor::uniform({n}, -0.1f, 0.1f, rng), v = Tensor::uniform({n}, 0.01f, 0.2f, rng);
  const std::vector<AdamSlot> eager{{p.to(gpu), g.to(gpu), m.to(gpu), v.to(gpu)}};
  const std::vector<AdamSlot> replayed{{p.to(gpu), g.to(gpu), m.to(gpu), v.to(gpu)}};
  const Tensor eager_scalars = Tensor::zeros({kAdamScalarFloats}, DType::f32, gpu);
  const Tensor scalars = Tensor::zeros({kAdamScalarFloats}, DType::f32, gpu);
  auto hyper_of = [](int step) {
    AdamHyper h;
    h.lr = step < 3 ? 1e-2f : 2e-3f;
    h.step = step;
    h.weight_decay = 0.01f;
    return h;
  };
  adam_update(eager, hyper_of(1), eager_scalars);  // step 1, eager on both
  adam_update(replayed, hyper_of(1), scalars);
  const std::vector<float> after_step_1 = replayed[0].param.to_vector_f32();

  // Capture the update once (the step-2 scalars uploaded before, outside the capture).
  kernels::upload_adam_step_scalars_cuda(scalars, hyper_of(2));
  REQUIRE(cudaStreamBeginCapture(context.stream(), cudaStreamCaptureModeGlobal) == cudaSuccess);
  kernels::launch_adam_update_cuda(replayed, scalars);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(context.stream(), &graph) == cudaSuccess);
  CHECK(urpe_sim::graph_nodes(graph) == std::vector<std::string>{"adam_multi_tensor_kernel"});
  CHECK(replayed[0].param.to_vector_f32() == after_step_1);  // recorded, not run
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph) == cudaSuccess);

  for (int step = 2; step <= 3; ++step) {
    INFO("step " << step);
    adam_update(eager, hyper_of(step), eager_scalars);
    if (step > 2) kernels::upload_adam_step_scalars_cuda(scalars, hyper_of(step));
    REQUIRE(cudaGraphLaunch(exec, context.stream()) == cudaSuccess);
    // The same kernel on the same values: bit for bit.
    CHECK(replayed[0].param.to_vector_f32() == eager[0].param.to_vector_f32());
    CHECK(replayed[0].m.to_vector_f32() == eager[0].m.to_vector_f32());
    CHECK(replayed[0].v.to_vector_f32() == eager[0].v.to_vector_f32());
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // A capture cannot hold a host wait: the emulation refuses it as CUDA does.
  REQUIRE(cudaStreamBeginCapture(context.stream(), cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK(cudaStreamSynchronize(context.stream()) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t refused = nullptr;
  CHECK(cudaStreamEndCapture(context.stream(), &refused) == cudaErrorStreamCaptureInvalidated);
  CHECK(refused == nullptr);
  cudaGetLastError();  // clear the recorded error
}
#endif

#if defined(URPE_CUDA_SIM)
TEST_CASE("a captured dropout replays each step's mask: its seed comes from the step anchor the host uploads") {
  // ops/dropout.h, "Seeds and CUDA graphs". Each step marks its start (the stream's seed and
  // offset uploaded to the device), draws one seed it does not use, then one for the dropout, whose
  // delta (4) a graph freezes. Step 1 runs eager, step 2 is captured and its graph replayed for
  // steps 2 and 3 with a new mark before each launch: every mask must be the CPU's for that step,
  // drawn from a copy of the stream, bit for bit.
  const Device gpu = parse_device("cuda");
  cuda::Context& context = *gpu.context();
  Rng data(43);
  const Tensor x = Tensor::uniform({3, 1001}, 0.5f, 1.5f, data);  // no zeros: a dropped element is the only 0
  const Tensor x_gpu = x.to(gpu);
  const float p = 0.3f;
  Rng reference(2024, 40), stream(2024, 40);  // the CPU's copy and the device's: the same draws
  auto reference_mask = [&] {
    reference.next_seed();
    return dropout(x, p, take_dropout_seed(reference), true).to_vector_f32();
  };
  std::vector<std::vector<float>> masks;

  mark_dropout_step(stream, gpu);  // step 1, eager
  stream.next_seed();
  masks.push_back(dropout(x_gpu, p, take_dropout_seed(stream), true).to_vector_f32());
  CHECK(masks.back() == reference_mask());

  mark_dropout_step(stream, gpu);  // step 2, captured (the output's block is cached by step 1)
  stream.next_seed();
  const DropoutSeed captured_seed = take_dropout_seed(stream);
  REQUIRE(cudaStreamBeginCapture(context.stream(), cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK_THROWS_WITH_AS(mark_dropout_step(stream, gpu), doctest::Contains("while the stream captures"), Error);
  const Tensor y = dropout(x_gpu, p, captured_seed, true);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(context.stream(), &graph) == cudaSuccess);
  CHECK(urpe_sim::graph_nodes(graph) == std::vector<std::string>{"dropout_philox_kernel<T>"});
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph) == cudaSuccess);
  for (int step = 2; step <= 3; ++step) {
    INFO("step " << step);
    if (step == 3) {  // the host's part of a replayed step: mark its start, advance past its draws
      mark_dropout_step(stream, gpu);
      stream.reserve(8);
    }
    REQUIRE(cudaGraphLaunch(exec, context.stream()) == cudaSuccess);
    masks.push_back(y.to_vector_f32());
    CHECK(masks.back() == reference_mask());
  }
  CHECK(masks[1] != masks[0]);
  CHECK(masks[2] != masks[1]);  // the replay drew step 3's mask, not the captured step's
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // The fused attention's dropout through the anchor: the same output and gradients, bit for bit,
  // as the same seed passed by value, on the scalar kernels and on the tensor-core ones (TF32).
  Tensor q = Tensor::uniform({1, 2, 9, 16}, -1.0f, 1.0f, data), k = Tensor::uniform({1, 2, 9, 16}, -1.0f, 1.0f, data);
  Tensor v = Tensor::uniform({1, 2, 9, 16}, -1.0f, 1.0f, data);
  const Tensor upstream = Tensor::uniform({1, 2, 9, 16}, -1.0f, 1.0f, data).to(gpu);
  UrpeAttentionParams params;
  params.scale = 0.25f;
  for (bool tf32 : {false, true}) {
    INFO("tf32 " << tf32);
    context.set_tf32(tf32);
    mark_dropout_step(stream, gpu);
    stream.next_seed();
    const DropoutSeed anchored = take_dropout_seed(stream);
    std::vector<std::vector<float>> results[2];
    for (int by_value = 0; by_value < 2; ++by_value) {
      std::vector<Tensor> leaves;
      for (const Tensor& t : {q, k, v}) {
        Tensor leaf = t.to(gpu);
        leaf.set_requires_grad(true);
        leaves.push_back(leaf);
      }
      const AttentionDropout drop{0.25f, by_value ? DropoutSeed(anchored.value) : anchored};
      const Tensor out = urpe_flash_attention(leaves[0], leaves[1], leaves[2], params, drop);
      out.backward(upstream);
      results[by_value].push_back(out.to_vector_f32());
      for (const Tensor& leaf : leaves) results[by_value].push_back(leaf.grad().to_vector_f32());
    }
    CHECK(results[0] == results[1]);
  }
  context.set_tf32(false);
}
#endif

#if defined(URPE_CUDA_SIM)
TEST_CASE("the blocks the caching allocator hands out in two steady encoder steps (a CUDA graph replays one step's)") {
  // A captured step replays the addresses of the step it captured, so every allocation of the
  // next step would have to return the same block (the allocations item of
  // bench/cuda_notes.md#cuda-graphs-what-a-capture-of-the-steady-step-needs-issue-37, where the
  // result is recorded). Logs each block the allocator hands out in steps 2 and 3 of the tiny
  // encoder (dropout on, clipping on): the requests (class sizes, in order) must be the same; how
  // many addresses differ, and whether step 3 takes the same set of blocks, is printed.
  const Config config = family_config("encoder");
  const std::string dir = temp_dir("encoder-allocations");
  using Log = std::vector<std::pair<const void*, size_t>>;
  Log steps[2];
  Log* current = nullptr;
  const cuda::AllocationObserver previous = cuda::set_allocation_observer([&](const void* block, size_t bytes) {
    if (current) current->emplace_back(block, bytes);
  });
  TrainOptions options;
  options.quiet = true;
  options.on_step = [&](int64_t s, double) { current = s == 1 ? &steps[0] : s == 2 ? &steps[1] : nullptr; };
  test::train_family("encoder", config, dir, options);
  cuda::set_allocation_observer(previous);
  std::system(("rm -rf '" + dir + "'").c_str());

  REQUIRE(!steps[0].empty());
  std::vector<size_t> sizes[2];
  std::vector<const void*> blocks[2];
  for (int s = 0; s < 2; ++s)
    for (const auto& [block, bytes] : steps[s]) {
      sizes[s].push_back(bytes);
      blocks[s].push_back(block);
    }
  CHECK(sizes[0] == sizes[1]);
  size_t moved = 0, first_moved = steps[0].size();
  for (size_t i = 0; i < std::min(steps[0].size(), steps[1].size()); ++i)
    if (blocks[0][i] != blocks[1][i]) {
      ++moved;
      first_moved = std::min(first_moved, i);
    }
  std::sort(blocks[0].begin(), blocks[0].end());
  std::sort(blocks[1].begin(), blocks[1].end());
  std::printf("encoder: %zu allocations in step 2, %zu in step 3; %zu at another address in step 3 than at the "
              "same place in step 2 (the first: allocation %zu); the same set of blocks: %s\n",
              steps[0].size(), steps[1].size(), moved, first_moved, blocks[0] == blocks[1] ? "yes" : "no");
  std::fflush(stdout);
}
#endif
