// CUDA simulator: stands in for CUB's DeviceRadixSort::SortPairs: a stable sort of (key, value)
// pairs by the key bits [begin_bit, end_bit), with CUB's two-call protocol (the first call, with
// no temporary storage, only reports how much it needs). The arguments are checked at the call;
// the sort is stream work: on a capturing stream it becomes a node of the graph and runs at each
// launch (CUB's kernels would be captured the same way), else it runs at once.
#pragma once
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include <functional>

#include "cuda_runtime.h"

namespace urpe_sim {
bool is_device_range(const void* pointer, size_t bytes);
void mark_written(const void* p, size_t bytes);
bool capture_launch(cudaStream_t stream, const char* kernel_name, std::function<void()> launch);
}

namespace cub {

struct DeviceRadixSort {
  template <typename Key, typename Value>
  static cudaError_t SortPairs(void* temp_storage, size_t& temp_bytes, const Key* keys_in,
                               Key* keys_out, const Value* values_in, Value* values_out,
                               int num_items, int begin_bit = 0,
                               int end_bit = int(sizeof(Key) * 8), cudaStream_t stream = nullptr) {
    static_assert(std::is_unsigned<Key>::value, "the simulator sorts unsigned keys only");
    const size_t needed = 256 + size_t(num_items) * (sizeof(Key) + sizeof(Value));
    if (temp_storage == nullptr) {
      temp_bytes = needed;
      return cudaSuccess;
    }
    const size_t n = num_items > 0 ? size_t(num_items) : 0;
    if (temp_bytes < needed || begin_bit < 0 || end_bit > int(sizeof(Key) * 8) ||
        begin_bit >= end_bit || !urpe_sim::is_device_range(temp_storage, temp_bytes) ||
        (n > 0 && !(urpe_sim::is_device_range(keys_in, n * sizeof(Key)) &&
                    urpe_sim::is_device_range(keys_out, n * sizeof(Key)) &&
                    urpe_sim::is_device_range(values_in, n * sizeof(Value)) &&
                    urpe_sim::is_device_range(values_out, n * sizeof(Value)))))
      return cudaErrorInvalidValue;
    auto sort = [=] {
      const int bits = end_bit - begin_bit;
      const Key field = bits >= int(sizeof(Key) * 8) ? Key(~Key(0)) : Key((Key(1) << bits) - 1);
      auto digit = [&](size_t i) { return Key(keys_in[i] >> begin_bit) & field; };
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t(0));
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return digit(a) < digit(b); });
      std::vector<Key> keys(n);
      std::vector<Value> values(n);
      for (size_t i = 0; i < n; ++i) keys[i] = keys_in[order[i]], values[i] = values_in[order[i]];
      std::copy(keys.begin(), keys.end(), keys_out);
      std::copy(values.begin(), values.end(), values_out);
      urpe_sim::mark_written(keys_out, n * sizeof(Key));  // for initcheck
      urpe_sim::mark_written(values_out, n * sizeof(Value));
    };
    if (!urpe_sim::capture_launch(stream, "cub::DeviceRadixSort::SortPairs", sort)) sort();
    return cudaSuccess;
  }
};

}  // namespace cub
