// The CUDA context (stream, cuBLAS handle, caching allocator) and the device primitives of
// tensor/cuda_backend.h: allocation, copies, fill, accumulate, synchronize, profiler range.
//
// Kernels here are pure streaming: fill writes 4 B per element, accumulate reads 8 B and writes
// 4 B per element; both are grid-stride loops over int64 indices.
#include "tensor/cuda_context.h"

#include <cuda_bf16.h>
#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <sstream>

#include "tensor/bytes.h"
#include "tensor/cuda_backend.h"
#include "tensor/parallel_copy.h"

namespace urpe::cuda {

// ---- errors ----

void fail_cuda(cudaError_t status, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the next check does not report it again
  URPE_FAIL("CUDA error in " << what << " at " << file << ":" << line << ": "
                             << cudaGetErrorName(status) << " (" << cudaGetErrorString(status)
                             << ")");
}

const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
  }
}

void fail_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  URPE_FAIL("cuBLAS error in " << what << " at " << file << ":" << line << ": "
                               << cublas_status_name(status) << " (" << static_cast<int>(status)
                               << ")");
}

// ---- caching allocator ----

namespace {
thread_local AllocationObserver t_allocation_observer;  // set_allocation_observer (tests)
void notify_allocation(const void* block, size_t class_bytes) {
  if (t_allocation_observer) t_allocation_observer(block, class_bytes);
}
}  // namespace

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) return 0;
  // Past 2^62 the doubling below would wrap to 0 and never end; no device has that much anyway.
  URPE_CHECK(bytes <= kMaxAllocationBytes, "cannot allocate " << bytes << " bytes of device memory ("
                                               << human_bytes(static_cast<double>(bytes))
                                               << "): more than any device has");
  constexpr size_t kSmallStep = 512, kLarge = size_t(1) << 20;
  if (bytes <= kLarge) return (bytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  size_t power = kLarge;
  while (power * 2 <= bytes) power *= 2;  // power ≤ bytes < 2·power
  const size_t quarter = power / 4;
  return (bytes + quarter - 1) / quarter * quarter;  // one of 1, 1.25, 1.5, 1.75, 2 × power
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Best effort at exit: the driver may already be shutting down, so errors are ignored here.
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess) {
    cudaSetDevice(device_);
    for (auto& entry : free_lists_)
      for (void* p : entry.second) cudaFree(p);
    for (auto& pool : pools_)
      for (auto* lists : {&pool.second.free_lists, &pool.second.reserve})
        for (auto& entry : *lists)
          for (void* p : entry.second) cudaFree(p);
    cudaSetDevice(previous);
  }
  cudaGetLastError();
}

void CachingAllocator::free_cached_locked() {
  if (free_lists_.empty()) return;
  // A cached block may still be read or written by queued kernels (release is stream-ordered,
  // not immediate): wait for the device before handing blocks back to the driver. (Not counted
  // as a host synchronisation of a context: the allocator knows none; it happens only when
  // cudaMalloc fails or empty_cache is called, never in a steady step.)
  CUDA_CHECK(cudaDeviceSynchronize());
  for (auto& entry : free_lists_)
    for (void* p : entry.second) CUDA_CHECK(cudaFree(p));
  free_lists_.clear();
  cached_ = 0;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_cached_locked();
}

// A block of class `klass` moved from the eager cache into the capturing graph's pool (the pool's
// until the graph retires). A capture cannot call cudaMalloc, so an empty eager list is an error
// naming what asked (`what`) and where it was looked for first (`looked_in`).
void* CachingAllocator::adopt_eager_block_locked(Pool& pool, size_t klass, size_t bytes, const char* what,
                                                 const char* looked_in) {
  auto eager = free_lists_.find(klass);
  const double mib = 1.0 / (1024.0 * 1024.0);
  URPE_CHECK(eager != free_lists_.end() && !eager->second.empty(),
             "CUDA graph capture on cuda:" << device_ << ": " << what << " of " << bytes << " bytes (" << klass * mib
                                           << " MiB class) was asked for and neither the graph's " << looked_in
                                           << " nor the eager cache holds one; a capture cannot call cudaMalloc "
                                              "(run the same step eagerly first so that its blocks are cached)");
  void* pointer = eager->second.back();
  eager->second.pop_back();
  cached_ -= klass;
  pool.owned += klass;
  pool_of_[pointer] = active_pool_;
  return pointer;
}

