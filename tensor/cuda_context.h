// The CUDA context: one device, one stream, one cuBLAS handle (and a cuBLASLt one) and a caching allocator. Every CUDA
// op finds it through its tensors (Device::context()), so there is no global device state. All
// work of a context runs on its one stream, which is what makes the allocator's reuse of a freed
// block safe without events: a block released by the host is only handed out again to work that
// the stream orders after everything already queued on it.
//
// Included by .cu files and by host .cpp files of CUDA builds (it needs the CUDA headers).
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"

namespace urpe::cuda {

// ---- error checks: file, line, the operation and CUDA's own words, as a urpe::Error ----

[[noreturn]] void fail_cuda(cudaError_t status, const char* what, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t status, const char* what, const char* file, int line);
const char* cublas_status_name(cublasStatus_t status);

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    const cudaError_t urpe_cuda_status_ = (call);                                          \
    if (urpe_cuda_status_ != cudaSuccess)                                                  \
      ::urpe::cuda::fail_cuda(urpe_cuda_status_, #call, __FILE__, __LINE__);               \
  } while (0)

#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    const cublasStatus_t urpe_cublas_status_ = (call);                                     \
    if (urpe_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                      \
      ::urpe::cuda::fail_cublas(urpe_cublas_status_, #call, __FILE__, __LINE__);           \
  } while (0)

// After a kernel launch: reports a bad launch configuration (or an earlier asynchronous fault)
// naming the kernel's op.
#define CUDA_CHECK_LAUNCH(op_name)                                                         \
  do {                                                                                     \
    const cudaError_t urpe_launch_status_ = cudaGetLastError();                            \
    if (urpe_launch_status_ != cudaSuccess)                                                \
      ::urpe::cuda::fail_cuda(urpe_launch_status_, op_name, __FILE__, __LINE__);           \
  } while (0)

// ---- caching allocator ----
// Requests are rounded up to a size class (multiples of 512 B below 1 MiB; above that, the four
// classes 1, 1.25, 1.5 and 1.75 × 2^k, so at most 25% is wasted); a released block goes onto its
// class's free list and the next request of that class takes it without calling cudaMalloc. When
// cudaMalloc fails, the cached blocks are returned to the driver and the call is retried once.
class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Larger requests are refused (urpe::Error) before any rounding could wrap around.
  static constexpr size_t kMaxAllocationBytes = size_t(1) << 62;
  static size_t size_class(size_t bytes);
  void* allocate(size_t bytes);
  void release(void* pointer, size_t bytes);
  void empty_cache();  // frees every cached (unused) block

  size_t bytes_in_use() const;  // class bytes of live blocks (eager and pools')
  size_t bytes_cached() const;  // class bytes waiting on the eager free lists
  size_t peak_bytes() const;    // the most bytes_in_use has been since creation / reset_peak
  void reset_peak();

  // ---- graph pools (CUDA graphs, docs/cuda.md#cuda-graphs) ----
  // A captured step replays the addresses it was captured with, so its blocks must be its own for
  // the graph's life (PyTorch's private graph pools). While a pool is active (a capture) every
  // allocation comes from it: a block of the class on the pool's free list, else one taken from
  // the eager free lists into the pool (the eager warm-up steps left the step's blocks there),
  // else an error: a capture may not call cudaMalloc. A block of a pool that is freed, during the
  // capture or after it, goes back to that pool's free list only, so no eager tensor is ever
  // handed memory that a replay writes; stream-ordered reuse inside the captured step is valid as
  // it is for eager work. Retiring a pool (with its graph) hands its free blocks to the eager
  // lists at once and each live one when it is released. Pools are numbered from 1; 0 is none.
  int create_pool();
  void set_active_pool(int pool);  // 0: allocations are eager again
  int active_pool() const;
  void retire_pool(int pool);
  size_t pool_bytes(int pool) const;      // class bytes the pool owns (live and free)
  size_t pool_free_bytes(int pool) const;  // of which on its free list
  bool owned_by_pool(const void* pointer) const;  // a live pool's block (a test's check)
  // The pre-fill of a pool: while counting, each class's blocks that the counted work allocated
  // and has not released are followed, and end_demand returns their maximum per class: the
  // blocks of each class that the same work needs from a pool that holds nothing else (a block
  // that lived before the work and is released by it is not counted as one to reuse). prefill_pool then gives the pool that many free blocks of
  // each class, from the eager free lists first, cudaMalloc for the rest (before the capture).
  // Blocks filled from the host before the graph's first launch (cached_table's, whose upload a
  // capture defers to its end) must be ones no captured work touches: were such a block reused
  // inside the capture, an earlier node of the graph would overwrite the table at every replay.
  // allocate_untouched gives one: while a pool is active, from the pool's reserve (pre-filled,
  // never handed out to captured work), else from the eager free lists; eagerly, a plain block.
  // note_untouched_request counts such a request (a table asked for, hit or not) in the demand's
  // `untouched` while counting: what the reserve needs.
  void* allocate_untouched(size_t bytes);
  void note_untouched_request(size_t bytes);
  void begin_demand();
  AllocationDemand end_demand();
  void prefill_pool(int pool, const AllocationDemand& demand);

 private:
  struct Pool {
    std::map<size_t, std::vector<void*>> free_lists;
    std::map<size_t, std::vector<void*>> reserve;  // for allocate_untouched only
    size_t owned = 0, free = 0;
  };
  void free_cached_locked();
  void* take_for_pool_locked(size_t klass, size_t bytes);
  void* adopt_eager_block_locked(Pool& pool, size_t klass, size_t bytes, const char* what, const char* looked_in);
  int device_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_lists_;
  size_t in_use_ = 0, cached_ = 0, peak_ = 0;
  std::map<int, Pool> pools_;               // live pools
  std::map<const void*, int> pool_of_;      // every block a pool took, live or retired
  int active_pool_ = 0, next_pool_ = 1;
  bool counting_demand_ = false;
  std::map<size_t, int64_t> demand_now_, demand_peak_;
  std::set<const void*> demand_blocks_;  // allocated while counting and not yet released
  std::map<size_t, size_t> untouched_demand_;
};

class Context;

// A step captured on a context's stream and instantiated (Context::end_capture). It owns its
// graph and its allocator pool: the blocks the captured work reads and writes stay reserved
// until it is destroyed, which also unpins its tables. Destroy it before its context.
class CapturedGraph {
 public:
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  // cudaGraphLaunch on the context's stream. The device checks the capture deferred are armed
  // again first (their slots are the graph's memsets), so the next read reports a bad value of
  // this replay; pending checks of eager work are reported before (a wait, only if any).
  void launch();
  size_t pool_bytes() const;
  cudaGraph_t graph() const { return graph_; }

