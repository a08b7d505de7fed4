// CPU copies for permute / concat / slice. Works on raw 32-bit words, so f32 and i32 share it;
// permute also moves 16-bit words (bf16 activations).
#include <algorithm>
#include <cstring>

#include "ops/shape.h"

namespace urpe::kernels {

// out[i_0, …, i_{d−1}] = x[…] with output axis k taken from input axis order[k]. Reference, one
// element at a time (flat output index → output multi-index → input offset):
//   for (flat = 0; flat < n; ++flat) {
//     offset = 0, rest = flat;
//     for (k = d − 1; k >= 0; --k) { offset += (rest % out_dims[k]) * step[k]; rest /= out_dims[k]; }
//     dst[flat] = src[offset];
//   }
// The loop below is the same copy in runs: trailing axes that keep their place (order[k] == k,
// e.g. the head dim of the (B, N, H, dh) → (B, H, N, dh) head split) are contiguous in both
// tensors, so each run is one memcpy; the remaining outer index advances like an odometer
// instead of being recomputed with divisions for every element.
template <typename Word>
static void permute_words(const Tensor& x, const std::vector<int>& order, Tensor& out) {
  const int d = x.dim();
  // Strides of x, and x's stride for each output axis.
  int64_t in_stride[kMaxDims] = {0}, out_dims[kMaxDims] = {0}, step[kMaxDims] = {0};
  int64_t s = 1;
  for (int k = d - 1; k >= 0; --k) { in_stride[k] = s; s *= x.shape()[k]; }
  for (int k = 0; k < d; ++k) { out_dims[k] = out.shape()[k]; step[k] = in_stride[order[k]]; }
  const Word* src = static_cast<const Word*>(x.impl().storage->data);
  Word* dst = static_cast<Word*>(out.impl().storage->data);
  const int64_t n = out.numel();
  if (n == 0) return;

  int outer_dims = d;  // axes [0, outer_dims) index runs; the rest are inside a run
  int64_t run = 1;
  while (outer_dims > 0 && order[outer_dims - 1] == outer_dims - 1) run *= out_dims[--outer_dims];
  const int64_t runs = n / run;
  constexpr int64_t kRunsPerTask = 256;
  const int64_t tasks = (runs + kRunsPerTask - 1) / kRunsPerTask;
#pragma omp parallel for if (n > 32768)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t first = task * kRunsPerTask, last = std::min(runs, first + kRunsPerTask);
    int64_t index[kMaxDims] = {0}, offset = 0, rest = first;  // multi-index of run `first`
    for (int k = outer_dims - 1; k >= 0; --k) {
      index[k] = rest % out_dims[k];
      rest /= out_dims[k];
      offset += index[k] * step[k];
    }
    for (int64_t r = first; r < last; ++r) {
      if (run == 1) dst[r] = src[offset];
      else std::memcpy(dst + r * run, src + offset, run * sizeof(Word));
      for (int k = outer_dims - 1; k >= 0; --k) {  // next multi-index, last axis fastest
        offset += step[k];
        if (++index[k] < out_dims[k]) break;
        offset -= index[k] * step[k];
        index[k] = 0;
      }
    }
  }
}

void permute_cpu(const Tensor& x, const std::vector<int>& order, Tensor& out) {
  if (dtype_size(x.dtype()) == 2) permute_words<uint16_t>(x, order, out);
  else permute_words<uint32_t>(x, order, out);
}

void copy_window_cpu(const Tensor& src, int64_t src_n, int64_t src_start, Tensor& dst,
                     int64_t dst_n, int64_t dst_start, int64_t outer, int64_t count,
                     int64_t inner, bool accumulate) {
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t s = (o * src_n + src_start) * inner, t = (o * dst_n + dst_start) * inner;
    if (accumulate) {
      const float* ps = src.f32() + s;
      float* pd = dst.f32() + t;
      for (int64_t k = 0; k < count * inner; ++k) pd[k] += ps[k];
    } else {
      std::memcpy(static_cast<uint32_t*>(dst.impl().storage->data) + t,
                  static_cast<const uint32_t*>(src.impl().storage->data) + s,
                  count * inner * sizeof(uint32_t));
    }
  }
}

}  // namespace urpe::kernels
