// NCCL behind dist::DeviceCollectives (built with URPE_NCCL: the CUDA toolkit's NCCL, or the
// CUDA simulator's stand-in). Counts are size_t in NCCL; every call is enqueued on the tensors'
// stream (the urpe context's one stream), so it is ordered after the kernels that wrote its input.
#include "base/dist/device_collectives.h"

#include <cstring>

#include "tensor/error.h"

#ifndef URPE_NCCL
#define URPE_NCCL 0
#endif
#if URPE_NCCL
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <nccl.h>

#include "tensor/cuda_context.h"
#endif

namespace urpe::dist {

#if URPE_NCCL
namespace {

#define NCCL_CHECK(call)                                                                          \
  do {                                                                                            \
    const ncclResult_t urpe_nccl_status_ = (call);                                                \
    URPE_CHECK(urpe_nccl_status_ == ncclSuccess, "NCCL: " #call " failed: "                       \
                                                     << ncclGetErrorString(urpe_nccl_status_));   \
  } while (0)

class Nccl final : public DeviceCollectives {
 public:
  Nccl(Communicator& comm, const Device& device) : context_(device.context()) {
    // Rank 0's unique id reaches every rank through MPI (the bytes as text).
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (comm.is_root()) NCCL_CHECK(ncclGetUniqueId(&id));
    std::string bytes(reinterpret_cast<const char*>(&id), sizeof id);
    comm.broadcast(bytes);
    URPE_CHECK(bytes.size() == sizeof id, "NCCL: the unique id from rank 0 has " << bytes.size() << " bytes");
    std::memcpy(&id, bytes.data(), sizeof id);
    CUDA_CHECK(cudaSetDevice(context_->device()));
    const ncclResult_t init = ncclCommInitRank(&comm_, comm.size(), id, comm.rank());
    URPE_CHECK(init == ncclSuccess, "NCCL: setting up the ranks' communicator failed ("
                                        << ncclGetErrorString(init) << "); every rank needs a GPU of its own "
                                        << "(device = cuda gives rank r of a machine GPU r % visible GPUs)");
    int version = 0;
    ncclGetVersion(&version);
    // NCCL_VERSION_CODE since 2.9: major·10000 + minor·100 + patch.
    describe_ = "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
                std::to_string(version % 100);
  }
  ~Nccl() override { ncclCommDestroy(comm_); }
  std::string describe() const override { return describe_; }

  void all_reduce_sum(float* data, int64_t n, float factor) override {
    const ncclRedOp_t op = pre_mul_sum(factor);
    NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat32, op, comm_, context_->stream()));
    NCCL_CHECK(ncclRedOpDestroy(op, comm_));
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t count, float factor) override {
    const ncclRedOp_t op = pre_mul_sum(factor);
    NCCL_CHECK(ncclReduceScatter(in, out, static_cast<size_t>(count), ncclFloat32, op, comm_, context_->stream()));
    NCCL_CHECK(ncclRedOpDestroy(op, comm_));
  }
  void all_gather(const float* mine, float* all, int64_t count) override {
    NCCL_CHECK(ncclAllGather(mine, all, static_cast<size_t>(count), ncclFloat32, comm_, context_->stream()));
  }

 private:
  // Σ_r factor_r · x_r: the factor is this rank's, passed by value (host immediate).
  ncclRedOp_t pre_mul_sum(float factor) {
    ncclRedOp_t op;
    NCCL_CHECK(ncclRedOpCreatePreMulSum(&op, &factor, ncclFloat32, ncclScalarHostImmediate, comm_));
    return op;
  }
  cuda::Context* context_;
  ncclComm_t comm_ = nullptr;
  std::string describe_;
};

}  // namespace
#endif

bool built_with_nccl() { return URPE_NCCL != 0; }

std::unique_ptr<DeviceCollectives> nccl_collectives(Communicator& comm, const Device& device) {
#if URPE_NCCL
  if (device.is_cuda()) return std::make_unique<Nccl>(comm, device);
#endif
  return nullptr;
}

}  // namespace urpe::dist