void* CachingAllocator::take_for_pool_locked(size_t klass, size_t bytes) {
  Pool& pool = pools_.at(active_pool_);
  void* pointer = nullptr;
  auto own = pool.free_lists.find(klass);
  if (own != pool.free_lists.end() && !own->second.empty()) {  // freed earlier in the capture
    pointer = own->second.back();
    own->second.pop_back();
    pool.free -= klass;
  } else {
    pointer = adopt_eager_block_locked(pool, klass, bytes, "a block", "pool");
  }
  in_use_ += klass;
  peak_ = std::max(peak_, in_use_);
  return pointer;
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t klass = size_class(bytes);
  if (klass == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_pool_ != 0) {
    void* pointer = take_for_pool_locked(klass, bytes);
    notify_allocation(pointer, klass);
    return pointer;
  }
  auto it = free_lists_.find(klass);
  void* pointer = nullptr;
  if (it != free_lists_.end() && !it->second.empty()) {
    pointer = it->second.back();
    it->second.pop_back();
    cached_ -= klass;
  } else {
    cudaError_t status = cudaMalloc(&pointer, klass);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      free_cached_locked();  // give the cached blocks back to the driver and try once more
      status = cudaMalloc(&pointer, klass);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      cudaGetLastError();
      const double mib = 1.0 / (1024.0 * 1024.0);
      URPE_FAIL("CUDA out of memory on cuda:" << device_ << ": requested " << bytes
                << " bytes (" << klass * mib << " MiB after rounding); urpe has "
                << in_use_ * mib << " MiB in use (peak " << peak_ * mib << " MiB); the device has "
                << free_bytes * mib << " MiB free of " << total_bytes * mib
                << " MiB. Try a smaller batch size or sequence length.");
    }
    if (status != cudaSuccess) fail_cuda(status, "cudaMalloc", __FILE__, __LINE__);
  }
  in_use_ += klass;
  peak_ = std::max(peak_, in_use_);
  if (counting_demand_) {
    demand_blocks_.insert(pointer);
    const int64_t now = ++demand_now_[klass];
    demand_peak_[klass] = std::max(demand_peak_[klass], now);
  }
  notify_allocation(pointer, klass);
  return pointer;
}

void CachingAllocator::release(void* pointer, size_t bytes) {
  if (!pointer) return;
  const size_t klass = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_ -= klass;
  // Only the blocks the counted work allocated: one that lived before it is not the pool's to reuse
  // (a capture leaves it to the eager lists, or keeps it apart).
  if (counting_demand_ && demand_blocks_.erase(pointer) > 0) --demand_now_[klass];
  if (!pool_of_.empty()) {
    const auto owner = pool_of_.find(pointer);
    if (owner != pool_of_.end()) {
      const auto pool = pools_.find(owner->second);
      if (pool != pools_.end()) {  // back to its graph's pool only
        pool->second.free_lists[klass].push_back(pointer);
        pool->second.free += klass;
        return;
      }
      pool_of_.erase(owner);  // its pool retired: an eager block again
    }
  }
  if (active_pool_ != 0) {
    // An eager block freed during a capture may have been read by the captured work (a tensor
    // of the step before): the graph keeps it, as if its pool had taken it.
    Pool& pool = pools_.at(active_pool_);
    pool.free_lists[klass].push_back(pointer);
    pool.owned += klass;
    pool.free += klass;
    pool_of_[pointer] = active_pool_;
    return;
  }
  free_lists_[klass].push_back(pointer);
  cached_ += klass;
}

void CachingAllocator::begin_demand() {
  std::lock_guard<std::mutex> lock(mutex_);
  counting_demand_ = true;
  demand_now_.clear();
  demand_peak_.clear();
  demand_blocks_.clear();
}

AllocationDemand CachingAllocator::end_demand() {
  std::lock_guard<std::mutex> lock(mutex_);
  counting_demand_ = false;
  AllocationDemand out;
  for (const auto& [klass, peak] : demand_peak_)
    if (peak > 0) out.blocks[klass] = static_cast<size_t>(peak);
  out.untouched = untouched_demand_;
  untouched_demand_.clear();
  demand_blocks_.clear();
  return out;
}

