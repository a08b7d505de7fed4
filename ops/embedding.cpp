// Public embedding and gather_table: validation, dispatch, autograd. Kernels: embedding_cpu.cpp /
// embedding_cuda.cu. Indices are range-checked by ops/index_check.h, so a bad id is one readable
// error instead of an out-of-bounds read on a device (on CUDA, raised at the next read).
#include "ops/embedding.h"

#include <string>
#include <vector>

#include "autograd/node.h"
#include "ops/dispatch.h"
#include "ops/index_check.h"
#include "ops/shape.h"

namespace urpe {

// Throws unless every index is in [0, size) (ops/index_check.h: on CUDA, counted on the device and
// reported at the context's next read, with the same words).
static void check_indices(const char* op, const char* arg, const Tensor& indices, int64_t size,
                          const Tensor& table) {
  const std::string table_name = table.describe();
  check_index_range(indices, size, false, 0, [op, arg, size, table_name](int64_t p, int32_t v) {
    URPE_FAIL(op << ": " << arg << " value " << v << " at flat position " << p << " is out of range [0, " << size
                 << ") for table " << table_name);
  });
}

// ---- embedding ----
// out[..., :] = table[ids[...], :];   ∂table[v, :] = Σ_{p: ids[p] = v} g[p, :]

Tensor embedding(const Tensor& table, const Tensor& ids, int64_t padding_idx) {
  const char* op = "embedding";
  const profile::OpRange range(op, table);
  check_dtype(op, "table", table, DType::f32);
  check_dtype(op, "ids", ids, DType::i32);
  check_dim(op, "table", table, 2, 2);
  check_dim(op, "ids", ids, 0, kMaxDims - 1);  // the output adds a trailing D axis
  check_same_device(op, table, ids);
  const int64_t V = table.size(0), D = table.size(1);
  check_indices(op, "id", ids, V, table);
  URPE_CHECK(padding_idx == kNoPadding || (padding_idx >= 0 && padding_idx < V),
             op << ": padding_idx " << padding_idx << " must be -1 (none) or a row in [0, " << V
                << ") of table " << table.describe());

  // ---- forward ----
  Shape out_shape = ids.shape();
  out_shape.push_back(D);
  Tensor out = Tensor::empty(out_shape, DType::f32, table.device());
  URPE_PROFILE_COST(embedding_forward_cost(ids.numel(), D));
  URPE_DISPATCH(op, table.device(), kernels::embedding_forward_cpu(table, ids, out),
                kernels::embedding_forward_cuda(table, ids, out));

  // ---- backward: rows summed in index order by their owner (deterministic); the padding row 0 ----
  const Shape table_shape = table.shape();
  return autograd::record(out, op, {table, ids}, [op, ids, table_shape, padding_idx](const Tensor& g) {
    Tensor gtable = Tensor::empty(table_shape, DType::f32, g.device());
    URPE_PROFILE_COST(embedding_backward_cost(ids.numel(), table_shape[0], table_shape[1]));
    URPE_DISPATCH(op, g.device(), kernels::embedding_backward_cpu(ids, g, gtable, padding_idx),
                  kernels::embedding_backward_cuda(ids, g, gtable, padding_idx));
    return std::vector<Tensor>{gtable, Tensor()};  // ids are indices: no gradient
  });
}

// ---- embedding_sum ----
// out[p, :] = Σ_{k < S·G} tables[k / G, ids[p, k], :];   ∂tables[s, v, :] = Σ_{(p, k): k/G = s, ids[p,k] = v} g[p, :]

Tensor embedding_sum(const Tensor& tables, const Tensor& ids, int64_t group) {
  const char* op = "embedding_sum";
  const profile::OpRange range(op, tables);
  check_dtype(op, "tables", tables, DType::f32);
  check_dtype(op, "ids", ids, DType::i32);
  check_dim(op, "tables", tables, 3, 3);
  check_dim(op, "ids", ids, 1, kMaxDims);  // the output replaces the last axis by D
  check_same_device(op, tables, ids);
  const int64_t S = tables.size(0), V = tables.size(1), D = tables.size(2);
  URPE_CHECK(group >= 1 && ids.size(-1) >= S * group,
             op << ": ids " << ids.describe() << " must have at least " << S << " tables × group " << group
                << " columns (group ≥ 1) for tables " << tables.describe());
  // Only the columns read are checked: the rest may hold anything (hops beyond the cut).
  const Tensor read = ids.size(-1) == S * group ? ids : slice(ids, ids.dim() - 1, 0, S * group);
  check_indices(op, "id", read, V, tables);

  // ---- forward ----
  Shape out_shape(ids.shape().begin(), ids.shape().end() - 1);
  out_shape.push_back(D);
  Tensor out = Tensor::empty(out_shape, DType::f32, tables.device());
  const int64_t rows = ids.numel() / ids.size(-1);
  URPE_PROFILE_COST(embedding_sum_forward_cost(rows, S * group, D));
  URPE_DISPATCH(op, tables.device(), kernels::embedding_sum_forward_cpu(tables, ids, group, out),
                kernels::embedding_sum_forward_cuda(tables, ids, group, out));

  // ---- backward: fixed-order sums (deterministic) ----
  const Shape tables_shape = tables.shape();
  return autograd::record(out, op, {tables, ids}, [op, ids, group, rows, tables_shape](const Tensor& g) {
    Tensor gtables = Tensor::empty(tables_shape, DType::f32, g.device());
    const int64_t S = tables_shape[0];
    URPE_PROFILE_COST(embedding_sum_backward_cost(rows, S * group, gtables.numel(), tables_shape[2]));
    URPE_DISPATCH(op, g.device(), kernels::embedding_sum_backward_cpu(ids, group, g, gtables),
                  kernels::embedding_sum_backward_cuda(ids, group, g, gtables));
    return std::vector<Tensor>{gtables, Tensor()};
  });
}

// ---- unpack_ids ----
// out[..., k] = (packed[..., k / per] >> bits·(k mod per)) & (2^bits − 1), per = 32 / bits

Tensor unpack_ids(const Tensor& packed, int64_t columns, int bits) {
  const char* op = "unpack_ids";
  const profile::OpRange range(op, packed);
  check_dtype(op, "packed", packed, DType::i32);
  check_dim(op, "packed", packed, 1, kMaxDims);
  URPE_CHECK(bits == 8 || bits == 16, op << ": bits must be 8 or 16, got " << bits);
  const int64_t per = 32 / bits;
  URPE_CHECK(columns >= 0 && packed.size(-1) == (columns + per - 1) / per,
             op << ": packed " << packed.describe() << " must have ceil(" << columns << " / " << per
                << ") words per row for " << columns << " ids of " << bits << " bits");
  Shape shape = packed.shape();
  shape.back() = columns;
  Tensor out = Tensor::empty(shape, DType::i32, packed.device());
  URPE_PROFILE_COST(unpack_ids_cost(packed.numel(), out.numel()));
  URPE_DISPATCH(op, packed.device(), kernels::unpack_ids_cpu(packed, bits, out),
                kernels::unpack_ids_cuda(packed, bits, out));
  return out;  // indices: no gradient, no autograd node
}

// ---- gather_table ----
// out[h, i, j] = table[h, map[i, j]];   ∂table[h, k] = Σ_{i,j: map[i,j] = k} g[h, i, j]

Tensor gather_table(const Tensor& table, const Tensor& map) {
  const char* op = "gather_table";
  const profile::OpRange range(op, table);
  check_dtype(op, "table", table, DType::f32);
  check_dtype(op, "map", map, DType::i32);
  check_dim(op, "table", table, 2, 2);
  check_dim(op, "map", map, 2, 2);
  check_same_device(op, table, map);
  const int64_t H = table.size(0), K = table.size(1);
  check_indices(op, "map", map, K, table);

  // ---- forward ----
  Tensor out = Tensor::empty({H, map.size(0), map.size(1)}, DType::f32, table.device());
  URPE_PROFILE_COST(gather_table_forward_cost(H, K, map.numel()));
  URPE_DISPATCH(op, table.device(), kernels::gather_table_forward_cpu(table, map, out),
                kernels::gather_table_forward_cuda(table, map, out));

  // ---- backward: each (h, k) summed over its (i, j) in index order (deterministic) ----
  const Shape table_shape = table.shape();
  return autograd::record(out, op, {table, map}, [op, map, table_shape](const Tensor& g) {
    Tensor gtable = Tensor::empty(table_shape, DType::f32, g.device());
    URPE_PROFILE_COST(gather_table_backward_cost(table_shape[0], table_shape[1], map.numel()));
    URPE_DISPATCH(op, g.device(), kernels::gather_table_backward_cpu(map, g, gtable),
                  kernels::gather_table_backward_cuda(map, g, gtable));
    return std::vector<Tensor>{gtable, Tensor()};  // the map holds indices: no gradient
  });
}

}  // namespace urpe
