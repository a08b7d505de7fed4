// The few device primitives the tensor core itself needs (allocation, copies, fill, accumulate).
// Implemented in tensor/cuda_context.cu when CUDA is built, and in tensor/cuda_absent.cpp
// (every call throws a clear "built without CUDA" error) otherwise, so no caller needs #ifdefs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tensor/bf16.h"

namespace urpe::cuda {

class Context;

bool built_with_cuda();
int device_count();  // 0 when built without CUDA or when no GPU is visible
// Total memory of a device, from its properties (no context is created); 0 when built without
// CUDA, when no such device is visible, or when the driver cannot tell. Never throws.
size_t device_memory_bytes(int device_index);
std::shared_ptr<Context> create_context(int device_index);

void* allocate(Context* context, size_t bytes);
void release(Context* context, void* pointer, size_t bytes);
void copy_host_to_device(Context* context, void* dst, const void* src, size_t bytes);
void copy_device_to_host(Context* context, void* dst, const void* src, size_t bytes);
void copy_device_to_device(Context* context, void* dst, const void* src, size_t bytes);
void fill_f32(Context* context, float* dst, size_t n, float value);
void fill_i32(Context* context, int32_t* dst, size_t n, int32_t value);
void fill_bf16(Context* context, bf16* dst, size_t n, bf16 value);
void accumulate_f32(Context* context, float* dst, const float* src, size_t n);  // dst += src
// dst = bf16(float(dst) + float(src)): the sum in FP32, rounded to nearest even once.
void accumulate_bf16(Context* context, bf16* dst, const bf16* src, size_t n);
void synchronize(Context* context);

// Memory statistics of the context's caching allocator (bytes of its size classes).
size_t peak_bytes(Context* context);
void reset_peak(Context* context);
size_t bytes_in_use(Context* context);
// TF32 tensor-core GEMMs for this context (off by default; the trainer's --tf32).
void set_tf32(Context* context, bool on);
std::string device_name(Context* context);  // e.g. "NVIDIA H100 80GB HBM3 (cuda:0)"

// Nsight capture range (cudaProfilerStart/Stop) for `--profile-steps a:b`; no-ops without CUDA.
void profiler_start();
void profiler_stop();

}  // namespace urpe::cuda
