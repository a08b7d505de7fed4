// The names readers know the positional encodings by (noPE, RPE, URPE, RoPE+URPE, …), for
// legends, titles and tables: a `pe` config value is a key, not something to show a learner.
#pragma once
#include <string>

namespace urpe {

// none → noPE, ape → APE, sinusoidal → sinusoidal APE, rpe → RPE, urpe → URPE, alibi → ALiBi,
// rope → RoPE, shaw → Shaw; "X+urpe" → name(X) + "+URPE". Unknown values come back as they are.
std::string encoding_display_name(const std::string& pe);

// Whether Theorem 2 binds a softmax-attention model with this `pe` as it stands (C ≡ 1 for
// URPE aside): the encodings that change only the logits before the softmax, so that every
// attention row still sums to 1, with position entering only through j − i (rpe, alibi, rope)
// or not at all (none). Not ape/sinusoidal (position in the input), shaw (relative embeddings in
// the values), urpe or X+urpe (C after the softmax).
bool theorem2_binds_encoding(const std::string& pe);

}  // namespace urpe
