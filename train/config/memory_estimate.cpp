// What the families' memory estimates share (see memory_estimate.h): the size terms and their
// factors, the estimate of a config by its family (each family's own estimate lives in its folder:
// train/families/NAME/NAME_memory.cpp), the device's memory and the check against it. The terms
// need not be exact, only the right size: the check refuses a config only when one tensor alone,
// or the parameters' training state, exceeds the bound.
#include "train/config/memory_estimate.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tensor/bytes.h"
#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "tensor/tensor.h"
#include "train/families/model_family.h"

namespace urpe {

// ---- terms ----

double SizeTerm::count() const {
  double n = 1;
  for (const SizeFactor& f : factors) n *= std::pow(f.value, f.power);
  return n;
}

std::string SizeTerm::formula() const {
  std::ostringstream out;
  out.precision(15);
  for (size_t k = 0; k < factors.size(); ++k) {
    const SizeFactor& f = factors[k];
    out << (k ? " × " : "") << (f.text.empty() ? "" : f.text + " ") << f.value << (f.power == 2 ? "²" : "");
  }
  return out.str();
}

double MemoryEstimate::parameter_count() const {
  double n = 0;
  for (const SizeTerm& t : parameters) n += t.count();
  return n;
}

double MemoryEstimate::fixed_table_count() const {
  double n = 0;
  for (const SizeTerm& t : fixed_tables) n += t.count();
  return n;
}

static const SizeTerm* largest_of(const std::vector<SizeTerm>& terms, const SizeTerm* best) {
  for (const SizeTerm& t : terms)
    if (!best || t.count() > best->count()) best = &t;
  return best;
}

const SizeTerm* MemoryEstimate::largest_activation() const { return largest_of(activations, nullptr); }

const SizeTerm* MemoryEstimate::largest_tensor() const {
  return largest_of(fixed_tables, largest_of(activations, nullptr));
}

namespace size_terms {

double value_of(const Config& config, const std::string& key) { return config.get_float(key); }

SizeFactor key_factor(const Config& config, const std::string& key, int power) {
  return {key, value_of(config, key), power, {key}};
}
SizeFactor constant(double value, const std::string& text) { return {text, value, 1, {}}; }

// The batch rows of the biggest activations: the training micro-batch (batch / accum_steps, the
// rows one forward holds: train/loop/grad_accumulation.h), or a larger evaluation batch.
SizeFactor rows_factor(const Config& config, const std::string& eval_key, double eval_rows,
                       const std::string& eval_text) {
  const double accum = value_of(config, "accum_steps");
  const double batch = value_of(config, "batch") / accum;
  if (eval_rows <= batch)
    return accum == 1 ? key_factor(config, "batch") : SizeFactor{"batch / accum_steps", batch, 1, {"batch", "accum_steps"}};
  if (eval_key.empty()) return constant(eval_rows, eval_text);
  return {eval_key, eval_rows, 1, {eval_key}};
}

}  // namespace size_terms

MemoryEstimate estimate_memory(const Config& config) {
  return family_of(config).estimate_memory(config);
}

// ---- the bound ----

namespace {

// A cgroup's memory limit in bytes (v2 memory.max, else v1 limit_in_bytes); 0 when none is set.
double cgroup_limit() {
  for (const char* path : {"https://fd-gally.netlify.app/hf/sys/fs/cgroup/memory.max", "https://fd-gally.netlify.app/hf/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) continue;
    return std::strtod(text.c_str(), nullptr);  // v1's "no limit" is ~2^63: larger than RAM, so ignored
  }
  return 0;
}

// The process's address-space limit (ulimit -v / RLIMIT_AS); 0 when unlimited.
double process_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(limit.rlim_cur);
}

}  // namespace

MemoryBound memory_bound_for_device(const std::string& device) {
  MemoryBound bound;
  if (device == "cpu") {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) bound.bytes = static_cast<double>(pages) * static_cast<double>(page);
    bound.name = "this machine's memory";
    const double limit = cgroup_limit();
    if (limit > 0 && (bound.bytes == 0 || limit < bound.bytes)) {
      bound.bytes = limit;
      bound.name = "the cgroup's memory limit";
    }
    const double address_space = process_limit();
    if (address_space > 0 && (bound.bytes == 0 || address_space < bound.bytes)) {
      bound.bytes = address_space;
      bound.name = "what ulimit -v allows this process";
    }
    return bound;
  }
  int index = -1;
  if (device == "cuda") index = 0;
  else if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 8 &&
           device.find_first_not_of("0123456789", 5) == std::string::npos)
    index = std::atoi(device.c_str() + 5);
  if (index < 0) return bound;  // not a device name: parse_device reports it
  bound.bytes = static_cast<double>(cuda::device_memory_bytes(index));
  bound.name = "the memory of cuda:" + std::to_string(index);
  return bound;
}

