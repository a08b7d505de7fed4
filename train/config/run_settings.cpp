// The common keys read once into RunSettings (the config boundary: run_settings.h).
#include "train/config/run_settings.h"

namespace urpe {

RunSettings run_settings_from(const Config& c) {
  RunSettings s;
  s.model = c.get_string("model");
  s.seed = c.get_int("seed");
  s.steps = c.get_int("steps");
  s.batch = c.get_int("batch");
  s.accum_steps = c.get_int("accum_steps");
  s.lr = c.get_float("lr");
  s.warmup = c.get_int("warmup");
  s.weight_decay = c.get_float("weight_decay");
  s.decay_biases_and_norms = c.get_bool("decay_biases_and_norms");
  s.clip = c.get_float("clip");
  s.eval_every = c.get_int("eval_every");
  s.shard_optimizer = c.get_bool("shard_optimizer");
  s.device = c.get_string("device");
  s.precision = c.get_string("precision");
  s.cuda_graph = c.get_bool("cuda_graph");
  s.pe = c.get_string("pe");
  return s;
}

}  // namespace urpe
