// The accepted range of every numeric run key (all model families): sizes are positive and fit
// in int32 (token ids, node counts and the int32 index tensors are 32-bit; nothing needs more),
// probabilities are in [0, 1), scales are positive. A key outside its range is refused where it
// was set (`--set batch=0: key 'batch' expects an integer from 1 to 2147483647, got '0'`), before
// anything is built. What the keys need together (memory) is train/config/memory_estimate.h's job.
#pragma once
#include "base/io/config.h"

namespace urpe {

// Limits the keys of `schema` that this file knows; keys the schema lacks are skipped, so one
// table serves every family (a name means the same thing in each).
void limit_run_keys(ConfigSchema& schema);

}  // namespace urpe
