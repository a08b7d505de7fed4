// `urpe train --init-from RUN`: a fresh run whose parameters start from another run's last
// checkpoint. The paper's fine-tuning (§4.2): URPE with C = 1 is exactly the RPE model it extends,
// so a URPE run initialised from a trained RPE run starts where that run ended (its first
// validation equals the source's) and then learns C. Parameters are matched by name; the only
// ones allowed to be missing from the source are the URPE table (`urpe_c`), which keeps its
// initial value (ones).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/parameters.h"
#include "base/io/config.h"

namespace urpe {

struct InitFromReport {
  std::string checkpoint;            // the file read
  int64_t source_step = 0;           // the step it was saved at
  std::vector<std::string> copied;   // parameters taken from it
  std::vector<std::string> kept;     // parameters left at their initialisation (urpe_c)
};

// Copies every parameter of `run_dir`'s last checkpoint into `params`. Errors (one line, naming
// --init-from, the directory and the tensor): no checkpoint, another model family than `config`'s,
// a source tensor the model lacks or with another shape, a model parameter (other than urpe_c)
// the source lacks.
InitFromReport init_parameters_from_run(const std::string& run_dir, const Config& config, const ParameterSet& params);

}  // namespace urpe
