// Inverted dropout with a counter-based mask.
//   keep_k = [philox_uniform(seed, 0, k) ≥ p],   y_k = x_k·keep_k/(1 − p),   ∂x_k = g_k·keep_k/(1 − p)
// The mask is a pure function of (seed, k): backward regenerates it instead of storing it, and the
// CPU and CUDA kernels draw identical masks. Not training, or p = 0: y = x (no copy, no node).
// x f32 or bf16; y and ∂x have x's dtype (bf16: x_k·scale in FP32, rounded once on store).
//
// Seeds and CUDA graphs. A training step's dropout calls draw their seeds from the dropout stream
// (an Rng): call c's seed is philox_child_seed(stream seed, offset_c), offset_c its place in the
// stream. A captured graph freezes kernel arguments, so a seed passed by value would replay the
// captured step's masks forever. Instead the trainer marks each step's start, uploading the pair
// {stream seed, offset at the step's start} to the device (mark_dropout_step, once per step,
// outside any capture); a CUDA dropout drawn from that stream passes its constant
// delta = offset_c − start (the same in every steady step: the same draws in the same order) and
// the kernel derives philox_child_seed(pair.seed, pair.start + delta) itself. The mask is the same
// bits either way; without a mark for that stream (tests, eval, a fixed seed) the kernel takes the
// seed's value as an argument. The CPU always uses the value.
#pragma once
#include <cstdint>

#include "tensor/op_profile.h"
#include "tensor/rng.h"
#include "tensor/tensor.h"

namespace urpe {

// One dropout call's Philox seed: a fixed value, or draw `offset` of the stream `stream_seed`
// (take_dropout_seed), whose value is Rng::next_seed's.
struct DropoutSeed {
  uint64_t value = 0;
  bool from_stream = false;  // drawn from a stream: stream_seed and offset say where
  uint64_t stream_seed = 0, offset = 0;
  DropoutSeed() = default;
  DropoutSeed(uint64_t fixed) : value(fixed) {}  // NOLINT: a plain seed converts implicitly
};

// The next seed of `rng` (the same 64 bits, and the same advance, as rng.next_seed()).
DropoutSeed take_dropout_seed(Rng& rng);

// Marks the start of a training step for dropouts drawn from `rng` on `device`: on CUDA, uploads
// {rng.seed(), rng.offset()} to the device context's dropout anchor (stream-ordered, no host wait);
// on the CPU, nothing. Call it before the step's first dropout and before each graph launch, never
// while a stream captures.
void mark_dropout_step(const Rng& rng, const Device& device);

Tensor dropout(const Tensor& x, float p, const DropoutSeed& seed, bool training);

namespace kernels {
// out = x·keep/(1 − p); used for both directions (backward passes the gradient as x).
void dropout_apply_cpu(const Tensor& x, float p, uint64_t seed, Tensor& out);
void dropout_apply_cuda(const Tensor& x, float p, const DropoutSeed& seed, Tensor& out);
void mark_dropout_step_cuda(const Device& device, uint64_t stream_seed, uint64_t start);
}  // namespace kernels

// ---- cost (the per-op profiler's FLOPs and bytes; tensor/op_profile.h) ----
// n elements, either direction: reads x (or ∂y), writes y (or ∂x); one multiply per element
// (drawing the mask is integer work, not counted). `bytes`: an element's size (2 for bf16).
inline profile::Cost dropout_cost(int64_t n, double bytes = profile::kElementBytes) {
  return {double(n), 2 * bytes * double(n)};
}

}  // namespace urpe
