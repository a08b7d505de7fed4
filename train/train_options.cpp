// Device-side run options: TF32 on the CUDA context, the profiler window.
#include "train/train_options.h"

#include "tensor/cuda_backend.h"
#include "tensor/error.h"

namespace urpe {

ProfileWindow apply_device_options(const TrainOptions& options, const Device& device, int64_t steps) {
  URPE_CHECK(!options.tf32 || device.is_cuda(), "--tf32 needs a CUDA device (the config's device is "
                                                    << device.name() << ")");
  if (options.tf32) cuda::set_tf32(device.context(), true);
  ProfileWindow window = options.profile_steps.empty() ? ProfileWindow() : ProfileWindow::parse(options.profile_steps);
  window.check_within(steps);
  return window;
}

}  // namespace urpe
