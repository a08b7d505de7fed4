// --set and --tf32 of `urpe repro` (see repro_overrides.h).
#include "app/repro/repro_overrides.h"

#include "tensor/error.h"

namespace urpe {

std::string override_key(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  URPE_CHECK(eq != std::string::npos, "--set '" << assignment << "': expected key=value");
  const std::string raw = assignment.substr(0, eq);
  const size_t a = raw.find_first_not_of(" \t"), b = raw.find_last_not_of(" \t");
  URPE_CHECK(a != std::string::npos, "--set '" << assignment << "': expected key=value (the key is empty)");
  return raw.substr(a, b - a + 1);
}

void refuse_owned_keys(const ReproOverrides& overrides, const std::vector<OwnedKey>& owned, const std::string& experiment) {
  for (const std::string& s : overrides.sets) {
    const std::string key = override_key(s);
    for (const OwnedKey& o : owned)
      URPE_CHECK(key != o.key, "urpe repro " << experiment << ": --set " << s << ": the experiment sets " << key
                                             << " for each run itself; " << o.instead);
  }
}

std::string overrides_markdown_line(const ReproOverrides& overrides) {
  std::string line = "Every run: ";
  if (overrides.sets.empty()) {
    line += "the scale's settings (no --set)";
  } else {
    for (size_t k = 0; k < overrides.sets.size(); ++k) line += (k ? " " : "") + std::string("`--set ") + overrides.sets[k] + "`";
    line += " after the scale's settings";
  }
  line += overrides.tf32 ? "; TF32 tensor-core GEMMs on (`--tf32`).\n" : "; TF32 off (full FP32 GEMMs).\n";
  return line;
}

std::string overrides_command_text(const ReproOverrides& overrides) {
  std::string text;
  for (const std::string& s : overrides.sets) text += " --set " + s;
  if (overrides.tf32) text += " --tf32";
  return text;
}

}  // namespace urpe