void* CachingAllocator::allocate_untouched(size_t bytes) {
  const size_t klass = size_class(bytes);
  if (klass == 0) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (active_pool_ != 0) {
      Pool& pool = pools_.at(active_pool_);
      auto reserved = pool.reserve.find(klass);
      void* pointer = nullptr;
      if (reserved != pool.reserve.end() && !reserved->second.empty()) {
        pointer = reserved->second.back();
        reserved->second.pop_back();
        pool.free -= klass;
      } else {
        pointer = adopt_eager_block_locked(pool, klass, bytes, "a table", "reserve");
      }
      in_use_ += klass;
      peak_ = std::max(peak_, in_use_);
      notify_allocation(pointer, klass);
      return pointer;
    }
  }
  return allocate(bytes);
}

void CachingAllocator::note_untouched_request(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (counting_demand_) ++untouched_demand_[size_class(bytes)];
}

void CachingAllocator::prefill_pool(int pool_id, const AllocationDemand& demand) {
  std::lock_guard<std::mutex> lock(mutex_);
  Pool& pool = pools_.at(pool_id);
  for (int kind = 0; kind < 2; ++kind)
  for (const auto& [klass, count] : kind == 0 ? demand.blocks : demand.untouched) {
    std::vector<void*>& own = (kind == 0 ? pool.free_lists : pool.reserve)[klass];
    std::vector<void*>& eager = free_lists_[klass];
    while (own.size() < count) {
      void* pointer = nullptr;
      if (!eager.empty()) {
        pointer = eager.back();
        eager.pop_back();
        cached_ -= klass;
      } else {
        const cudaError_t status = cudaMalloc(&pointer, klass);
        if (status != cudaSuccess) {
          cudaGetLastError();
          URPE_FAIL("CUDA graph pool on cuda:" << device_ << ": cudaMalloc of " << klass << " bytes for the pool failed: "
                                               << cudaGetErrorName(status));
        }
      }
      own.push_back(pointer);
      pool.owned += klass;
      pool.free += klass;
      pool_of_[pointer] = pool_id;
    }
  }
}

int CachingAllocator::create_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int id = next_pool_++;
  pools_[id];
  return id;
}

void CachingAllocator::set_active_pool(int pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  URPE_CHECK(pool == 0 || pools_.count(pool), "CachingAllocator: graph pool " << pool << " does not exist (internal error)");
  active_pool_ = pool;
}

int CachingAllocator::active_pool() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_pool_;
}

void CachingAllocator::retire_pool(int pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  if (active_pool_ == pool) active_pool_ = 0;
  // The free blocks join the eager lists now (the graph is gone: no later launch writes them,
  // and the launches already queued are stream-ordered before any eager use); live ones when
  // their tensors release them (release finds no pool).
  for (auto* lists : {&it->second.free_lists, &it->second.reserve})
    for (auto& [klass, blocks] : *lists)
      for (void* p : blocks) {
        free_lists_[klass].push_back(p);
        cached_ += klass;
        pool_of_.erase(p);
      }
  pools_.erase(it);
}

size_t CachingAllocator::pool_bytes(int pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.owned;
}

size_t CachingAllocator::pool_free_bytes(int pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.free;
}

bool CachingAllocator::owned_by_pool(const void* pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = pool_of_.find(pointer);
  return it != pool_of_.end() && pools_.count(it->second) > 0;
}

size_t CachingAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}
size_t CachingAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}
size_t CachingAllocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}
void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = in_use_;
}

// ---- context ----

Context::Context(int device_index) : device_(device_index), allocator_(device_index) {
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaGetDeviceProperties(&properties_, device_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUBLAS_CHECK(cublasCreate(&cublas_));
  CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  // cuBLAS's own workspace, set once (after cublasSetStream, which resets it): with it a GEMM
  // allocates nothing, as a CUDA-graph capture of a step requires. Outside the caching allocator,
  // so the peak tensor memory stays the tensors'.
  cublas_workspace_bytes_ = cublas_workspace_bytes(properties_);
  CUDA_CHECK(cudaMalloc(&cublas_workspace_, cublas_workspace_bytes_));
  CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, cublas_workspace_bytes_));
  // cuBLASLt's workspace: 32 MiB on Hopper and later, 4 MiB before (cuBLAS's own recommendation,
  // PyTorch's default), allocated once here rather than from the caching allocator, so that it is
  // no tensor's memory in the peaks.
  const cublasStatus_t lt = cublasLtCreate(&cublas_lt_);
  if (lt != CUBLAS_STATUS_SUCCESS) {
    cublas_lt_ = nullptr;
    lt_unavailable_ = std::string("cublasLtCreate failed: ") + cublas_status_name(lt);
  } else {
    lt_workspace_bytes_ = cublas_workspace_bytes(properties_);
    if (cudaMalloc(&lt_workspace_, lt_workspace_bytes_) != cudaSuccess) {
      cudaGetLastError();
      lt_unavailable_ = "no device memory for cuBLASLt's " + std::to_string(lt_workspace_bytes_ >> 20) + " MiB workspace";
      lt_workspace_ = nullptr;
      lt_workspace_bytes_ = 0;
      cublasLtDestroy(cublas_lt_);
      cublas_lt_ = nullptr;
    }
  }
}