 private:
  friend class Context;
  CapturedGraph() = default;
  Context* context_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int pool_ = 0;
  std::vector<CheckRaise> checks_;  // in slot order from slot 0
  std::vector<void*> pinned_tables_;
};

// ---- the context ----
class Context {
 public:
  explicit Context(int device_index);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  // cuBLASLt (ops/matmul_cuda.cu: linear's GEMM with its bias as an epilogue and a bf16 D written
  // directly): one handle and one workspace, made with the context, so no call allocates and none
  // does while a CUDA graph is captured. cublas_lt() is null where cuBLASLt could not start;
  // lt_unavailable() then says why (empty when it runs), and linear keeps its cuBLAS path.
  cublasLtHandle_t cublas_lt() const { return cublas_lt_; }
  void* lt_workspace() const { return lt_workspace_; }
  size_t lt_workspace_bytes() const { return lt_workspace_bytes_; }
  const std::string& lt_unavailable() const { return lt_unavailable_; }
  // On by default. Off: linear runs its cuBLAS path even where cuBLASLt could (the bias broadcast
  // and β = 1, a bf16 output rounded in a pass): the bench times both, a test compares them.
  bool lt_epilogues() const { return lt_epilogues_ && cublas_lt_ != nullptr; }
  void set_lt_epilogues(bool on) { lt_epilogues_ = on; }
  // ops/matmul_lt.cpp's cache of cuBLASLt plans (descriptors and the heuristic's algorithm per
  // layout), kept with the context and typed only in that file (destroyed before the handle).
  void* lt_plans() const { return lt_plans_.get(); }
  void set_lt_plans(void* plans, void (*destroy)(void*)) { lt_plans_ = {plans, destroy}; }
  // cuBLAS's workspace (cublasSetWorkspace at creation): NVIDIA's recommended size, 32 MiB on
  // Hopper (sm_90) and later, 4 MiB before. A GEMM then allocates nothing (CUDA graphs).
  static size_t cublas_workspace_bytes(const cudaDeviceProp& properties);
  const void* cublas_workspace() const { return cublas_workspace_; }
  size_t cublas_workspace_size() const { return cublas_workspace_bytes_; }
  const cudaDeviceProp& properties() const { return properties_; }
  int multiprocessors() const { return properties_.multiProcessorCount; }
  // Makes this context's device current for the calling host thread (cheap when it already is).
  void activate() const;

  CachingAllocator& allocator() { return allocator_; }
  size_t peak_bytes() const { return allocator_.peak_bytes(); }
  void reset_peak() { allocator_.reset_peak(); }
  size_t bytes_in_use() const { return allocator_.bytes_in_use(); }

