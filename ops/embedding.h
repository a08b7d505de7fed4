// Embedding lookup and gather of per-head tables through an index map.
//
// embedding: out[..., :] = table[ids[...], :]           table: (V, D), ids: i32 (...), out: (..., D)
//   backward: ∂table[v, :] = Σ_{p: ids[p] = v} g[p, :]  (deterministic: each row summed in index
//   order by its owner, never with float atomics)
// gather_table: out[h, i, j] = table[h, map[i, j]]      table: (H, K), map: i32 (Nq, Nk)
//   backward: ∂table[h, k] = Σ_{i,j: map[i,j] = k} g[h, i, j]
// Ids out of range are an error naming the op, the bad id and the table size.
#pragma once
#include "tensor/tensor.h"

namespace urpe {

Tensor embedding(const Tensor& table, const Tensor& ids);
Tensor gather_table(const Tensor& table, const Tensor& map);

namespace kernels {
void embedding_forward_cpu(const Tensor& table, const Tensor& ids, Tensor& out);
void embedding_forward_cuda(const Tensor& table, const Tensor& ids, Tensor& out);
// grad_table is overwritten (not accumulated).
void embedding_backward_cpu(const Tensor& ids, const Tensor& grad_out, Tensor& grad_table);
void embedding_backward_cuda(const Tensor& ids, const Tensor& grad_out, Tensor& grad_table);
void gather_table_forward_cpu(const Tensor& table, const Tensor& map, Tensor& out);
void gather_table_forward_cuda(const Tensor& table, const Tensor& map, Tensor& out);
void gather_table_backward_cpu(const Tensor& map, const Tensor& grad_out, Tensor& grad_table);
void gather_table_backward_cuda(const Tensor& map, const Tensor& grad_out, Tensor& grad_table);
}  // namespace kernels

}  // namespace urpe
