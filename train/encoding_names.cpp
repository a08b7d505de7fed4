// Display names of the positional encodings (see encoding_names.h).
#include "train/encoding_names.h"

namespace urpe {

std::string encoding_display_name(const std::string& pe) {
  const std::string suffix = "+urpe";
  if (pe.size() > suffix.size() && pe.compare(pe.size() - suffix.size(), suffix.size(), suffix) == 0)
    return encoding_display_name(pe.substr(0, pe.size() - suffix.size())) + "+URPE";
  if (pe == "none") return "noPE";
  if (pe == "ape") return "APE";
  if (pe == "sinusoidal") return "sinusoidal APE";
  if (pe == "rpe") return "RPE";
  if (pe == "urpe") return "URPE";
  if (pe == "alibi") return "ALiBi";
  if (pe == "rope") return "RoPE";
  if (pe == "shaw") return "Shaw";
  return pe;
}

bool theorem2_binds_encoding(const std::string& pe) {
  return pe == "none" || pe == "rpe" || pe == "alibi" || pe == "rope";
}

}  // namespace urpe