size_t Context::cublas_workspace_bytes(const cudaDeviceProp& properties) {
  return properties.major >= 9 ? size_t(32) << 20 : size_t(4) << 20;
}

Context::~Context() {
  // Destructors must not throw: release what we own and ignore errors (e.g. at driver shutdown).
  // The allocator's own destructor (after this body) frees the cached blocks the same way.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  for (CachedTable& table : tables_) allocator_.release(table.device, table.host.size());
  if (check_slots_) allocator_.release(check_slots_, sizeof(int64_t) * kMaxPendingChecks);
  if (dropout_anchor_slot_) allocator_.release(dropout_anchor_slot_, 2 * sizeof(uint64_t));
  if (check_results_) cudaFreeHost(check_results_);
  for (StagingBlock& block : staging_) {
    cudaFreeHost(block.pinned);
    cudaEventDestroy(block.copied);
  }
  lt_plans_.reset();  // descriptors, before the handle they were made for
  if (cublas_lt_) cublasLtDestroy(cublas_lt_);
  if (lt_workspace_) cudaFree(lt_workspace_);
  if (cublas_) cublasDestroy(cublas_);
  if (cublas_workspace_) cudaFree(cublas_workspace_);
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

namespace {
thread_local HostSyncObserver t_host_sync_observer;  // set_host_sync_observer (tests)
}  // namespace

void Context::note_host_sync(HostSync kind, size_t bytes) {
  ++host_syncs_.by_kind[static_cast<int>(kind)];
  if (t_host_sync_observer) t_host_sync_observer(kind, bytes);
}

const void* Context::cached_table(const void* host, size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(host_tables_mutex_);
  const auto* begin = static_cast<const unsigned char*>(host);
  ++table_clock_;
  // Every request, hit or miss, counts toward a capture's reserve: a table an eager step hits
  // (the same gradients' blocks) may miss in the capture (its gradients in the graph's pool).
  if (!capture_) allocator_.note_untouched_request(bytes);
  // A capture pins each table it reads once (the graph reads it at every replay).
  auto pin_for_capture = [&](CachedTable& table) {
    if (!capture_) return;
    auto& pinned = capture_->pinned_tables;
    if (std::find(pinned.begin(), pinned.end(), table.device) != pinned.end()) return;
    pinned.push_back(table.device);
    ++table.pins;
  };
  for (CachedTable& table : tables_)
    if (table.host.size() == bytes && std::equal(begin, begin + bytes, table.host.begin())) {
      table.last_use = table_clock_;
      pin_for_capture(table);
      return table.device;
    }
  // A miss: the least recently used entry that no graph pins makes room (its block goes back to
  // the allocator, stream-ordered after the kernels that read it); with every entry pinned the
  // cache grows past kTableCacheEntries.
  if (tables_.size() >= kTableCacheEntries) {
    auto oldest = tables_.end();
    for (auto it = tables_.begin(); it != tables_.end(); ++it)
      if (it->pins == 0 && (oldest == tables_.end() || it->last_use < oldest->last_use)) oldest = it;
    if (oldest != tables_.end()) {
      allocator_.release(oldest->device, oldest->host.size());
      tables_.erase(oldest);
    }
  }
  CachedTable table;
  table.host.assign(begin, begin + bytes);
  table.device = allocator_.allocate_untouched(bytes);  // the pool's reserve while a capture runs
  table.last_use = table_clock_;
  if (capture_) {
    // The upload waits for the end of the capture (a captured copy would read its staging block
    // again at every replay); the table's bytes are the same for every replay.
    capture_->deferred_uploads.emplace_back(table.device, table.host);
    capture_->new_tables.push_back(table.device);
  } else {
    upload_locked(table.device, host, bytes);
  }
  ++table_uploads_;
  tables_.push_back(std::move(table));
  pin_for_capture(tables_.back());
  return tables_.back().device;
}

Context::StagingBlock& Context::staging_block(size_t bytes) {
  // A free block that is large enough (the smallest such, so large ones stay for large uploads).
  StagingBlock* best = nullptr;
  for (StagingBlock& block : staging_) {
    if (block.bytes < bytes || (best && best->bytes <= block.bytes)) continue;
    const cudaError_t state = cudaEventQuery(block.copied);
    if (state == cudaErrorNotReady) continue;
    CUDA_CHECK(state);
    best = &block;
  }
  if (best) return *best;
  if (staging_.size() == kMaxStagingBlocks) {
    // Every block is in flight or too small: wait for the stream, then replace the smallest.
    synchronize_stream(HostSync::synchronize);
    auto smallest = std::min_element(staging_.begin(), staging_.end(),
                                     [](const StagingBlock& a, const StagingBlock& b) { return a.bytes < b.bytes; });
    if (smallest->bytes >= bytes) return *smallest;
    CUDA_CHECK(cudaFreeHost(smallest->pinned));
    CUDA_CHECK(cudaEventDestroy(smallest->copied));
    staging_.erase(smallest);
  }
  // A new block: at least 64 KiB, rounded up to a power of two, so that the sizes of the
  // batches' tensors settle on a few blocks after the first steps.
  size_t size = size_t(1) << 16;
  while (size < bytes) size *= 2;
  StagingBlock block;
  block.bytes = size;
  CUDA_CHECK(cudaMallocHost(&block.pinned, size));
  CUDA_CHECK(cudaEventCreate(&block.copied));
  staging_.push_back(block);
  return staging_.back();
}

void Context::upload(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(host_tables_mutex_);
  upload_locked(dst, src, bytes);
}

void Context::upload_locked(void* dst, const void* src, size_t bytes) {
  refuse_while_capturing("an upload from the host");
  StagingBlock& block = staging_block(bytes);
  parallel_copy(block.pinned, src, bytes);  // over the cores from 1 MiB on (tensor/parallel_copy.h)
  CUDA_CHECK(cudaMemcpyAsync(dst, block.pinned, bytes, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaEventRecord(block.copied, stream_));
}

void Context::set_dropout_anchor(uint64_t seed, uint64_t start) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream_, &capture));
  URPE_CHECK(capture == cudaStreamCaptureStatusNone,
             "mark_dropout_step: called while the stream captures a graph (the upload would replay stale); "
             "mark the step before the capture and before each launch");
  if (!dropout_anchor_slot_) dropout_anchor_slot_ = static_cast<uint64_t*>(allocator_.allocate(2 * sizeof(uint64_t)));
  const uint64_t pair[2] = {seed, start};
  upload(dropout_anchor_slot_, pair, sizeof(pair));
  dropout_anchor_ = {seed, start, dropout_anchor_slot_};
}

