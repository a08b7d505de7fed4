// CUDA simulator: this header stands in for NCCL's <nccl.h> when base/dist/device_collectives.cpp is
// compiled for tests/cuda_sim (urpe-cudasim and the test_cuda_sim_* suites), so that the NCCL
// path of data-parallel training runs in CI without a GPU. Simulated device memory is host memory,
// so each collective waits for the stream (the kernels that wrote its input) and then runs as the
// MPI collective over MPI_COMM_WORLD on those bytes; in a build without MPI (URPE_WITH_MPI), or
// with MPI not started, a communicator has one rank. Only the subset urpe calls, with NCCL's signatures and semantics (PreMulSum: each rank's
// input times its own scalar, then the sum). Header-only: only the dist library includes it, and it
// links MPI when there is MPI. It says nothing about NCCL's speed or its transport.
#pragma once
#include <cuda_runtime.h>
#if defined(URPE_WITH_MPI) && URPE_WITH_MPI
#include <mpi.h>
#define URPE_SIM_NCCL_MPI 1
#else
#define URPE_SIM_NCCL_MPI 0
#endif

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

namespace urpe_sim {
// What a collective writes counts as written for the simulator's initcheck (device_memory.cpp).
void mark_written(const void* p, size_t bytes);
}

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 0
#define NCCL_VERSION_CODE 22800

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
} ncclResult_t;

typedef enum { ncclFloat32 = 7, ncclFloat = 7 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclNumOps = 5, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

struct urpe_sim_nccl_comm {
  int rank = 0, nranks = 1;
  bool mpi = false;              // false: one rank, no MPI
  std::vector<float> premul;     // scalar of each PreMulSum op, op = ncclNumOps + index
};
typedef urpe_sim_nccl_comm* ncclComm_t;

inline const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (simulated NCCL)";
    case ncclInvalidUsage: return "invalid usage (simulated NCCL)";
    default: return "error (simulated NCCL)";
  }
}

inline ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::random_device random;
  for (char& c : id->internal) c = static_cast<char>(random());
  return ncclSuccess;
}

inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  int started = 0, world_size = 1, world_rank = 0;
#if URPE_SIM_NCCL_MPI
  MPI_Initialized(&started);
  if (started) {
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  }
#endif
  // The stand-in spans MPI_COMM_WORLD (or one process): the ranks must be those.
  if (nranks != world_size || rank != world_rank) return ncclInvalidArgument;
  *comm = new urpe_sim_nccl_comm{rank, nranks, started != 0 && nranks > 1, {}};
  return ncclSuccess;
}

inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

inline ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                             ncclScalarResidence_t residence, ncclComm_t comm) {
  if (datatype != ncclFloat32 || residence != ncclScalarHostImmediate) return ncclInvalidArgument;
  comm->premul.push_back(*static_cast<const float*>(scalar));
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(comm->premul.size()) - 1);
  return ncclSuccess;
}

inline ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t) { return ncclSuccess; }

// This rank's contribution to a sum: its input, times its PreMulSum scalar (on the host copy).
inline ncclResult_t urpe_sim_nccl_input(const void* sendbuff, size_t count, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream, std::vector<float>& out) {
  if (cudaStreamSynchronize(stream) != cudaSuccess) return ncclUnhandledCudaError;
  const float* in = static_cast<const float*>(sendbuff);
  out.assign(in, in + count);
  if (op == ncclSum) return ncclSuccess;
  const size_t index = static_cast<size_t>(op) - ncclNumOps;
  if (static_cast<int>(op) < ncclNumOps || index >= comm->premul.size()) return ncclInvalidArgument;
  for (float& x : out) x *= comm->premul[index];
  return ncclSuccess;
}

inline ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (datatype != ncclFloat32) return ncclInvalidArgument;
  std::vector<float> mine;
  if (const ncclResult_t r = urpe_sim_nccl_input(sendbuff, count, op, comm, stream, mine)) return r;
#if URPE_SIM_NCCL_MPI
  if (comm->mpi)
    MPI_Allreduce(MPI_IN_PLACE, mine.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
  std::memcpy(recvbuff, mine.data(), count * sizeof(float));
  urpe_sim::mark_written(recvbuff, count * sizeof(float));
  return ncclSuccess;
}

// recvcount floats per rank; sendbuff holds nranks × recvcount.
inline ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  if (datatype != ncclFloat32) return ncclInvalidArgument;
  std::vector<float> mine;
  const size_t count = recvcount * static_cast<size_t>(comm->nranks);
  if (const ncclResult_t r = urpe_sim_nccl_input(sendbuff, count, op, comm, stream, mine)) return r;
#if URPE_SIM_NCCL_MPI
  if (comm->mpi) {
    MPI_Reduce_scatter_block(mine.data(), recvbuff, static_cast<int>(recvcount), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    urpe_sim::mark_written(recvbuff, recvcount * sizeof(float));
    return ncclSuccess;
  }
#endif
  std::memcpy(recvbuff, mine.data(), recvcount * sizeof(float));
  urpe_sim::mark_written(recvbuff, recvcount * sizeof(float));
  return ncclSuccess;
}

// sendcount floats per rank; recvbuff receives nranks × sendcount.
inline ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream) {
  if (datatype != ncclFloat32) return ncclInvalidArgument;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return ncclUnhandledCudaError;
#if URPE_SIM_NCCL_MPI
  if (comm->mpi) {
    std::vector<float> mine(static_cast<const float*>(sendbuff), static_cast<const float*>(sendbuff) + sendcount);
    MPI_Allgather(mine.data(), static_cast<int>(sendcount), MPI_FLOAT, recvbuff, static_cast<int>(sendcount),
                  MPI_FLOAT, MPI_COMM_WORLD);
    urpe_sim::mark_written(recvbuff, size_t(comm->nranks) * sendcount * sizeof(float));
    return ncclSuccess;
  }
#endif
  std::memmove(recvbuff, sendbuff, sendcount * sizeof(float));
  urpe_sim::mark_written(recvbuff, sendcount * sizeof(float));
  return ncclSuccess;
}
