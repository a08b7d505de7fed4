// The arithmetic of data parallelism (train/dist/data_parallel.h), without MPI: a communicator
// that plays a second rank from a recorded buffer checks the weighting of the gradient average,
// the global loss, the stop flag, a parameter only the other rank's batch reached, and the batch
// shards. (test_dist runs the real thing under mpirun.)
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "tensor/error.h"
#include "train/dist/data_parallel.h"

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
