// Whether a set of tensors holds only finite values: what the training loop checks before it saves
// a checkpoint and what loading one checks (docs/runs.md#divergence). A diverged run (a too large
// learning rate) turns its parameters or Adam's moments into NaN or infinity one update before its
// loss shows it; saving them then would replace the last good checkpoint with one that evaluates
// to NaN and cannot be resumed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/io/safetensors.h"

namespace urpe {

struct NonFiniteValue {
  bool found = false;
  std::string tensor;  // its name, e.g. "model.blocks.0.attn.q.weight" or "adam.m.3"
  int64_t index = 0;   // the first bad element, in row-major order
  float value = 0;     // NaN, +inf or -inf
  int64_t numel = 0;   // the tensor's element count
  // "tensor 'model.x' holds nan (element 12 of 2048)"; "" when nothing was found.
  std::string describe() const;
};

// The first non-finite f32 element over `tensors`, in their order (i32 tensors are skipped). Tensors
// on a GPU are copied to the host for the check.
NonFiniteValue first_non_finite(const std::vector<NamedTensor>& tensors);

}  // namespace urpe
