// The minimal-traffic and flop counts behind `urpe bench kernels --device cuda` (app/bench/kernel_traffic.h),
// against numbers worked out by hand at the paper's Table 5 sizes (B = 32, H = 12, N = 128,
// d_model 768): a wrong formula would silently misreport every GB/s and % of peak.
#include "app/bench/kernel_traffic.h"
#include "doctest/doctest.h"

using namespace urpe::bench::traffic;

TEST_CASE("URPE core: 12 bytes per attention element, plus map and tables with Toeplitz B, C") {
  // E = 32·12·128² = 6,291,456 elements; read S, write P and A.
  CHECK(urpe_forward_bytes(32, 12, 128, false) == 12.0 * 6291456);
  // + the (128, 128) i32 map read once (65,536 B) + two (12, 255) tables (24,480 B).
  CHECK(urpe_forward_bytes(32, 12, 128, true) == 12.0 * 6291456 + 65536 + 24480);
  // backward: read G, P, write ∂S; + map, the C table read, ∂B and ∂C written (36,720 B).
  CHECK(urpe_backward_bytes(32, 12, 128, false) == 12.0 * 6291456);
  CHECK(urpe_backward_bytes(32, 12, 128, true) == 12.0 * 6291456 + 65536 + 36720);
}

TEST_CASE("row-wise and pointwise kernels") {
  // softmax over (B·H·N, N) = (49152, 128)
  CHECK(softmax_forward_bytes(49152, 128) == 8.0 * 6291456);
  CHECK(softmax_backward_bytes(49152, 128) == 12.0 * 6291456);
  // layer norm over (B·N, D) = (4096, 768): x and y (25,165,824 B), γ and β (6,144), μ and r (32,768)
  CHECK(layer_norm_forward_bytes(4096, 768) == 25165824.0 + 6144 + 32768);
  // backward: x, ∂y, ∂x (37,748,736 B), γ, ∂γ, ∂β (9,216), μ and r (32,768)
  CHECK(layer_norm_backward_bytes(4096, 768) == 37748736.0 + 9216 + 32768);
  // cross-entropy over (4096, 32768): logits once (fwd) or twice with ∂logits (bwd), targets,
  // lse and a scalar
  CHECK(cross_entropy_forward_bytes(4096, 32768) == 536870912.0 + 32768 + 4);
  CHECK(cross_entropy_backward_bytes(4096, 32768) == 2 * 536870912.0 + 32768 + 4);
  CHECK(gelu_forward_bytes(1000) == 8000.0);
  CHECK(gelu_backward_bytes(1000) == 12000.0);
}

TEST_CASE("Adam: 28 bytes per parameter; GEMM: 2·M·N·K per batch item") {
  CHECK(adam_bytes(85054464) == 28.0 * 85054464);
  CHECK(gemm_flops(384, 128, 128, 64) == 805306368.0);  // Q·Kᵀ at N = 128
  CHECK(gemm_flops(1, 4096, 768, 768) == 4831838208.0); // projection at N = 128
}
