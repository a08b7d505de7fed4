// The arithmetic of data parallelism (base/dist/data_parallel.h), without MPI: a communicator
// that plays a second rank from a recorded buffer checks the weighting of the gradient average,
// the global loss, the stop flag, a parameter only the other rank's batch reached, and the batch
// shards; and Adam's sharded mode (ZeRO-1) with one rank against the unsharded Adam, and the size
// of each rank's moments with two. (test_dist runs the real thing under mpirun.)
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tensor/error.h"
#include "base/dist/data_parallel.h"
#include "train/optim/optimizer.h"

using namespace urpe;

namespace {

// Rank `rank` of 2; the other rank's contribution to every all-reduce is `peer`.
class RecordedPeer final : public dist::Communicator {
 public:
  RecordedPeer(int rank, std::vector<float> peer) : peer_(std::move(peer)) {
    rank_ = rank;
    size_ = 2;
  }
  std::string describe() const override { return "recorded peer"; }
  void all_reduce_sum(float* data, int64_t n) override {
    REQUIRE(static_cast<size_t>(n) == peer_.size());
    for (int64_t i = 0; i < n; ++i) data[i] += peer_[static_cast<size_t>(i)];
  }
  void all_reduce_sum(double*, int64_t) override { FAIL("unexpected"); }
  void broadcast(std::string&) override {}
  std::vector<float> all_gather(const std::vector<float>& mine) override { return mine; }
  void reduce_scatter_sum(const float*, float*, int64_t) override { FAIL("unexpected"); }
  void all_gather(const float*, float*, int64_t) override { FAIL("unexpected"); }
  [[noreturn]] void abort(int code) override { throw Error("abort " + std::to_string(code)); }

 private:
  std::vector<float> peer_;
};

Tensor parameter(const std::vector<float>& values) {
  Tensor p = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
  p.set_requires_grad(true);
  return p;
}

}  // namespace

TEST_CASE("the gradients are averaged weighted by each rank's number of targets") {
  Tensor a = parameter({0, 0}), b = parameter({0});
  a.impl().grad = Tensor::from_vector(std::vector<float>{1.0f, 2.0f}, {2}).impl_ptr();
  b.impl().grad = Tensor::from_vector(std::vector<float>{4.0f}, {1}).impl_ptr();
  // This rank: loss 1.0 over 3 targets. The peer: loss 2.0 over 1 target, gradients {5, 6 | 8},
  // already weighted (x1); flags 1, 1; then weight * loss, weight, stop.
  RecordedPeer comm(0, {5, 6, 8, 1, 1, 2.0f, 1.0f, 1.0f});
  const dist::StepSync s = dist::average_gradients(comm, {a, b}, 1.0, 3.0, false);
  CHECK(s.loss == doctest::Approx((3 * 1.0 + 2.0) / 4));
  CHECK(s.stop);  // the peer asked to stop
  CHECK(a.grad().to_vector_f32() == std::vector<float>{(3 * 1 + 5) / 4.0f, (3 * 2 + 6) / 4.0f});
  CHECK(b.grad().to_vector_f32() == std::vector<float>{(3 * 4 + 8) / 4.0f});
}

TEST_CASE("a parameter only the other rank's batch reached gets the average here too") {
  Tensor a = parameter({0}), unused = parameter({0, 0});
  a.impl().grad = Tensor::from_vector(std::vector<float>{2.0f}, {1}).impl_ptr();
  RecordedPeer comm(1, {2, 4, 6, 1, 1, 1.0f, 1.0f, 0.0f});
  const dist::StepSync s = dist::average_gradients(comm, {a, unused}, 3.0, 1.0, false);
  CHECK(!s.stop);
  CHECK(s.loss == doctest::Approx(2.0));
  CHECK(a.grad().to_vector_f32() == std::vector<float>{2.0f});
  REQUIRE(unused.grad().defined());
  CHECK(unused.grad().to_vector_f32() == std::vector<float>{2.0f, 3.0f});
}

TEST_CASE("a parameter no rank reached keeps no gradient") {
  Tensor a = parameter({0});
  RecordedPeer comm(0, {0, 0, 1.0f, 1.0f, 0.0f});
  dist::average_gradients(comm, {a}, 1.0, 1.0, false);
  CHECK(!a.grad().defined());
}

