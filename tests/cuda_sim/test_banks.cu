// The simulator's bank model (tests/cuda_sim/banks.cpp, URPE_SIM_BANKS): tiny kernels whose
// shared-memory access patterns have a known cost on the hardware (NVIDIA, CUDA C++ Programming
// Guide, "Shared Memory") must get exactly that many wavefronts: a stride-1 float load one per
// request, stride 2 two, stride 32 thirty-two, a broadcast one; float2 two phases (half-warps),
// float4 four (quarter-warps); a 32 × 32 transpose read by columns 32-way unpadded and
// conflict-free with a row padded to 33. Each count is exact, so each check can fail.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "ops/cp_async.cuh"
#include "tests/cuda_sim/device_copies.h"
#include "urpe_sim_checks.h"

namespace {

// Stores s[0..1023] (stride 1, 32 requests), then every lane loads s[(lane · stride) mod 1024].
__global__ void bank_load_stride_kernel(float* out, int stride) {
  URPE_SHARED(float, s, [1024]);
  const int lane = threadIdx.x;
  for (int i = lane; i < 1024; i += 32) s[i] = float(i);
  __syncthreads();
  out[lane] = s[(lane * stride) % 1024];
}

// Every lane stores s[(lane · stride) mod 1024].
__global__ void bank_store_stride_kernel(float* out, int stride) {
  URPE_SHARED(float, s, [1024]);
  const int lane = threadIdx.x;
  s[(lane * stride) % 1024] = float(lane);
  __syncthreads();
  if (lane == 0) out[0] = 1.0f;
}

// 8- and 16-byte stores, lane l at element l · stride.
__global__ void bank_float2_kernel(float* out, int stride) {
  URPE_SHARED(float2, s, [64]);
  const int lane = threadIdx.x;
  s[lane * stride] = make_float2(float(lane), 1.0f);
  __syncthreads();
  if (lane == 0) out[0] = 1.0f;
}
__global__ void bank_float4_kernel(float* out) {
  URPE_SHARED(float4, s, [32]);
  const int lane = threadIdx.x;
  s[lane] = make_float4(float(lane), 1.0f, 2.0f, 3.0f);
  __syncthreads();
  if (lane == 0) out[0] = 1.0f;
}

// Lane l stores words 4l … 4l + 3 one at a time from a loop that is not unrolled: one site, four
// passes, each a stride-4 request (4-way); contiguous pieces of one site never join into a vector.
__global__ void bank_scalar_loop_kernel(float* out) {
  URPE_SHARED(float, s, [128]);
  const int lane = threadIdx.x;
#pragma GCC unroll 1
  for (int k = 0; k < 4; ++k) s[4 * lane + k] = float(k);
  __syncthreads();
  if (lane == 0) out[0] = 1.0f;
}

// 16-byte cp.async copies, lane l to unit l: four phases, no conflict.
__global__ void bank_cp_async_kernel(const float* in, float* out) {
  URPE_SHARED(float4, s, [32]);
  const int lane = threadIdx.x;
  urpe::kernels::async::copy16(&s[lane], in + 4 * lane, 16);
  urpe::kernels::async::commit();
  urpe::kernels::async::wait<0>();
  __syncthreads();
  out[lane] = s[lane].x;
}

// out = inᵀ for one 32 × 32 tile (block 32 × 32): written by rows, read by columns, the tile's
// rows kCols floats apart (32: every column read hits one bank; 33: each lane its own).
template <int kCols>
__global__ void bank_transpose_kernel(const float* in, float* out) {
  URPE_SHARED(float, tile, [32][kCols]);
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
  __syncthreads();
  out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

// The counts of one kind of access (loads or stores, cp.async apart) of kernels named `kernel`.
struct Counts {
  uint64_t requests = 0, wavefronts = 0, ideal = 0, sites = 0;
};
Counts counts_of(const std::string& kernel, bool write, bool async = false) {
  Counts c;
  for (const urpe_sim::BankSite& s : urpe_sim::bank_sites()) {
    if (s.kernel.find(kernel) == std::string::npos || s.write != write || s.async != async) continue;
    c.requests += s.requests, c.wavefronts += s.wavefronts, c.ideal += s.ideal, ++c.sites;
  }
  return c;
}

// Runs the test with the bank model on (one forward schedule) and the counts reset, then puts the
// settings back.
struct BanksOn {
  urpe_sim::Settings saved = urpe_sim::settings();
  BanksOn() {
    urpe_sim::Settings s = saved;
    s.schedules = {urpe_sim::Schedule{urpe_sim::Order::Forward}};
    s.banks = urpe_sim::BankReport::Exit;
    urpe_sim::set_settings(s);
    urpe_sim::reset_bank_counts();
  }
  ~BanksOn() {
    urpe_sim::set_settings(saved);
    urpe_sim::reset_bank_counts();
  }
};

float* zeros(size_t n) { return to_device(std::vector<float>(n, 0.0f)); }

}  // namespace

TEST_CASE("cuda_sim banks: float loads cost the most distinct words in one bank") {
  if (!urpe_sim::access_hooks_available()) return;  // the ASan build has no access hooks
  BanksOn on;
  float* out = zeros(32);
  struct Case {
    int stride;
    uint64_t wavefronts;
  };
  // stride 0: every lane reads s[0] (a broadcast); 1: 32 banks; 2: 2-way; 32: all in bank 0.
  for (const Case& c : {Case{0, 1}, Case{1, 1}, Case{2, 2}, Case{32, 32}}) {
    CAPTURE(c.stride);
    urpe_sim::reset_bank_counts();
    bank_load_stride_kernel<<<1, 32>>>(out, c.stride);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const Counts load = counts_of("bank_load_stride_kernel", false);
    CHECK(load.sites == 1);
    CHECK(load.requests == 1);
    CHECK(load.wavefronts == c.wavefronts);
    CHECK(load.ideal == 1);
    // The loop's 32 stride-1 stores: the k-th pass of every lane is one request.
    const Counts store = counts_of("bank_load_stride_kernel", true);
    CHECK(store.requests == 32);
    CHECK(store.wavefronts == 32);
    CHECK(store.ideal == 32);
  }
  cudaFree(out);
}

TEST_CASE("cuda_sim banks: float stores, stride 2 and 32") {
  if (!urpe_sim::access_hooks_available()) return;
  BanksOn on;
  float* out = zeros(1);
  for (const auto& [stride, wavefronts] : {std::pair<int, uint64_t>{1, 1}, {2, 2}, {32, 32}, {33, 1}}) {
    CAPTURE(stride);
    urpe_sim::reset_bank_counts();
    bank_store_stride_kernel<<<1, 32>>>(out, stride);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const Counts store = counts_of("bank_store_stride_kernel", true);
    CHECK(store.requests == 1);
    CHECK(store.wavefronts == wavefronts);
    CHECK(store.ideal == 1);
  }
  cudaFree(out);
}

TEST_CASE("cuda_sim banks: 8-byte accesses go by half-warps, 16-byte ones by quarter-warps") {
  if (!urpe_sim::access_hooks_available()) return;
  BanksOn on;
  float* out = zeros(32);
  // float2, stride 1: two half-warps of 16 lanes × 2 words, each a full line: 2 wavefronts, ideal 2.
  bank_float2_kernel<<<1, 32>>>(out, 1);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  Counts c = counts_of("bank_float2_kernel", true);
  CHECK(c.requests == 1);
  CHECK(c.wavefronts == 2);
  CHECK(c.ideal == 2);
  // float2, stride 2: a half-warp's 16 float2s span 256 bytes, two words in each bank: 2-way.
  urpe_sim::reset_bank_counts();
  bank_float2_kernel<<<1, 32>>>(out, 2);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  c = counts_of("bank_float2_kernel", true);
  CHECK(c.wavefronts == 4);
  CHECK(c.ideal == 2);
  // float4, stride 1: four quarter-warps, each one line.
  urpe_sim::reset_bank_counts();
  bank_float4_kernel<<<1, 32>>>(out);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  c = counts_of("bank_float4_kernel", true);
  CHECK(c.requests == 1);
  CHECK(c.wavefronts == 4);
  CHECK(c.ideal == 4);
  // The same 16 bytes a lane, stored by a loop of scalar stores: four 4-way requests.
  urpe_sim::reset_bank_counts();
  bank_scalar_loop_kernel<<<1, 32>>>(out);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  c = counts_of("bank_scalar_loop_kernel", true);
  CHECK(c.requests == 4);
  CHECK(c.wavefronts == 16);
  CHECK(c.ideal == 4);
  // cp.async of 16 bytes the same, counted apart from the stores; its landing is not counted again.
  urpe_sim::reset_bank_counts();
  float* in = zeros(128);
  bank_cp_async_kernel<<<1, 32>>>(in, out);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  c = counts_of("bank_cp_async_kernel", true, /*async=*/true);
  CHECK(c.requests == 1);
  CHECK(c.wavefronts == 4);
  CHECK(c.ideal == 4);
  CHECK(counts_of("bank_cp_async_kernel", true).requests == 0);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("cuda_sim banks: a transpose read by columns, unpadded 32-way, padded conflict-free") {
  if (!urpe_sim::access_hooks_available()) return;
  BanksOn on;
  float* in = zeros(1024);
  float* out = zeros(1024);
  bank_transpose_kernel<32><<<1, dim3(32, 32)>>>(in, out);
  bank_transpose_kernel<33><<<1, dim3(32, 32)>>>(in, out);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const Counts unpadded = counts_of("bank_transpose_kernel<32>", false);
  const Counts padded = counts_of("bank_transpose_kernel<33>", false);
  CHECK(unpadded.requests == 32);  // one per warp
  CHECK(unpadded.wavefronts == 32 * 32);
  CHECK(unpadded.ideal == 32);
  CHECK(padded.requests == 32);
  CHECK(padded.wavefronts == 32);
  CHECK(padded.ideal == 32);
  // The row stores are conflict-free either way.
  CHECK(counts_of("bank_transpose_kernel<32>", true).wavefronts == 32);
  CHECK(counts_of("bank_transpose_kernel<33>", true).wavefronts == 32);
  // The report names the kernel and, with addr2line and the line tables, this file's load.
  const std::string report = urpe_sim::bank_report("bank_transpose_kernel<32>");
  CHECK(report.find("bank_transpose_kernel<32>") != std::string::npos);
  CHECK(report.find("excess 992") != std::string::npos);
  if (std::system("command -v addr2line > /dev/null 2>&1") == 0)
    CHECK(report.find("tests/cuda_sim/test_banks.cu:") != std::string::npos);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("cuda_sim banks: off by default, counts nothing; URPE_SIM_BANKS's values") {
  urpe_sim::BankReport r = urpe_sim::BankReport::Exit;
  std::string error;
  CHECK(urpe_sim::parse_bank_setting(nullptr, &r, &error));
  CHECK(r == urpe_sim::BankReport::Off);
  CHECK(urpe_sim::parse_bank_setting("launch", &r, &error));
  CHECK(r == urpe_sim::BankReport::Launch);
  CHECK(urpe_sim::parse_bank_setting("exit", &r, &error));
  CHECK(r == urpe_sim::BankReport::Exit);
  CHECK_FALSE(urpe_sim::parse_bank_setting("on", &r, &error));
  CHECK(error.find("URPE_SIM_BANKS: 'on'") != std::string::npos);
  CHECK(urpe_sim::Settings{}.banks == urpe_sim::BankReport::Off);
  // With the model off a launch leaves no counts.
  urpe_sim::Settings saved = urpe_sim::settings(), off = saved;
  off.banks = urpe_sim::BankReport::Off;
  urpe_sim::set_settings(off);
  urpe_sim::reset_bank_counts();
  float* out = zeros(32);
  bank_load_stride_kernel<<<1, 32>>>(out, 32);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(urpe_sim::bank_sites().empty());
  urpe_sim::set_settings(saved);
  cudaFree(out);
}
