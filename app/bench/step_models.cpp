// The bench step of a family, asked of the registry (see step_models.h).
#include "app/bench/step_models.h"

#include "tensor/error.h"

namespace urpe::bench {

const std::vector<std::string>& step_model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const ModelFamily& family : model_family_table())
      if (family.make_bench_step) list.push_back(family.name);
    return list;
  }();
  return names;
}

std::unique_ptr<StepModel> make_step_model(const StepModelOptions& o, const Device& device) {
  const std::vector<std::string>& names = step_model_names();
  for (const ModelFamily& family : model_family_table())
    if (family.name == o.model && family.make_bench_step) return family.make_bench_step(o, device);
  std::string expected;  // "encoder, txl or graphormer"
  for (size_t k = 0; k < names.size(); ++k)
    expected += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
  URPE_FAIL("option --model: expected " << expected << ", got '" << o.model << "'");
}

}  // namespace urpe::bench