TEST_CASE("batch shards: equal rows per rank, or one error naming the key and the ranks") {
  RecordedPeer rank1(1, {});
  const dist::Shard s = dist::batch_shard(rank1, 8);
  CHECK(s.begin == 4);
  CHECK(s.count == 4);
  CHECK_THROWS_WITH(dist::batch_shard(rank1, 5),
                    "config: batch = 5 is the global batch and must divide evenly across the 2 ranks (mpirun -np "
                    "2); use a multiple of 2");
  const Tensor x = Tensor::from_vector(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}, {2, 4});
  CHECK(dist::shard_rows(x, {2, 2}, 1).to_vector_i32() == std::vector<int32_t>{2, 3, 6, 7});
  CHECK(dist::shard_rows(x, {1, 1}, 0).to_vector_i32() == std::vector<int32_t>{4, 5, 6, 7});
}

// ---- ZeRO-1 (Adam's sharded mode, train/optim/optimizer_sharded.cpp) without MPI ----

namespace {

// Three parameters of 5, 4 and 3 elements (12 in all), random values.
std::vector<Tensor> three_parameters(uint64_t seed) {
  Rng rng(seed);
  std::vector<Tensor> params;
  for (int64_t n : {5, 4, 3}) {
    Tensor p = Tensor::normal({n}, 0.0f, 1.0f, rng);
    p.set_requires_grad(true);
    params.push_back(p);
  }
  return params;
}

}  // namespace

TEST_CASE("a rank's range of the flat parameters: ceil(P/K) elements, the last one shorter") {
  RecordedPeer rank0(0, {}), rank1(1, {});
  CHECK(dist::optimizer_shard_stride(rank1, 13) == 7);
  CHECK(dist::optimizer_shard(rank0, 13).begin == 0);
  CHECK(dist::optimizer_shard(rank0, 13).end == 7);
  CHECK(dist::optimizer_shard(rank1, 13).begin == 7);
  CHECK(dist::optimizer_shard(rank1, 13).end == 13);
  CHECK(dist::optimizer_shard(rank1, 1).size() == 0);  // more ranks than elements: an empty range
}

TEST_CASE("sharded over 2 ranks, each rank holds the moments of its half of the parameters only") {
  RecordedPeer rank0(0, {}), rank1(1, {});
  const std::vector<Tensor> params = three_parameters(1);
  // 12 elements: rank 0 owns [0, 6) (all of the first parameter, 1 of the second), rank 1 [6, 12).
  const Adam whole(params), half0(params, {}, rank0), half1(params, {}, rank1);
  CHECK(whole.moment_elements() == 2 * 12);
  CHECK(half0.moment_elements() == 2 * 6);
  CHECK(half1.moment_elements() == 2 * 6);
  CHECK(half0.state_keys() == whole.state_keys());
}

TEST_CASE("sharded with one rank, Adam takes the same steps and saves the same state as unsharded") {
  for (const float clip : {0.0f, 0.5f}) {
    INFO("clip " << clip);
    const std::vector<Tensor> a = three_parameters(2), b = three_parameters(2);
    AdamConfig config;
    config.weight_decay = 0.01f;
    config.clip_norm = clip;
    Adam plain(a, config), sharded(b, config, dist::world());
    REQUIRE(sharded.sharded());
    Rng rng(3);
    for (int step = 1; step <= 4; ++step) {
      for (size_t k = 0; k < a.size(); ++k) {
        a[k].zero_grad();
        b[k].zero_grad();
        if (k == 1 && step == 2) continue;  // a parameter without a gradient in a step is left alone
        const Tensor g = Tensor::normal(a[k].shape(), 0.0f, 1.0f, rng);
        a[k].impl().grad = g.clone().impl_ptr();
        b[k].impl().grad = g.clone().impl_ptr();
      }
      plain.step(1e-2f);
      const dist::StepSync s = sharded.step_sharded(1e-2f, 0.5, 1.0, false);
      CHECK(s.loss == 0.5);
    }
    for (size_t k = 0; k < a.size(); ++k) CHECK(a[k].to_vector_f32() == b[k].to_vector_f32());
    const auto state_a = plain.state(), state_b = sharded.state();
    REQUIRE(state_a.size() == state_b.size());
    for (size_t e = 0; e < state_a.size(); ++e) {
      INFO(state_a[e].first);
      CHECK(state_a[e].first == state_b[e].first);
      if (e == 0) CHECK(state_a[e].second.to_vector_i32() == state_b[e].second.to_vector_i32());
      else CHECK(state_a[e].second.to_vector_f32() == state_b[e].second.to_vector_f32());
    }
    // The state loads back into another sharded optimizer.
    Adam restored(three_parameters(2), config, dist::world());
    restored.load_state(state_a);
    const auto state_c = restored.state();
    for (size_t e = 1; e < state_a.size(); ++e) CHECK(state_a[e].second.to_vector_f32() == state_c[e].second.to_vector_f32());
    CHECK(restored.steps() == 4);
  }
}