int64_t* Context::defer_check(CheckRaise raise) {
  if (!check_slots_) {
    check_slots_ = static_cast<int64_t*>(allocator_.allocate(sizeof(int64_t) * kMaxPendingChecks));
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&check_results_), sizeof(int64_t) * kMaxPendingChecks));
  }
  if (checks_.size() == kMaxPendingChecks) synchronize_and_check(HostSync::synchronize);
  int64_t* slot = check_slots_ + checks_.size();
  CUDA_CHECK(cudaMemsetAsync(slot, 0, sizeof(int64_t), stream_));
  checks_.push_back(std::move(raise));
  return slot;
}

size_t Context::queue_check_readback() {
  const size_t count = checks_.size();
  if (count > 0)
    CUDA_CHECK(cudaMemcpyAsync(check_results_, check_slots_, sizeof(int64_t) * count, cudaMemcpyDeviceToHost,
                               stream_));
  return count;
}

void Context::raise_failed_checks(size_t count) {
  if (count == 0) return;
  // Taken out first: a raise reads the op's input back to name the bad value (a read of its own).
  const std::vector<int64_t> values(check_results_, check_results_ + count);
  std::vector<CheckRaise> raises(std::make_move_iterator(checks_.begin()),
                                 std::make_move_iterator(checks_.begin() + count));
  checks_.erase(checks_.begin(), checks_.begin() + count);
  for (size_t k = 0; k < count; ++k)
    if (values[k] != 0) raises[k](values[k]);
}

void Context::read_back(void* dst, const void* src, size_t bytes) {
  const size_t checks = queue_check_readback();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  synchronize_stream(HostSync::device_to_host, bytes);
  raise_failed_checks(checks);
}

