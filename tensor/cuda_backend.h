// The few device primitives the tensor core itself needs (allocation, copies, fill, accumulate).
// Implemented in tensor/cuda_context.cu when CUDA is built, and in tensor/cuda_absent.cpp
// (every call throws a clear "built without CUDA" error) otherwise, so no caller needs #ifdefs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "tensor/bf16.h"
#include "tensor/cuda_tc_rows.h"

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

// ---- host synchronisations (docs/cuda.md#host-synchronisations) ----
// Each time the host waits for the context's stream: an explicit synchronize (a stream, the
// device, an event), a device-to-host copy (the host reads a number: the copy, then the wait),
// and a host-to-device copy from pageable memory (the driver stages it and waits for the
// stream before it). Counted per context, in the units the CUDA runtime sees: copy_host_to_device
// is one pageable upload and one synchronize; copy_device_to_host is one device-to-host wait.
enum class HostSync : uint8_t { synchronize, device_to_host, pageable_upload };
constexpr int kHostSyncKinds = 3;
const char* host_sync_name(HostSync kind);  // "synchronize", "device-to-host", "pageable upload"
struct HostSyncCounts {
  uint64_t by_kind[kHostSyncKinds] = {};
  uint64_t operator[](HostSync kind) const { return by_kind[static_cast<int>(kind)]; }
  uint64_t total() const { return by_kind[0] + by_kind[1] + by_kind[2]; }
};
// The counts since the context was created (no CUDA: all zero).
HostSyncCounts host_sync_counts(Context* context);
// Called at each host synchronisation of any context waited for on this thread (a test
// attributes each to the op open at that moment, tensor/op_profile.h). Per thread, like the op
// recorder, so that no op needs a parameter for it; returns the observer it replaces (an empty
// function: none).
using HostSyncObserver = std::function<void(HostSync kind, size_t bytes)>;
HostSyncObserver set_host_sync_observer(HostSyncObserver observer);
// Called, on this thread, with each block a caching allocator hands out and its class bytes (a
// test's record of the addresses of a step: a CUDA graph replays the ones it captured). Per
// thread like the observer above; returns the one it replaces.
using AllocationObserver = std::function<void(const void* block, size_t class_bytes)>;
AllocationObserver set_allocation_observer(AllocationObserver observer);
// Small host tables (multi-tensor kernels) uploaded to the context's table cache so far: a miss
// is an upload (cuda_context.h, Context::cached_table).
uint64_t table_uploads(Context* context);
// ---- checks made on the device, reported at the next read (docs/cuda.md#host-synchronisations) ----
// An op that must refuse bad input values (an id outside its table, a target outside [0, C))
// without reading them back asks for a slot: one int64 in device memory, zero until the op's
// check kernel writes a nonzero value there. The next time the host reads from the context
// (copy_device_to_host, synchronize: the step's loss read) the slots come back with that read,
// at no extra wait, and `raise` is called with each slot's value in the order the checks were
// made; it throws the op's error (the same words as a check on the host) when the value is not
// zero. Until then the op's kernels must stay in bounds whatever the values are.
using CheckRaise = std::function<void(int64_t value)>;
int64_t* defer_check(Context* context, CheckRaise raise);
// For code that waits through the CUDA runtime directly (not through the primitives above).
void note_host_sync(Context* context, HostSync kind, size_t bytes);

// ---- CUDA graphs (docs/cuda.md#cuda-graphs; tensor/cuda_context.h, Context::begin_capture) ----
// Between begin_capture and end_capture the context's stream records instead of running, every
// allocation comes from the graph's own pool, and an upload or a host wait is refused (an
// urpe::Error naming it). end_capture returns the instantiated graph or throws (the capture
// failed); after an error between the two, abort_capture ends the capture and drops its pool.
// The pool can be pre-filled with what an eager run of the same step needed: between
// begin_allocation_demand and end_allocation_demand the allocator counts, per size class, the
// most blocks held at once beyond those released (class bytes → blocks).
class CapturedGraph;
// Owned through a unique_ptr whose deleter lives with the class (no shared_ptr: its atomic counts
// cannot be built into the simulator's instrumented copy of the context).
struct CapturedGraphDeleter {
  void operator()(CapturedGraph* graph) const;
};
using CapturedGraphPtr = std::unique_ptr<CapturedGraph, CapturedGraphDeleter>;
struct AllocationDemand {
  std::map<size_t, size_t> blocks;     // class bytes → blocks for the captured work
  std::map<size_t, size_t> untouched;  // class bytes → blocks for tables filled before the launch
};
void begin_allocation_demand(Context* context);
AllocationDemand end_allocation_demand(Context* context);
void begin_capture(Context* context, const AllocationDemand& prefill = {});
CapturedGraphPtr end_capture(Context* context);
void abort_capture(Context* context);
void launch_graph(CapturedGraph& graph);
size_t graph_pool_bytes(const CapturedGraph& graph);  // class bytes its pool holds for it