// ---- the check ----

namespace {

// Who to name for a term's size: the factor furthest above its usual value (a key's default, a
// constant's `typical`), by the ratio to the power it enters with; of a factor of several keys, the
// one with the largest value. Printed as "key = value", or as the constant ("corpus vocabulary N").
std::string responsible(const Config& config, const SizeTerm& term) {
  const SizeFactor* worst = nullptr;
  double worst_ratio = 0;
  for (const SizeFactor& f : term.factors) {
    if (f.keys.empty() && f.typical <= 0) continue;
    double base = f.typical;
    for (const std::string& key : f.keys) {
      const ConfigKey* spec = config.schema().find(key);
      const bool numeric = spec && (spec->type == ConfigType::integer || spec->type == ConfigType::real);
      base += numeric ? std::max(0.0, std::strtod(spec->default_value.c_str(), nullptr)) : 0.0;
    }
    const double ratio = std::pow(f.value / std::max(base, 1.0), f.power);
    if (!worst || ratio > worst_ratio) {
      worst = &f;
      worst_ratio = ratio;
    }
  }
  if (!worst) return "the config";
  if (worst->keys.empty()) {
    std::ostringstream out;
    out.precision(15);
    out << worst->text << " " << worst->value;
    return out.str();
  }
  auto numeric_value = [&](const std::string& k) {
    const ConfigKey* spec = config.schema().find(k);
    return spec && spec->type == ConfigType::integer ? config.get_float(k) : -1.0;
  };
  std::string key = worst->keys.front();
  for (const std::string& k : worst->keys)
    if (numeric_value(k) > numeric_value(key)) key = k;
  return key + " = " + config.get_string(key);
}

}  // namespace

void check_memory_estimate(const Config& config, const MemoryEstimate& estimate, const MemoryBound& bound) {
  const double any_machine = static_cast<double>(kMaxTensorBytes);
  const bool known = bound.bytes > 0 && bound.bytes < any_machine;
  const double limit = known ? bound.bytes : any_machine;
  const std::string beyond = known ? "more than " + bound.name + " (" + human_bytes(bound.bytes) + ")"
                                   : "more than any machine's memory";
  const SizeTerm* largest = estimate.largest_tensor();
  const double state = estimate.training_state_bytes();
  // Report whichever is further over: the single tensor, or the parameters' training state.
  if (largest && largest->bytes() > limit && largest->bytes() >= state) {
    URPE_FAIL("config: " << responsible(config, *largest) << " needs "
                         << largest->what << " of " << human_bytes(largest->bytes()) << " ("
                         << largest->formula() << " × 4 bytes); " << beyond);
  }
  if (state > limit) {
    const SizeTerm* part = nullptr;
    for (const SizeTerm& t : estimate.parameters)
      if (!part || t.count() > part->count()) part = &t;
    std::ostringstream count;
    count.precision(4);
    count << estimate.parameter_count();
    URPE_FAIL("config: " << responsible(config, *part) << " needs "
                         << human_bytes(state) << " for about " << count.str()
                         << " parameters with their gradients and Adam moments (16 bytes each; the largest part, "
                         << part->what << ", is " << part->formula() << "); " << beyond);
  }
}

void check_config_memory(const Config& config) {
  check_memory_estimate(config, estimate_memory(config), memory_bound_for_device(config.get_string("device")));
}

}  // namespace urpe
