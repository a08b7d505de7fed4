// `urpe eval`: a run directory's checkpoint scored again on a split, on the device asked for.
#include <cstdio>

#include "autograd/node.h"
#include "train/loop/checkpoint.h"
#include "app/cli/handlers.h"
#include "base/io/run_dir.h"
#include "base/io/run_lock.h"
#include "train/families/model_family.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"

namespace urpe::cli {

int run_eval(const Args& args) {
  const std::string dir = args.get("run");
  URPE_CHECK(!dir.empty(), "urpe eval: --run DIR is required");
  check_readable_run(dir, "--run");  // a run that trains meanwhile is read as its last checkpoint
  const std::string split = args.get("split", "valid");
  URPE_CHECK(split == "valid" || split == "test", "urpe eval: --split must be valid or test, got '" << split << "'");
  const std::string which = args.get("checkpoint", "last");
  URPE_CHECK(which == "last" || which == "best",
             "urpe eval: --checkpoint must be last or best, got '" << which << "'");
  Config config = stored_run_config(dir);
  run_checkpoint_path(dir, which);  // the checkpoint exists: an error naming it comes first
  // --device: where to evaluate, whatever the run was trained on (the checkpoint's tensors are
  // plain little-endian floats, the same on every device), so a GPU run can be scored on a CPU.
  const std::string device = args.get("device");
  if (!device.empty()) {
    const bool numbered = device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                          device.find_first_not_of("0123456789", 5) == std::string::npos;
    URPE_CHECK(device == "cpu" || device == "cuda" || numbered,
               "urpe eval: --device '" << device << "': expected cpu, cuda or cuda:N");
    config.apply_override("device=" + device);
  }
  std::printf("%s\n", family_of(config).evaluate(dir, config, split, which).c_str());
  return 0;
}

}  // namespace urpe::cli