void Context::synchronize_and_check(HostSync kind) {
  const size_t checks = queue_check_readback();
  synchronize_stream(kind);
  raise_failed_checks(checks);
}

size_t Context::staging_bytes() const {
  std::lock_guard<std::mutex> lock(host_tables_mutex_);
  size_t total = 0;
  for (const StagingBlock& block : staging_) total += block.bytes;
  return total;
}

// ---- CUDA graphs ----

void Context::refuse_while_capturing(const char* what) const {
  URPE_CHECK(!capture_, "CUDA graph capture on cuda:" << device_ << ": " << what
                            << " inside the captured step (a graph replays neither; do it before the launch, "
                               "outside the capture)");
}

void Context::begin_capture(const AllocationDemand& prefill) {
  URPE_CHECK(!capture_, "Context::begin_capture: the stream already captures (internal error)");
  activate();
  if (!checks_.empty()) synchronize_and_check(HostSync::synchronize);  // the capture's checks start at slot 0
  auto capture = std::make_unique<Capture>();
  capture->pool = allocator_.create_pool();
  try {
    allocator_.prefill_pool(capture->pool, prefill);
  } catch (...) {
    allocator_.retire_pool(capture->pool);
    throw;
  }
  const cudaError_t status = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal);
  if (status != cudaSuccess) {
    allocator_.retire_pool(capture->pool);
    fail_cuda(status, "cudaStreamBeginCapture", __FILE__, __LINE__);
  }
  allocator_.set_active_pool(capture->pool);
  std::lock_guard<std::mutex> lock(host_tables_mutex_);
  capture_ = std::move(capture);
}

void Context::unpin_tables(const std::vector<void*>& blocks) {
  for (CachedTable& table : tables_)
    if (std::find(blocks.begin(), blocks.end(), table.device) != blocks.end()) --table.pins;
}

void Context::abort_capture() {
  if (!capture_) return;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);  // fails when the capture was invalidated: nothing to keep
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  allocator_.set_active_pool(0);
  std::unique_ptr<Capture> capture;
  {
    std::lock_guard<std::mutex> lock(host_tables_mutex_);
    capture = std::move(capture_);
    unpin_tables(capture->pinned_tables);
    // The tables it made were never uploaded: they must not be hit.
    for (auto it = tables_.begin(); it != tables_.end();)
      if (std::find(capture->new_tables.begin(), capture->new_tables.end(), it->device) != capture->new_tables.end()) {
        allocator_.release(it->device, it->host.size());
        it = tables_.erase(it);
      } else {
        ++it;
      }
  }
  checks_.clear();  // the capture's, never armed (the queue was empty at its start)
  allocator_.retire_pool(capture->pool);
}

CapturedGraphPtr Context::end_capture() {
  URPE_CHECK(capture_, "Context::end_capture: no capture in progress (internal error)");
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream_, &graph);
  if (status != cudaSuccess || graph == nullptr) {
    cudaGetLastError();
    abort_capture();
    URPE_FAIL("CUDA graph capture on cuda:" << device_ << " failed: cudaStreamEndCapture returned "
                                            << cudaGetErrorName(status) << " (" << cudaGetErrorString(status)
                                            << "): a call inside the step cannot be captured");
  }
  allocator_.set_active_pool(0);
  CapturedGraphPtr captured(new CapturedGraph());
  captured->context_ = this;
  captured->graph_ = graph;
  std::unique_ptr<Capture> capture;
  {
    std::lock_guard<std::mutex> lock(host_tables_mutex_);
    capture = std::move(capture_);
  }
  captured->pool_ = capture->pool;
  captured->pinned_tables_ = capture->pinned_tables;
  captured->checks_ = std::move(checks_);
  checks_.clear();
  const cudaError_t instantiated = cudaGraphInstantiate(&captured->exec_, graph, 0);
  if (instantiated != cudaSuccess) {
    captured->exec_ = nullptr;
    fail_cuda(instantiated, "cudaGraphInstantiate", __FILE__, __LINE__);  // the destructor cleans up
  }
  // The new tables' bytes, before the first launch reads them.
  for (const auto& [device, bytes] : capture->deferred_uploads) upload(device, bytes.data(), bytes.size());
  return captured;
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  cudaGetLastError();
  {
    std::lock_guard<std::mutex> lock(context_->host_tables_mutex_);
    context_->unpin_tables(pinned_tables_);
  }
  context_->allocator_.retire_pool(pool_);
}

