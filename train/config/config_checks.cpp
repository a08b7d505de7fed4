// Range checks of config values (see config_checks.h).
#include "train/config/config_checks.h"

#include <cfloat>
#include <cmath>

#include "tensor/error.h"

namespace urpe::config_check {

void int_at_least(const Config& config, const std::string& key, int64_t min) {
  const int64_t v = config.get_int(key);
  URPE_CHECK(v >= min, "config: " << key << (min == 1 ? std::string(" must be positive")
                                                      : " must be >= " + std::to_string(min))
                                  << ", got " << v);
}

void int_between(const Config& config, const std::string& key, int64_t min, int64_t max) {
  const int64_t v = config.get_int(key);
  URPE_CHECK(v >= min && v <= max, "config: " << key << " must be between " << min << " and " << max << ", got " << v);
}

void positive(const Config& config, const std::string& key) {
  const float v = static_cast<float>(config.get_float(key));
  URPE_CHECK(v > 0.0f, "config: " << key << " must be > 0, got " << config.get_string(key)
                                  << (config.get_float(key) > 0 ? " (0 as a 32-bit float)" : ""));
}

void non_negative(const Config& config, const std::string& key) {
  URPE_CHECK(config.get_float(key) >= 0, "config: " << key << " must be >= 0, got " << config.get_string(key));
}

void probability(const Config& config, const std::string& key) {
  const double p = config.get_float(key);
  URPE_CHECK(p >= 0 && static_cast<float>(p) < 1.0f,
             "config: " << key << " must be in [0, 1), got " << config.get_string(key));
}

void every_float_fits_float32(const Config& config) {
  for (const ConfigKey& k : config.schema().keys()) {
    if (k.type != ConfigType::real) continue;
    URPE_CHECK(std::fabs(config.get_float(k.name)) <= FLT_MAX,
               "config: " << k.name << " = " << config.get_string(k.name)
                          << " is out of range (the model computes in 32-bit floats, at most 3.4e38)");
  }
}

void heads_divide(const Config& config, const std::string& heads, const std::string& width) {
  const int64_t h = config.get_int(heads), d = config.get_int(width);
  URPE_CHECK(d % h == 0, "config: " << heads << " (" << h << ") must divide " << width << " (" << d << ")");
}

void device_name(const Config& config, const std::string& key) {
  const std::string d = config.get_string(key);
  const bool numbered = d.rfind("cuda:", 0) == 0 && d.size() > 5 && d.size() <= 9 &&
                        d.find_first_not_of("0123456789", 5) == std::string::npos;
  URPE_CHECK(d == "cpu" || d == "cuda" || numbered, "config: " << key << " '" << d << "': expected cpu, cuda or cuda:N");
}

}  // namespace urpe::config_check
