// Host vectors to device buffers and back for the simulator's own tests (test_simulator.cu,
// test_checks.cu): each copy REQUIREs success, so a failed allocation or copy stops the test case.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "doctest/doctest.h"

template <typename T>
T* to_device(const std::vector<T>& host) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, host.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> to_host(const T* device, size_t n) {
  std::vector<T> host(n);
  REQUIRE(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}