  // TF32 tensor-core GEMMs (10-bit mantissa products): off by default, so CUDA matches the CPU
  // to float32 rounding; the trainer's --tf32 turns it on.
  bool tf32() const { return tf32_; }
  void set_tf32(bool on) { tf32_ = on; }
  // The fused URPE attention's tensor-core tiles in BF16 (m16n8k16) instead of TF32: off by
  // default; precision=bf16 turns it on (ops/urpe_flash_tc.h).
  bool bf16_tiles() const { return bf16_tiles_; }
  void set_bf16_tiles(bool on) { bf16_tiles_ = on; }
  // The fused attention's tensor-core kernels software-pipelined (cp.async staging, the same
  // bits): automatic by default (cuda::TcPipeline, ops/urpe_flash_tc.h).
  TcPipeline tc_pipeline() const { return tc_pipeline_; }
  void set_tc_pipeline(TcPipeline mode) { tc_pipeline_ = mode; }
  // The tensor-core forward's 16-row blocks per warp (cuda::TcRows, tensor/cuda_tc_rows.h; the
  // same bits): automatic by default.
  TcRows tc_rows() const { return tc_rows_; }
  void set_tc_rows(TcRows mode) { tc_rows_ = mode; }
  // What the tensor-core attention kernels last ran (cuda::TcKernelsRan), set by their launchers.
  TcKernelsRan& tc_kernels_ran() { return tc_kernels_ran_; }

  // Host synchronisations (tensor/cuda_backend.h): every wait of the host on this context's
  // stream is counted here, by the primitive or the op that waits, before it waits.
  void note_host_sync(HostSync kind, size_t bytes);
  HostSyncCounts host_sync_counts() const { return host_syncs_; }
  // A device copy of a small host table (a multi-tensor kernel's pointers and chunks), uploaded
  // once (through `upload`) and handed out again while a call asks for the same bytes: an
  // optimizer step over an unchanged parameter set copies nothing. Matched by content (a
  // byte compare of a few KB). Holds the last kTableCacheEntries tables; the pointer stays valid until
  // kTableCacheEntries other tables have been asked for, so a caller uses it at once (its
  // kernels are stream-ordered before any later upload that could replace it).
  static constexpr size_t kTableCacheEntries = 16;
  const void* cached_table(const void* host, size_t bytes);
  // Tables uploaded by cached_table since creation (a test counts the misses).
  uint64_t table_uploads() const { return table_uploads_; }

  // A host-to-device copy that does not make the host wait: the bytes are copied on the host into
  // a block of page-locked (pinned) staging memory and the device copy is queued on the stream
  // from there; `src` may go at once. A staging block is reused once the stream has passed its
  // copy (an event, queried, not waited for); only when kMaxStagingBlocks are all still in
  // flight does the host wait (counted as a synchronize).
  static constexpr size_t kMaxStagingBlocks = 64;
  void upload(void* dst, const void* src, size_t bytes);
  size_t staging_bytes() const;  // pinned bytes held for uploads

  // Dropout's step anchor (ops/dropout.h, mark_dropout_step): the dropout stream's {seed, offset
  // at the step's start} in 16 bytes of device memory (allocated at the first mark, kept for the
  // context's life, so a captured graph may read it), and the host's copy of the last upload. A
  // dropout drawn from that stream passes offset − start and its kernel reads the pair.
  struct DropoutAnchor {
    uint64_t seed = 0, start = 0;
    const uint64_t* device = nullptr;  // {seed, start}; null before the first mark
  };
  const DropoutAnchor& dropout_anchor() const { return dropout_anchor_; }
  // Uploads {seed, start} (stream-ordered from pinned staging: kernels queued before it read the
  // previous pair). Not while the stream captures: a captured upload would replay stale bytes.
  void set_dropout_anchor(uint64_t seed, uint64_t start);

  // Checks made on the device (cuda_backend.h, defer_check): at most kMaxPendingChecks wait for
  // a read; one more makes the host wait and report them first (counted as a synchronize).
  static constexpr size_t kMaxPendingChecks = 256;
  int64_t* defer_check(CheckRaise raise);
  // A read of `bytes` from the device into host memory, waiting for the stream; the pending
  // checks' slots come back with it and any that failed raises its error after the copy.
  void read_back(void* dst, const void* src, size_t bytes);
  // Waits for the stream (counted as `kind`) and reports the pending checks.
  void synchronize_and_check(HostSync kind);

