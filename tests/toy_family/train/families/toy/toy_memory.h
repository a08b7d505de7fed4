// The toy family's memory estimate (train/config/memory_estimate.h says what is estimated).
#pragma once
#include "base/io/config.h"
#include "train/config/memory_estimate.h"

namespace urpe {

MemoryEstimate estimate_toy_memory(const Config& config);

}  // namespace urpe