void CapturedGraph::launch() {
  Context& context = *context_;
  context.activate();
  URPE_CHECK(!context.capture_, "CapturedGraph::launch: the stream captures (internal error)");
  if (!context.checks_.empty()) context.synchronize_and_check(HostSync::synchronize);
  context.checks_ = checks_;  // slots 0 … n − 1, as captured
  CUDA_CHECK(cudaGraphLaunch(exec_, context.stream_));
}

size_t CapturedGraph::pool_bytes() const { return context_->allocator_.pool_bytes(pool_); }

void Context::activate() const {
  int current = -1;
  CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) CUDA_CHECK(cudaSetDevice(device_));
}

int grid_for(const Context& context, int64_t n, int threads) {
  const int64_t needed = (n + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(context.multiprocessors()) * 32;
  return static_cast<int>(std::max<int64_t>(1, std::min(needed, cap)));
}

// ---- kernels of the tensor core ----

// dst[k] = value. Writes sizeof(T) B per element (4 for f32 and i32, 2 for bf16).
template <typename T>
__global__ void fill_kernel(T* __restrict__ dst, int64_t n, T value) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n;
       k += int64_t(gridDim.x) * blockDim.x)
    dst[k] = value;
}

// dst[k] += src[k] (autograd's gradient accumulation). Reads 8 B, writes 4 B per element.
__global__ void accumulate_f32_kernel(float* __restrict__ dst, const float* __restrict__ src,
                                      int64_t n) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n;
       k += int64_t(gridDim.x) * blockDim.x)
    dst[k] += src[k];
}

// A gradient of a bf16 tensor reached by two uses: widened, added in FP32, rounded once (RNE).
__global__ void accumulate_bf16_kernel(__nv_bfloat16* __restrict__ dst,
                                       const __nv_bfloat16* __restrict__ src, int64_t n) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n;
       k += int64_t(gridDim.x) * blockDim.x)
    dst[k] = __float2bfloat16_rn(__bfloat162float(dst[k]) + __bfloat162float(src[k]));
}

// ---- cuda_backend.h ----

bool built_with_cuda() { return true; }

int device_count() {
  int count = 0;
  // No driver, no device or a driver older than the runtime: report 0, never throw.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

size_t device_memory_bytes(int device_index) {
  if (device_index < 0 || device_index >= device_count()) return 0;
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device_index) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return properties.totalGlobalMem;
}

std::shared_ptr<Context> create_context(int device_index) {
  const int count = device_count();
  URPE_CHECK(count > 0, "cuda:" << device_index
                                << ": no CUDA device is visible (no GPU, or no NVIDIA driver); "
                                   "run with --device cpu");
  URPE_CHECK(device_index >= 0 && device_index < count,
             "cuda:" << device_index << ": only " << count << " CUDA device(s) visible");
  return std::make_shared<Context>(device_index);
}

void* allocate(Context* context, size_t bytes) {
  context->activate();
  return context->allocator().allocate(bytes);
}

void release(Context* context, void* pointer, size_t bytes) {
  context->allocator().release(pointer, bytes);
}

void copy_host_to_device(Context* context, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  context->activate();
  // Through pinned staging memory: queued on the stream, no wait (Context::upload).
  context->upload(dst, src, bytes);
}

void copy_device_to_host(Context* context, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  context->activate();
  context->read_back(dst, src, bytes);
}

void copy_device_to_device(Context* context, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  context->activate();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context->stream()));
}

void fill_f32(Context* context, float* dst, size_t n, float value) {
  if (n == 0) return;
  context->activate();
  const int threads = 256;
  fill_kernel<float><<<grid_for(*context, n, threads), threads, 0, context->stream()>>>(
      dst, static_cast<int64_t>(n), value);
  CUDA_CHECK_LAUNCH("fill_f32");
}

void fill_i32(Context* context, int32_t* dst, size_t n, int32_t value) {
  if (n == 0) return;
  context->activate();
  const int threads = 256;
  fill_kernel<int32_t><<<grid_for(*context, n, threads), threads, 0, context->stream()>>>(
      dst, static_cast<int64_t>(n), value);
  CUDA_CHECK_LAUNCH("fill_i32");
}