  // cudaStreamSynchronize on the stream, counted. Refused while the stream captures (a graph
  // cannot hold a wait; the capture then fails and its caller runs the step eagerly).
  void synchronize_stream(HostSync kind, size_t bytes = 0) {
    refuse_while_capturing("a host wait for the GPU");
    note_host_sync(kind, bytes);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // ---- CUDA graphs (docs/cuda.md#cuda-graphs) ----
  // begin_capture: the stream starts capturing (global mode) into a graph with a new private
  // pool of the allocator (CachingAllocator, "graph pools"), pre-filled with `prefill` (blocks
  // per class, CachingAllocator::end_demand of an eager step) and active until the capture ends; the
  // pending device checks are reported first (a wait, only if any are pending), so the checks the
  // capture defers are its own. While it captures: an upload or a host wait is refused with an
  // error naming it; a table of cached_table that misses is allocated from the pool and its
  // upload deferred to the end of the capture (tables are constant: one upload serves every
  // replay), and every table the capture uses is pinned (not evicted) while the graph lives.
  // end_capture instantiates the graph (it throws if the capture failed: the runtime's words);
  // abort_capture ends a capture that an error interrupted and drops what it made. Either way the
  // allocator is eager again.
  void begin_capture(const AllocationDemand& prefill = {});
  CapturedGraphPtr end_capture();
  void abort_capture();
  bool capturing() const { return capture_ != nullptr; }

 private:
  int device_;
  cudaDeviceProp properties_{};
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublas_lt_ = nullptr;
  void* lt_workspace_ = nullptr;
  size_t lt_workspace_bytes_ = 0;
  std::string lt_unavailable_;
  bool lt_epilogues_ = true;
  std::unique_ptr<void, void (*)(void*)> lt_plans_{nullptr, nullptr};  // no shared_ptr: no atomics in a .cu
  void* cublas_workspace_ = nullptr;
  size_t cublas_workspace_bytes_ = 0;
  CachingAllocator allocator_;
  bool tf32_ = false;
  bool bf16_tiles_ = false;
  TcPipeline tc_pipeline_ = TcPipeline::automatic;
  TcRows tc_rows_ = TcRows::automatic;
  TcKernelsRan tc_kernels_ran_;
  HostSyncCounts host_syncs_;
  struct CachedTable {
    std::vector<unsigned char> host;
    void* device = nullptr;
    uint64_t last_use = 0;
    int pins = 0;  // graphs that read it: not evicted while > 0
  };
  // What a capture in progress has made (begin_capture … end_capture / abort_capture).
  struct Capture {
    int pool = 0;
    std::vector<void*> pinned_tables;  // device blocks of the tables it used (pinned once each)
    std::vector<void*> new_tables;     // of which those it created
    std::vector<std::pair<void*, std::vector<unsigned char>>> deferred_uploads;  // the new tables' bytes
  };
  friend class CapturedGraph;
  void refuse_while_capturing(const char* what) const;
  void unpin_tables(const std::vector<void*>& blocks);
  std::unique_ptr<Capture> capture_;
  std::vector<CachedTable> tables_;
  struct StagingBlock {
    void* pinned = nullptr;
    size_t bytes = 0;
    cudaEvent_t copied = nullptr;  // recorded after the block's last copy
  };
  StagingBlock& staging_block(size_t bytes);
  void upload_locked(void* dst, const void* src, size_t bytes);
  std::vector<StagingBlock> staging_;
  size_t queue_check_readback();           // the slots' copy into pinned memory; returns how many
  void raise_failed_checks(size_t count);  // after the wait: calls the first `count` raises
  DropoutAnchor dropout_anchor_;
  uint64_t* dropout_anchor_slot_ = nullptr;  // device, 2 words
  std::vector<CheckRaise> checks_;
  int64_t* check_slots_ = nullptr;    // device, kMaxPendingChecks
  int64_t* check_results_ = nullptr;  // pinned host, kMaxPendingChecks
  mutable std::mutex host_tables_mutex_;  // tables_ and staging_ (ops may run on several threads)
  uint64_t table_clock_ = 0, table_uploads_ = 0;
};

// A temporary device buffer from the context's caching allocator (scratch for partial sums,
// sort keys); released when it goes out of scope, which is stream-ordered and therefore safe.
class DeviceBuffer {
 public:
  DeviceBuffer(Context& context, size_t bytes)
      : context_(&context), bytes_(bytes), data_(bytes ? context.allocator().allocate(bytes) : nullptr) {}
  ~DeviceBuffer() {
    if (data_) context_->allocator().release(data_, bytes_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T> T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  Context* context_;
  size_t bytes_;
  void* data_;
};

// Grid size for a grid-stride loop over n items: enough blocks to fill the device a few times
// over, never more than the work needs, at least one.
int grid_for(const Context& context, int64_t n, int threads);

}  // namespace urpe::cuda
