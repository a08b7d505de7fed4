// CPU reference kernels for embedding and gather_table; see embedding.h for the maths. Indices
// were range-checked by the public functions. Backward never scatters with atomics: every output
// row (embedding) or table entry (gather_table) is summed by one owner, in index order, in double,
// so gradients are bit-identical for any thread count.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/embedding.h"

namespace urpe::kernels {

// ---- embedding forward ----
// table: (V, D); ids: i32 (P) flat; out: (P, D) flat

void embedding_forward_cpu(const Tensor& table, const Tensor& ids, Tensor& out) {
  const int64_t P = ids.numel(), D = table.size(1);
  const float* pt = table.f32();
  const int32_t* pid = ids.i32();
  float* po = out.f32();
#pragma omp parallel for if (P * D > 32768)
  for (int64_t p = 0; p < P; ++p) std::memcpy(po + p * D, pt + pid[p] * D, D * sizeof(float));
}

// ---- embedding backward ----
// ∂table[v, :] = Σ_{p: ids[p] = v} g[p, :]       ids: (P) flat; grad_out: (P, D); grad_table: (V, D)
// A stable counting sort lists each row's positions in increasing order (CSR); then each row v
// adds its positions' gradients in that order. The padding row (if any) is written as zeros.

void embedding_backward_cpu(const Tensor& ids, const Tensor& grad_out, Tensor& grad_table,
                            int64_t padding_idx) {
  const int64_t P = ids.numel(), V = grad_table.size(0), D = grad_table.size(1);
  const int32_t* pid = ids.i32();
  const float* g = grad_out.f32();
  float* gt = grad_table.f32();

  std::vector<int64_t> start(V + 1, 0);  // positions of row v: order[start[v] .. start[v + 1])
  for (int64_t p = 0; p < P; ++p) ++start[pid[p] + 1];
  for (int64_t v = 0; v < V; ++v) start[v + 1] += start[v];
  std::vector<int64_t> order(P), fill(start.begin(), start.end() - 1);
  for (int64_t p = 0; p < P; ++p) order[fill[pid[p]]++] = p;

#pragma omp parallel if (P * D > 32768)
  {
    std::vector<double> acc(D);  // (D,): one row's running sum
#pragma omp for
    for (int64_t v = 0; v < V; ++v) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t q = v == padding_idx ? start[v + 1] : start[v]; q < start[v + 1]; ++q) {
        const float* gr = g + order[q] * D;
        for (int64_t d = 0; d < D; ++d) acc[d] += gr[d];
      }
      for (int64_t d = 0; d < D; ++d) gt[v * D + d] = static_cast<float>(acc[d]);
    }
  }
}

// ---- embedding_sum forward ----
// tables: (S, V, D); ids: i32 (P, L) flat rows, columns k < K = S·G read; out: (P, D)
// out[p, d] = Σ_k tables[k / G, ids[p, k], d], summed in k order in float (the CUDA kernel's order).

void embedding_sum_forward_cpu(const Tensor& tables, const Tensor& ids, int64_t group, Tensor& out) {
  const int64_t S = tables.size(0), V = tables.size(1), D = tables.size(2);
  const int64_t L = ids.size(-1), P = ids.numel() / L, K = S * group;
  const float* pt = tables.f32();
  const int32_t* pid = ids.i32();
  float* po = out.f32();
#pragma omp parallel for if (P * K * D > 32768)
  for (int64_t p = 0; p < P; ++p) {
    float* row = po + p * D;
    std::fill(row, row + D, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float* t = pt + ((k / group) * V + pid[p * L + k]) * D;
      for (int64_t d = 0; d < D; ++d) row[d] += t[d];
    }
  }
}

// ---- embedding_sum backward ----
// ∂tables[s, v, :] = Σ_{(p, k): k / G = s, ids[p, k] = v} g[p, :]     grad_out: (P, D); grad_tables: (S, V, D)
// Each table s is owned by one thread, which walks p (then k) in order, summing in double: the
// same bits for any thread count.

void embedding_sum_backward_cpu(const Tensor& ids, int64_t group, const Tensor& grad_out, Tensor& grad_tables) {
  const int64_t S = grad_tables.size(0), V = grad_tables.size(1), D = grad_tables.size(2);
  const int64_t L = ids.size(-1), P = ids.numel() / L;
  const int32_t* pid = ids.i32();
  const float* g = grad_out.f32();
  float* gt = grad_tables.f32();
#pragma omp parallel if (P * S * group * D > 32768)
  {
    std::vector<double> acc(V * D);  // (V, D): one table's running sums
#pragma omp for
    for (int64_t s = 0; s < S; ++s) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t p = 0; p < P; ++p) {
        const float* gp = g + p * D;
        for (int64_t k = s * group; k < (s + 1) * group; ++k) {
          double* a = acc.data() + pid[p * L + k] * D;
          for (int64_t d = 0; d < D; ++d) a[d] += gp[d];
        }
      }
      for (int64_t e = 0; e < V * D; ++e) gt[s * V * D + e] = static_cast<float>(acc[e]);
    }
  }
}

// ---- unpack_ids ----
// packed: i32 (R, W); out: i32 (R, C), out[r, k] = field k mod per of word k / per

void unpack_ids_cpu(const Tensor& packed, int bits, Tensor& out) {
  const int64_t W = packed.size(-1), C = out.size(-1), R = C == 0 ? 0 : out.numel() / C, per = 32 / bits;
  const uint32_t* in = reinterpret_cast<const uint32_t*>(packed.i32());
  const uint32_t mask = (uint32_t(1) << bits) - 1;
  int32_t* po = out.i32();
#pragma omp parallel for if (R * C > 32768)
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < C; ++k)
      po[r * C + k] = static_cast<int32_t>((in[r * W + k / per] >> (bits * (k % per))) & mask);
}

// ---- gather_table forward ----
// table: (H, K); map: i32 (Nq, Nk) = (P) flat; out: (H, Nq, Nk) = (H, P) flat

void gather_table_forward_cpu(const Tensor& table, const Tensor& map, Tensor& out) {
  const int64_t H = table.size(0), K = table.size(1), P = map.numel();
  const float* pt = table.f32();
  const int32_t* pm = map.i32();
  float* po = out.f32();
#pragma omp parallel for if (H * P > 32768)
  for (int64_t hp = 0; hp < H * P; ++hp) po[hp] = pt[(hp / P) * K + pm[hp % P]];
}

// ---- gather_table backward ----
// ∂table[h, k] = Σ_{p: map[p] = k} g[h, p]       map: (P) flat; grad_out: (H, P); grad_table: (H, K)
// Each head owns its table row and walks p in order.

void gather_table_backward_cpu(const Tensor& map, const Tensor& grad_out, Tensor& grad_table) {
  const int64_t H = grad_table.size(0), K = grad_table.size(1), P = map.numel();
  const int32_t* pm = map.i32();
  const float* g = grad_out.f32();
  float* gt = grad_table.f32();
#pragma omp parallel if (H * P > 32768)
  {
    std::vector<double> acc(K);  // (K,): one head's running sums
#pragma omp for
    for (int64_t h = 0; h < H; ++h) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const float* gh = g + h * P;
      for (int64_t p = 0; p < P; ++p) acc[pm[p]] += gh[p];
      for (int64_t k = 0; k < K; ++k) gt[h * K + k] = static_cast<float>(acc[k]);
    }
  }
}

}  // namespace urpe::kernels
