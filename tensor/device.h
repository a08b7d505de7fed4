// Where a tensor lives. A CUDA device carries its Context (stream, cuBLAS handle, allocator), so
// ops find everything they need from their input tensors: no global device state.
#pragma once
#include <memory>
#include <string>

namespace urpe {

namespace cuda { class Context; }

enum class DeviceKind { cpu, cuda };

class Device {
 public:
  Device() = default;  // the CPU
  static Device cpu() { return Device(); }
  static Device cuda(std::shared_ptr<cuda::Context> context);

  DeviceKind kind() const { return kind_; }
  bool is_cpu() const { return kind_ == DeviceKind::cpu; }
  bool is_cuda() const { return kind_ == DeviceKind::cuda; }
  cuda::Context* context() const { return context_.get(); }
  const std::shared_ptr<cuda::Context>& shared_context() const { return context_; }
  std::string name() const;  // "cpu" or "cuda:0"

  bool operator==(const Device& other) const {
    return kind_ == other.kind_ && context_ == other.context_;
  }
  bool operator!=(const Device& other) const { return !(*this == other); }

 private:
  DeviceKind kind_ = DeviceKind::cpu;
  std::shared_ptr<cuda::Context> context_;
};

// Parses "cpu" / "cuda" / "cuda:N" (the --device option). A CUDA device gets a fresh Context.
Device parse_device(const std::string& text);

}  // namespace urpe
