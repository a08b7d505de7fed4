// CUDA simulator: what a kernel launch becomes. The build rewrites each launch of the project's .cu
// files (tests/cuda_sim/rewrite_launches.cmake)
//     name<<<grid, block, shared, stream>>>(args...)
// into
//     name | ::urpe_sim::Config("name", grid, block, shared, stream)(args...)
// which converts the arguments to the kernel's parameter types (as a launch does), checks that
// every pointer argument is device memory, and hands the grid to the scheduler (scheduler.cpp).
//
// Stream capture (CUDA graphs, cuda_runtime.h): a launch on a stream that is capturing is recorded
// with its converted arguments instead of run, and runs (checks included) each time the graph
// that holds it is launched, with the arguments as captured, as on a GPU.
#pragma once
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace urpe_sim {

struct LaunchConfig {
  const char* kernel_name;
  dim3 grid, block;
  size_t shared_bytes;  // dynamic shared memory per block
  cudaStream_t stream;
  const void* kernel = nullptr;  // the kernel function (its cudaFuncSetAttribute limits)
};

// Runs thread_main(closure) once per simulated thread of every block of the grid. A bad
// configuration or a failure inside the grid is reported through cudaGetLastError(), as on a GPU.
void run_grid(const LaunchConfig& config, void (*thread_main)(void*), void* closure);

// Kernels launched so far (valid launches), so that a test can tell that work really ran on the
// simulated device.
uint64_t launch_count();

// The host's waits on the simulated device so far, as a GPU would make them (tests check that
// urpe's own count, tensor/cuda_backend.h host_sync_counts, misses none): explicit waits
// (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize), and host-to-device copies
// from host memory (all host memory here is pageable: the copy waits for the stream on a GPU).
uint64_t explicit_wait_count();
uint64_t pageable_upload_count();

// A pointer kernel argument must be null or point into memory from cudaMalloc: a host pointer
// would work here but fault on a GPU. Records a launch error naming the argument otherwise.
bool check_kernel_pointer(const LaunchConfig& config, int argument, const void* pointer);
// Forgets the previous launch's pointer arguments (the checks name the argument an access went
// through).
void begin_launch();

// Whether `stream` is capturing now; if so, capture_launch keeps `launch` as the capture's next
// node (it must not run now) and returns true.
bool stream_capturing(cudaStream_t stream);
bool capture_launch(cudaStream_t stream, const char* kernel_name, std::function<void()> launch);

template <typename... A>
struct PendingLaunch {
  LaunchConfig config;
  std::tuple<A...> args;
};

struct Config {
  LaunchConfig config;
  Config(const char* kernel_name, dim3 grid, dim3 block, size_t shared_bytes = 0,
         cudaStream_t stream = nullptr)
      : config{kernel_name, grid, block, shared_bytes, stream, nullptr} {}
  template <typename... A>
  PendingLaunch<std::decay_t<A>...> operator()(A&&... args) const {
    return {config, std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)};
  }
};

template <typename T>
bool check_argument(const LaunchConfig& config, int index, const T& value) {
  if constexpr (std::is_pointer<T>::value) return check_kernel_pointer(config, index, value);
  return true;
}

template <typename Tuple, size_t... I>
bool check_arguments(const LaunchConfig& config, const Tuple& args, std::index_sequence<I...>) {
  return (check_argument(config, int(I), std::get<I>(args)) && ...);
}

template <typename... P, typename... A>
void operator|(void (*kernel)(P...), PendingLaunch<A...>&& launch) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  struct Closure {
    void (*kernel)(P...);
    std::tuple<P...> args;
  };
  Closure closure{kernel, std::make_from_tuple<std::tuple<P...>>(std::move(launch.args))};
  LaunchConfig config = launch.config;
  config.kernel = reinterpret_cast<const void*>(kernel);
  auto run = [config](Closure& c) {
    begin_launch();
    if (!check_arguments(config, c.args, std::index_sequence_for<P...>{})) return;
    run_grid(
        config,
        [](void* p) {
          auto* cl = static_cast<Closure*>(p);
          std::apply(cl->kernel, cl->args);  // each thread gets its own copies of the parameters
        },
        &c);
  };
  if (stream_capturing(config.stream) &&
      capture_launch(config.stream, config.kernel_name, [run, closure]() mutable { run(closure); }))
    return;
  run(closure);
}

}  // namespace urpe_sim
