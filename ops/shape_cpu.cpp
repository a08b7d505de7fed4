// CPU copies for permute / concat / slice. They move raw words, 32-bit (f32, i32) or 16-bit (bf16
// activations), so every dtype shares them; copy_window's accumulation adds in FP32
// (ops/bf16_values.h: a bf16 sum rounded once).
#include <algorithm>
#include <cstring>

#include "ops/bf16_values.h"
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
  const size_t word = dtype_size(src.dtype());  // 4 (f32, i32) or 2 (bf16)
  const auto* ps = static_cast<const unsigned char*>(src.impl().storage->data);
  auto* pd = static_cast<unsigned char*>(dst.impl().storage->data);
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t s = (o * src_n + src_start) * inner, t = (o * dst_n + dst_start) * inner;
    if (accumulate) {  // dst += src in FP32, rounded once when bf16
      with_value_type(src.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* a = src.data<T>() + s;
        T* b = dst.data<T>() + t;
        for (int64_t k = 0; k < count * inner; ++k) store(b, k, load(b, k) + load(a, k));
      });
    } else {
      std::memcpy(pd + t * word, ps + s * word, static_cast<size_t>(count * inner) * word);
    }
  }
}

}  // namespace urpe::kernels
