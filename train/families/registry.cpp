// The table of model families (see model_family.h): one line per family, in help order.
#include "train/families/model_family.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "tensor/error.h"
#include "train/config/run_settings.h"

namespace urpe {

// Each defined in train/families/<name>/<name>_family.cpp.
ModelFamily encoder_family();
ModelFamily txl_family();
ModelFamily graphormer_family();

const std::vector<ModelFamily>& model_family_table() {
  static const std::vector<ModelFamily> table = {
      encoder_family(),
      txl_family(),
      graphormer_family(),
  };
  static const bool checked = [] {  // a family missing a part fails on first use, naming it
    for (size_t k = 0; k < table.size(); ++k) {
      const ModelFamily& f = table[k];
      URPE_CHECK(!f.name.empty(), "model family " << k << " of train/families/registry.cpp has no name");
      for (size_t j = 0; j < k; ++j)
        URPE_CHECK(table[j].name != f.name, "model family '" << f.name << "' is registered twice");
      URPE_CHECK(f.add_keys && f.check_values && f.check_paths && f.estimate_memory && f.train && f.evaluate &&
                     f.draw_run_plots,
                 "model family '" << f.name << "' lacks one of add_keys, check_values, check_paths, estimate_memory, "
                                 << "train, evaluate, draw_run_plots (train/families/model_family.h)");
      URPE_CHECK(f.analysed_model || !f.not_analysed_because.empty(),
                 "model family '" << f.name << "' has neither analysed_model nor not_analysed_because");
    }
    return true;
  }();
  (void)checked;
  return table;
}

bool is_model_family(const std::string& name) {
  for (const ModelFamily& family : model_family_table())
    if (family.name == name) return true;
  return false;
}

const ModelFamily& model_family(const std::string& name) {
  std::string known;
  for (const ModelFamily& family : model_family_table()) {
    if (family.name == name) return family;
    known += (known.empty() ? "" : ", ") + family.name;
  }
  URPE_FAIL("model '" << printable(name) << "' is not a model family (expected one of: " << known << ")");
}

const ModelFamily& family_of(const Config& config) { return model_family(run_settings_from(config).model); }

void check_finite_score(const std::string& dir, const std::string& which, const std::string& split, double loss) {
  URPE_CHECK(std::isfinite(loss), "urpe eval: the " << which << " checkpoint of " << dir << " scores a "
                                                   << split << " loss of " << loss
                                                   << ": the run diverged; train it again with a smaller lr, a "
                                                      "longer warmup or clip > 0");
}

std::string printf_text(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(static_cast<size_t>(length > 0 ? length : 0) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  text.resize(text.size() - 1);
  return text;
}

}  // namespace urpe
