// Compiled only when the build has no CUDA backend (URPE_CUDA=OFF or no nvcc): every device
// primitive explains how to get one, so `--device cuda` fails with a readable message.
#include "tensor/cuda_backend.h"
#include "tensor/error.h"

namespace urpe::cuda {

[[noreturn]] static void no_cuda(const char* what) {
  URPE_FAIL(what << ": this urpe build has no CUDA backend (configure with -DURPE_CUDA=ON on a "
                    "machine with nvcc, or run with --device cpu)");
}

bool built_with_cuda() { return false; }
int device_count() { return 0; }
size_t device_memory_bytes(int) { return 0; }
std::shared_ptr<Context> create_context(int) { no_cuda("cuda::create_context"); }
void* allocate(Context*, size_t) { no_cuda("cuda::allocate"); }
void release(Context*, void*, size_t) {}
void copy_host_to_device(Context*, void*, const void*, size_t) { no_cuda("cuda::copy"); }
void copy_device_to_host(Context*, void*, const void*, size_t) { no_cuda("cuda::copy"); }
void copy_device_to_device(Context*, void*, const void*, size_t) { no_cuda("cuda::copy"); }
void fill_f32(Context*, float*, size_t, float) { no_cuda("cuda::fill"); }
void fill_i32(Context*, int32_t*, size_t, int32_t) { no_cuda("cuda::fill"); }
void fill_bf16(Context*, bf16*, size_t, bf16) { no_cuda("cuda::fill"); }
void accumulate_f32(Context*, float*, const float*, size_t) { no_cuda("cuda::accumulate"); }
void accumulate_bf16(Context*, bf16*, const bf16*, size_t) { no_cuda("cuda::accumulate"); }
void synchronize(Context*) {}
const char* host_sync_name(HostSync kind) {
  switch (kind) {
    case HostSync::synchronize: return "synchronize";
    case HostSync::device_to_host: return "device-to-host";
    case HostSync::pageable_upload: return "pageable upload";
  }
  return "?";
}
HostSyncCounts host_sync_counts(Context*) { return {}; }
HostSyncObserver set_host_sync_observer(HostSyncObserver) { return {}; }
AllocationObserver set_allocation_observer(AllocationObserver) { return {}; }
void note_host_sync(Context*, HostSync, size_t) {}
uint64_t table_uploads(Context*) { return 0; }
void empty_cache(Context*) {}
void begin_capture(Context*, const AllocationDemand&) { no_cuda("cuda::begin_capture"); }
void begin_allocation_demand(Context*) {}
AllocationDemand end_allocation_demand(Context*) { return {}; }
CapturedGraphPtr end_capture(Context*) { no_cuda("cuda::end_capture"); }
void CapturedGraphDeleter::operator()(CapturedGraph*) const {}  // none is ever made without CUDA
void abort_capture(Context*) {}
void launch_graph(CapturedGraph&) { no_cuda("cuda::launch_graph"); }
size_t graph_pool_bytes(const CapturedGraph&) { return 0; }
int64_t* defer_check(Context*, CheckRaise) { no_cuda("cuda::defer_check"); }
size_t peak_bytes(Context*) { return 0; }
void reset_peak(Context*) {}
size_t bytes_in_use(Context*) { return 0; }
void set_tf32(Context*, bool) { no_cuda("cuda::set_tf32"); }
bool tf32(Context*) { no_cuda("cuda::tf32"); }
void set_bf16_tiles(Context*, bool) { no_cuda("cuda::set_bf16_tiles"); }
bool bf16_tiles(Context*) { no_cuda("cuda::bf16_tiles"); }
void set_tc_pipeline(Context*, TcPipeline) { no_cuda("cuda::set_tc_pipeline"); }
TcPipeline tc_pipeline(Context*) { no_cuda("cuda::tc_pipeline"); }
void set_tc_rows(Context*, TcRows) { no_cuda("cuda::set_tc_rows"); }
TcRows tc_rows(Context*) { no_cuda("cuda::tc_rows"); }
void clear_tc_kernels_ran(Context*) { no_cuda("cuda::clear_tc_kernels_ran"); }
TcKernelsRan tc_kernels_ran(Context*) { no_cuda("cuda::tc_kernels_ran"); }
std::string device_name(Context*) { no_cuda("cuda::device_name"); }
void profiler_start() {}
void profiler_stop() {}

}  // namespace urpe::cuda
