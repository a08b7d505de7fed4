// Device-side run options: TF32 on the CUDA context, the profiler window.
#include "train/loop/train_options.h"

#include <algorithm>

#include "tensor/cuda_backend.h"
#include "tensor/error.h"

namespace urpe {

std::string default_trace_window(int64_t steps) {
  const int64_t first = std::min<int64_t>(2, std::max<int64_t>(1, steps));
  return std::to_string(first) + ":" + std::to_string(std::max(first, std::min<int64_t>(steps, 6)));
}

bool tf32_under(const std::string& precision, bool tf32_flag) {
  // bf16: what stays FP32 (attention's matmuls) runs on the TF32 tensor cores, as under PyTorch's
  // autocast with allow_tf32; strict FP32 there cost 2.5× (docs/cuda.md). The fused attention
  // takes BF16 tiles (set_bf16_tiles below).
  return tf32_flag || precision == "tf32" || precision == "bf16";
}

ProfileWindow apply_device_options(const TrainOptions& options, const Device& device, int64_t steps,
                                   const std::string& precision) {
  URPE_CHECK(precision == "fp32" || precision == "tf32" || precision == "bf16",
             "precision '" << precision << "': expected fp32, tf32 or bf16");
  URPE_CHECK(!options.tf32 || precision != "bf16",
             "--tf32 is precision=tf32, but the config says precision=bf16 (which has TF32 on for what it "
             "leaves in FP32): drop --tf32");
  const bool tf32 = options.tf32 || precision == "tf32";
  URPE_CHECK(!tf32 || device.is_cuda(), (options.tf32 ? "--tf32" : "precision=tf32")
                                            << " needs a CUDA device (the config's device is " << device.name()
                                            << "); precision=bf16 runs on the CPU too");
  if (device.is_cuda() && tf32_under(precision, options.tf32)) cuda::set_tf32(device.context(), true);
  if (device.is_cuda() && precision == "bf16") cuda::set_bf16_tiles(device.context(), true);  // fused attention
  std::string window_text = options.profile_steps;
  if (window_text.empty() && options.on_trace) window_text = default_trace_window(steps);
  ProfileWindow window = window_text.empty() ? ProfileWindow() : ProfileWindow::parse(window_text);
  window.check_within(steps);
  if (options.on_trace) window.record_ops(device, options.on_trace);
  return window;
}

}  // namespace urpe
