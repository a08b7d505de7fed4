// CUDA simulator: the state its pieces share: the pending launch error (what cudaGetLastError
// returns) and the registry of simulated device memory, which lets copies, kernels and cuBLAS
// calls check that a "device" pointer really is one and that an access stays inside its block.
#pragma once
#include <cstddef>
#include <string>

#include "cuda_runtime.h"

namespace urpe_sim {

// Remembers the first error since the last cudaGetLastError() and prints it to stderr (a GPU
// would report it asynchronously; here it is known at once).
void record_launch_error(cudaError_t error, const std::string& message);

// True when [pointer, pointer + bytes) lies inside one block from cudaMalloc.
bool is_device_range(const void* pointer, size_t bytes);

}  // namespace urpe_sim
