// The argument checks shared by the two URPE attention ops, the materialised core
// (urpe_attention.h: scores in) and the fused one (urpe_flash_attention.h: q, k, v in): the bias and
// C tables, their bucket maps (shape, dtype, device, every value in range) and the key padding.
// One place, so both ops accept the same tables and maps and say the same thing about bad ones;
// every message starts with the op's name and compares with that op's own inputs.
#pragma once
#include <cstdint>

#include "ops/urpe_attention.h"
#include "tensor/tensor.h"

namespace urpe {

// What the tables, maps and padding must match: the op's sizes, and its inputs as messages name
// them (described only when a check fails: this runs on every call).
struct UrpeAttentionArgs {
  const char* op;                         // "urpe_attention", "urpe_flash_attention"
  const char* input_name;                 // "the scores", "q": every table, map and mask shares its device
  const Tensor* input;
  const char* other_name = nullptr;       // "k" (fused op), or none
  const Tensor* other = nullptr;
  int64_t bsz = 0, heads = 0, nq = 0, nk = 0;
  bool relative_maps = false;             // also accept (Nq + Nk − 1,) maps: bucket of j − i (fused op)
};

// Checks params' bias_table/bias_map, c_table/c_map and key_padding; one urpe::Error naming the op,
// the argument, what it is and what was expected.
void check_urpe_attention_tables(const UrpeAttentionArgs& args, const UrpeAttentionParams& params);

// Every value of a bucket map lies in [0, K) of its (H, K) table; otherwise one error naming `op`,
// the map, the first bad value and the table.
// A map's values are read once per storage (a device→host copy for a CUDA map) and its range is
// remembered, so a model's constant maps are not copied back on every call. Maps are read-only
// inputs: a map tensor written in place after an attention op has read it is not read again.
void check_bucket_map_values(const char* op, const char* arg, const Tensor& map, const char* table_arg,
                             const Tensor& table);

// Records the value range [min, max] of a map whose values the caller made on the host and
// uploaded as they are (Graphormer's per-batch SPD buckets, data/graph_batch_maps.h), so that
// check_bucket_map_values takes the range from here instead of copying the map back from the
// device. The range must be the one measured over the very values in `map`: the kernels index
// the tables with them. A range that does not fit a table is still read and named as before.
// Recorded as not diagonal-constant.
void note_bucket_map_range(const Tensor& map, int32_t min, int32_t max);

// Whether a map already read by check_bucket_map_values is (Nq, Nk) with its value a function of
// j − i alone (Toeplitz: the unique and the T5-bucketed relative maps, not SPD maps). Read from
// the same per-storage record, so it costs no copy; false for a map not (or no longer) recorded.
// The CUDA table gradients then sum along diagonals (urpe_attention_table_grad_cuda.cu).
bool bucket_map_is_diagonal_constant(const Tensor& map);

}  // namespace urpe
