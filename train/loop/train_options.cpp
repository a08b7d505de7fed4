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

ProfileWindow apply_device_options(const TrainOptions& options, const Device& device, int64_t steps,
                                   const std::string& precision) {
  URPE_CHECK(precision == "fp32" || precision == "tf32" || precision == "bf16",
             "precision '" << precision << "': expected fp32, tf32 or bf16");
  URPE_CHECK(!options.tf32 || precision != "bf16",
             "--tf32 is precision=tf32, but the config says precision=bf16: drop one of them");
  const bool tf32 = options.tf32 || precision == "tf32";
  URPE_CHECK(!tf32 || device.is_cuda(), (options.tf32 ? "--tf32" : "precision=tf32")
                                            << " needs a CUDA device (the config's device is " << device.name()
                                            << "); precision=bf16 runs on the CPU too");
  if (tf32) cuda::set_tf32(device.context(), true);
  std::string window_text = options.profile_steps;
  if (window_text.empty() && options.on_trace) window_text = default_trace_window(steps);
  ProfileWindow window = window_text.empty() ? ProfileWindow() : ProfileWindow::parse(window_text);
  window.check_within(steps);
  if (options.on_trace) window.record_ops(device, options.on_trace);
  return window;
}

}  // namespace urpe