void fill_bf16(Context* context, bf16* dst, size_t n, bf16 value) {
  if (n == 0) return;
  context->activate();
  const int threads = 256;
  fill_kernel<uint16_t><<<grid_for(*context, n, threads), threads, 0, context->stream()>>>(
      reinterpret_cast<uint16_t*>(dst), static_cast<int64_t>(n), value.bits);
  CUDA_CHECK_LAUNCH("fill_bf16");
}

void accumulate_bf16(Context* context, bf16* dst, const bf16* src, size_t n) {
  if (n == 0) return;
  context->activate();
  const int threads = 256;
  accumulate_bf16_kernel<<<grid_for(*context, n, threads), threads, 0, context->stream()>>>(
      reinterpret_cast<__nv_bfloat16*>(dst), reinterpret_cast<const __nv_bfloat16*>(src),
      static_cast<int64_t>(n));
  CUDA_CHECK_LAUNCH("accumulate_bf16");
}

void accumulate_f32(Context* context, float* dst, const float* src, size_t n) {
  if (n == 0) return;
  context->activate();
  const int threads = 256;
  accumulate_f32_kernel<<<grid_for(*context, n, threads), threads, 0, context->stream()>>>(
      dst, src, static_cast<int64_t>(n));
  CUDA_CHECK_LAUNCH("accumulate_f32");
}

void synchronize(Context* context) {
  context->activate();
  context->synchronize_and_check(HostSync::synchronize);
}

const char* host_sync_name(HostSync kind) {
  switch (kind) {
    case HostSync::synchronize: return "synchronize";
    case HostSync::device_to_host: return "device-to-host";
    case HostSync::pageable_upload: return "pageable upload";
  }
  return "?";
}
HostSyncCounts host_sync_counts(Context* context) { return context->host_sync_counts(); }
HostSyncObserver set_host_sync_observer(HostSyncObserver observer) {
  std::swap(observer, t_host_sync_observer);
  return observer;
}
AllocationObserver set_allocation_observer(AllocationObserver observer) {
  std::swap(observer, t_allocation_observer);
  return observer;
}
void note_host_sync(Context* context, HostSync kind, size_t bytes) { context->note_host_sync(kind, bytes); }
void begin_capture(Context* context, const AllocationDemand& prefill) { context->begin_capture(prefill); }
void begin_allocation_demand(Context* context) { context->allocator().begin_demand(); }
AllocationDemand end_allocation_demand(Context* context) { return context->allocator().end_demand(); }
CapturedGraphPtr end_capture(Context* context) { return context->end_capture(); }
void CapturedGraphDeleter::operator()(CapturedGraph* graph) const { delete graph; }
void abort_capture(Context* context) { context->abort_capture(); }
void launch_graph(CapturedGraph& graph) { graph.launch(); }
size_t graph_pool_bytes(const CapturedGraph& graph) { return graph.pool_bytes(); }
uint64_t table_uploads(Context* context) { return context->table_uploads(); }
int64_t* defer_check(Context* context, CheckRaise raise) { return context->defer_check(std::move(raise)); }

size_t peak_bytes(Context* context) { return context->peak_bytes(); }
void reset_peak(Context* context) { context->reset_peak(); }
size_t bytes_in_use(Context* context) { return context->bytes_in_use(); }
void empty_cache(Context* context) { context->allocator().empty_cache(); }
void set_tf32(Context* context, bool on) { context->set_tf32(on); }
bool tf32(Context* context) { return context->tf32(); }
void set_bf16_tiles(Context* context, bool on) { context->set_bf16_tiles(on); }
bool bf16_tiles(Context* context) { return context->bf16_tiles(); }
void set_tc_pipeline(Context* context, TcPipeline mode) { context->set_tc_pipeline(mode); }
TcPipeline tc_pipeline(Context* context) { return context->tc_pipeline(); }
void set_tc_rows(Context* context, TcRows mode) { context->set_tc_rows(mode); }
TcRows tc_rows(Context* context) { return context->tc_rows(); }
void clear_tc_kernels_ran(Context* context) { context->tc_kernels_ran() = {}; }
TcKernelsRan tc_kernels_ran(Context* context) { return context->tc_kernels_ran(); }

std::string device_name(Context* context) {
  std::ostringstream out;
  out << context->properties().name << " (cuda:" << context->device() << ")";
  return out.str();
}

void profiler_start() { CUDA_CHECK(cudaProfilerStart()); }
void profiler_stop() { CUDA_CHECK(cudaProfilerStop()); }

}  // namespace urpe::cuda
