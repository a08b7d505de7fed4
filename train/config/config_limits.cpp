// The ranges of the run keys (see config_limits.h). Upper ends are int32's largest value for every
// size: token ids and graph indices are int32 tensors, and a size past that is a typo (or a 1e11)
// that would otherwise be narrowed or end in an allocation failure far from the key.
#include "train/config/config_limits.h"

#include <cstdint>
#include <limits>
#include <string>

#include "models/graphormer.h"

namespace urpe {

void limit_run_keys(ConfigSchema& s) {
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto ints = [&](std::initializer_list<const char*> names, int64_t min, int64_t max, const char* why = "") {
    for (const char* name : names)
      if (s.find(name)) s.limit_int(name, min, max, why);
  };
  auto floats = [&](std::initializer_list<const char*> names, double min, bool min_open, double max,
                    bool max_open) {
    for (const char* name : names)
      if (s.find(name)) s.limit_float(name, min, min_open, max, max_open);
  };

  // Counts that must be at least 1.
  ints({"steps", "batch", "accum_steps", "eval_every", "layers", "d_model", "heads", "d_ff", "d_head", "d_inner", "d_ffn",
        "tgt_len", "valid_size", "eval_batch", "max_nodes", "max_spd"},
       1, kMax32);
  ints({"seq_len"}, 2, kMax32);
  ints({"vocab"}, 2, kMax32, "token ids are int32");
  ints({"warmup", "mem_len", "eval_tgt_len", "train_subset"}, 0, kMax32);
  ints({"eval_mem_len"}, -1, kMax32, "-1 = mem_len");
  ints({"clamp_len", "eval_clamp_len"}, -kMax32, kMax32, "≤ 0: no clamp");
  ints({"max_eval_tokens"}, 0, std::numeric_limits<int64_t>::max());
  ints({"shaw_clip"}, 1, 1 << 20, "Shaw's tables have 2·shaw_clip + 1 rows");
  const int64_t hops = GraphormerConfig{}.num_edge_dis;
  const std::string hops_why = "the edge-distance table has " + std::to_string(hops) + " hops";
  ints({"multi_hop_max_dist"}, 1, hops, hops_why.c_str());
  ints({"seed", "split_seed"}, 0, 4294967295);

  floats({"dropout", "dropatt", "attention_dropout", "input_dropout"}, 0, false, 1, true);
  floats({"lr", "end_lr", "weight_decay", "clip"}, 0, false, kInf, false);
  floats({"init_std"}, 0, true, kInf, false);
}

}  // namespace urpe
