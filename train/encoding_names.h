// The names readers know the positional encodings by (noPE, RPE, URPE, RoPE+URPE, …), for
// legends, titles and tables: a `pe` config value is a key, not something to show a learner.
#pragma once
#include <string>

namespace urpe {

// none → noPE, ape → APE, sinusoidal → sinusoidal APE, rpe → RPE, urpe → URPE, alibi → ALiBi,
// rope → RoPE, shaw → Shaw; "X+urpe" → name(X) + "+URPE". Unknown values come back as they are.
std::string encoding_display_name(const std::string& pe);

}  // namespace urpe