// Memory statistics of the context's caching allocator (bytes of its size classes).
size_t peak_bytes(Context* context);
void reset_peak(Context* context);
size_t bytes_in_use(Context* context);
void empty_cache(Context* context);  // the cached (free) blocks back to the driver (waits for the device)
// TF32 tensor-core GEMMs for this context (off by default; the trainer's --tf32).
void set_tf32(Context* context, bool on);
bool tf32(Context* context);
// BF16 tensor-core tiles in the fused URPE attention for this context (off by default;
// precision=bf16 turns it on, docs/cuda.md#tensor-core-tiles).
void set_bf16_tiles(Context* context, bool on);
bool bf16_tiles(Context* context);
// The fused attention's tensor-core kernels software-pipelined (cp.async staging of the next tile
// while the current one computes; the same bits either way; docs/cuda.md#tensor-core-tiles).
// automatic (the default): the kernels a GPU measured faster pipelined (tc_pipeline_by_default);
// on / off: every kernel that can, or none (`urpe bench attention --tc-pipeline on|off|auto`).
enum class TcPipeline { automatic, on, off };
void set_tc_pipeline(Context* context, TcPipeline mode);
TcPipeline tc_pipeline(Context* context);
inline const char* tc_pipeline_name(TcPipeline mode) {
  return mode == TcPipeline::on ? "on" : mode == TcPipeline::off ? "off" : "auto";
}

// What `automatic` picks, per kernel: measured on an H200 (bench/results/gpu_h200_2026-11-28.md,
// d 64, B 8, H 16, n 1k and 4k, alternating rounds) the pipelined BF16-tile kernels took 0.74–0.96×
// the single-buffered kernels' time, forward and backward; on TF32 tiles the pipelined backward
// took 0.89× but the pipelined forward 1.09–1.13×. So: BF16 tiles pipelined, TF32 tiles only in
// the backward. Head dims of the 32 and 128 tile classes have not been timed pipelined: they stay
// single-buffered. tile_dim: the tile class (32, 64 or 128) of max(dh, dv).
inline bool tc_pipeline_by_default(int tile_dim, bool bf16_tiles, bool backward) {
  return tile_dim == 64 && (bf16_tiles || backward);
}
// Whether `mode` asks a kernel of this class for its pipelined variant (which it then takes when
// the tensors allow: flash_tc_forward_pipelined, flash_tc_backward_pipelined).
inline bool tc_pipeline_wanted(TcPipeline mode, int tile_dim, bool bf16_tiles, bool backward) {
  return mode == TcPipeline::on ||
         (mode == TcPipeline::automatic && tc_pipeline_by_default(tile_dim, bf16_tiles, backward));
}
// What the fused attention's tensor-core kernels last ran on this context: their launchers
// record it (urpe_flash_tc_forward, urpe_flash_tc_backward), so `urpe bench attention` labels its
// rows with what ran instead of re-deriving the kernels' choice. clear_tc_kernels_ran resets it.
struct TcKernelsRan {
  bool forward = false, forward_pipelined = false;  // the forward kernel ran; its pipelined variant
  int forward_row_blocks = 1;  // its 16-row blocks of queries per warp (cuda::TcRows, tensor/cuda_tc_rows.h)
  bool backward = false, dq_pipelined = false, dkdv_pipelined = false;
};
void clear_tc_kernels_ran(Context* context);
TcKernelsRan tc_kernels_ran(Context* context);
std::string device_name(Context* context);  // e.g. "NVIDIA H100 80GB HBM3 (cuda:0)"

// Nsight capture range (cudaProfilerStart/Stop) for `--profile-steps a:b`; no-ops without CUDA.
void profiler_start();
void profiler_stop();

}  // namespace urpe::cuda
