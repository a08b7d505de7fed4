// What the autograd graph keeps alive for backward (autograd/node.h): a node holds data-less
// stand-ins for its inputs, so an input whose values no backward reads (a residual sum's operands,
// a permute's input) is freed after the forward, and gradients still reach every leaf.
#include <vector>

#include "ops/matmul.h"
#include "ops/shape.h"
#include "tensor/host_allocator.h"
#include "test_util.h"

using namespace urpe;
using test::random_param;
using test::random_values;

TEST_CASE("graph edges: linear with a bias allocates its output alone, and a permute's input is not kept for backward") {
  const Tensor x = random_param({64, 32}, 51), w = random_param({48, 32}, 52), b = random_param({48}, 53);
  const size_t bytes = 64 * 48 * sizeof(float);  // one (64, 48) activation
  const size_t before = host::in_use_bytes();
  // linear with a bias is one op whose output starts as the bias: no second (64, 48) tensor.
  Tensor y = linear(x, w, b);
  CHECK(host::in_use_bytes() - before == bytes);
  // permute copies; its backward needs the inverse order only, so y's data goes with y itself.
  Tensor z = permute(y, {1, 0});
  const size_t with_z = host::in_use_bytes() - before;
  CHECK(with_z == 2 * bytes);  // y is still named here
  y = Tensor();
  CHECK(host::in_use_bytes() - before == bytes);  // z alone: the graph keeps no copy of y
  // Gradients still reach every leaf, with the values of the formulas: ∂b = Σ_rows g.
  const Tensor g = random_values({48, 64}, 54);
  z.backward(g);
  const std::vector<float> gb = b.grad().to_vector_f32(), gv = g.to_vector_f32();
  for (int64_t j = 0; j < 48; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < 64; ++i) sum += gv[j * 64 + i];
    CHECK(gb[j] == doctest::Approx(sum).epsilon(1e-5));
  }
  CHECK(x.grad().defined());
  CHECK(w.grad().defined());
}
