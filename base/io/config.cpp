// Config files and --set overrides, checked against a schema (format and messages in config.h).
// Values are stored as canonical text: ints and floats re-printed from their parsed value, bools
// as true/false, strings as given. to_text() writes that text, so it parses back identically.
#include "base/io/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "tensor/error.h"
#include "base/io/json.h"
#include "base/io/printable.h"

namespace urpe {

const char* config_type_name(ConfigType type) {
  switch (type) {
    case ConfigType::integer: return "int";
    case ConfigType::real: return "float";
    case ConfigType::string: return "string";
    case ConfigType::boolean: return "bool";
    case ConfigType::choice: return "choice";
  }
  return "?";
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string trim_config_space(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// ---- value checking: raw text → canonical text, or the reason it is not valid ----

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool within(const ConfigLimits& l, double v) {
  return (l.min_open ? v > l.min : v >= l.min) && (l.max_open ? v < l.max : v <= l.max);
}

// Returns "" and sets `canonical` when `raw` is a valid value of `key`, else the reason.
std::string check_value(const ConfigKey& key, const std::string& raw, std::string& canonical) {
  const std::string expects = "key '" + key.name + "' expects ";
  const ConfigLimits& limits = key.limits;
  switch (key.type) {
    case ConfigType::integer: {
      size_t i = (!raw.empty() && (raw[0] == '-' || raw[0] == '+')) ? 1 : 0;
      bool digits = i < raw.size();
      for (; i < raw.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(raw[i]));
      if (!digits) return expects + describe_limits(key) + ", got '" + raw + "'";
      errno = 0;
      const long long v = std::strtoll(raw.c_str(), nullptr, 10);
      const bool inside = !limits.set || (v >= limits.int_min && v <= limits.int_max);
      if (errno == ERANGE || !inside)
        return expects + describe_limits(key) + ", got '" + raw + "'" + (limits.set ? "" : " (out of range)");
      canonical = std::to_string(v);
      return "";
    }
    case ConfigType::real: {
      char* end = nullptr;
      errno = 0;
      const double v = raw.empty() ? 0 : std::strtod(raw.c_str(), &end);
      if (raw.empty() || *end != 0 || std::isspace(static_cast<unsigned char>(raw[0])))
        return expects + describe_limits(key) + ", got '" + raw + "'";
      // "1e999" overflows to inf (ERANGE), "1e-999" underflows to 0 (ERANGE too, but a fine 0).
      if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0))
        return expects + (limits.set ? describe_limits(key) : "a finite number") + ", got '" + raw + "'";
      if (limits.set && !within(limits, v)) return expects + describe_limits(key) + ", got '" + raw + "'";
      canonical = json::format_number(v);
      return "";
    }
    case ConfigType::boolean: {
      const std::string l = lower(raw);
      if (l == "true" || l == "yes" || l == "on" || l == "1") canonical = "true";
      else if (l == "false" || l == "no" || l == "off" || l == "0") canonical = "false";
      else return expects + "true or false, got '" + raw + "'";
      return "";
    }
    case ConfigType::choice:
      if (std::find(key.choices.begin(), key.choices.end(), raw) == key.choices.end())
        return expects + "one of " + join(key.choices, ", ") + "; got '" + raw + "'";
      canonical = raw;
      return "";
    case ConfigType::string:
      canonical = raw;
      return "";
  }
  return "unreachable";
}

// Strings that would not survive an unquoted `key = value` line are written in double quotes.
std::string format_value(const ConfigKey& key, const std::string& value) {
  const bool plain = !value.empty() && value.find_first_of("#\"\\\n\r") == std::string::npos &&
                     !std::isspace(static_cast<unsigned char>(value.front())) &&
                     !std::isspace(static_cast<unsigned char>(value.back()));
  if (plain) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out + "\"";
}

// Splits the text after '=' into the raw value: a double-quoted string (with \" \\ \n escapes)
// or everything up to a '#' comment, trimmed. Returns "" on success, else what is wrong.
std::string parse_value_text(const std::string& text, std::string& value) {
  const std::string t = trim_config_space(text);
  if (t.empty() || t[0] != '"') {
    value = trim_config_space(t.substr(0, t.find('#')));
    return "";
  }
  value.clear();
  size_t i = 1;
  for (; i < t.size() && t[i] != '"'; ++i) {
    if (t[i] == '\\' && i + 1 < t.size()) {
      const char e = t[++i];
      value += e == 'n' ? '\n' : e == 'r' ? '\r' : e;
    } else {
      value += t[i];
    }
  }
  if (i >= t.size()) return "unterminated quoted value";
  const std::string rest = trim_config_space(t.substr(i + 1));
  if (!rest.empty() && rest[0] != '#') return "unexpected text '" + rest + "' after the quoted value";
  return "";
}

bool valid_key_name(const std::string& k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

// One line of config text: nothing (blank or a comment), a setting (key and raw value), or a
// malformed line, with `problem` saying why (user text in it made printable).
enum class LineKind { nothing, setting, malformed };
LineKind parse_config_line(const std::string& line, std::string& key, std::string& value, std::string& problem) {
  const std::string t = trim_config_space(line);
  if (t.empty() || t[0] == '#') return LineKind::nothing;
  const size_t eq = t.find('=');
  if (eq == std::string::npos || eq > t.find('#')) {
    problem = "expected 'key = value', got '" + printable(t) + "'";
    return LineKind::malformed;
  }
  key = trim_config_space(t.substr(0, eq));
  if (!valid_key_name(key)) {
    problem = "expected 'key = value' with a key of letters, digits and _ before '=', got '" + printable(t) + "'";
    return LineKind::malformed;
  }
  problem = parse_value_text(t.substr(eq + 1), value);
  if (!problem.empty()) {
    problem = printable(problem);
    return LineKind::malformed;
  }
  return LineKind::setting;
}

}  // namespace

bool read_config_line(const std::string& line, std::string& key, std::string& value) {
  std::string problem;
  return parse_config_line(line, key, value, problem) == LineKind::setting;
}

// ---- schema ----

ConfigSchema& ConfigSchema::add(ConfigKey key) {
  URPE_CHECK(valid_key_name(key.name), "config schema: invalid key name '" << key.name << "'");
  URPE_CHECK(find(key.name) == nullptr, "config schema: key '" << key.name << "' declared twice");
  std::string canonical;
  const std::string problem = check_value(key, key.default_value, canonical);
  URPE_CHECK(problem.empty(), "config schema: bad default: " << problem);
  key.default_value = canonical;
  keys_.push_back(std::move(key));
  return *this;
}

ConfigSchema& ConfigSchema::add_int(const std::string& name, int64_t d, const std::string& help) {
  return add({name, ConfigType::integer, std::to_string(d), help, {}});
}
ConfigSchema& ConfigSchema::add_float(const std::string& name, double d, const std::string& help) {
  return add({name, ConfigType::real, json::format_number(d), help, {}});
}
ConfigSchema& ConfigSchema::add_string(const std::string& name, const std::string& d,
                                       const std::string& help) {
  return add({name, ConfigType::string, d, help, {}});
}
ConfigSchema& ConfigSchema::add_bool(const std::string& name, bool d, const std::string& help) {
  return add({name, ConfigType::boolean, d ? "true" : "false", help, {}});
}
ConfigSchema& ConfigSchema::add_choice(const std::string& name, const std::vector<std::string>& choices,
                                       const std::string& d, const std::string& help) {
  URPE_CHECK(!choices.empty(), "config schema: key '" << name << "' has no choices");
  return add({name, ConfigType::choice, d, help, choices});
}

ConfigSchema& ConfigSchema::limit_int(const std::string& name, int64_t min, int64_t max, const std::string& why) {
  ConfigKey* key = nullptr;
  for (ConfigKey& k : keys_)
    if (k.name == name) key = &k;
  URPE_CHECK(key && key->type == ConfigType::integer && min <= max,
             "config schema: limit_int on '" << name << "', which is not an int key (or min > max)");
  key->limits = ConfigLimits{true, min, max, 0, 0, false, false, why};
  std::string canonical;
  const std::string problem = check_value(*key, key->default_value, canonical);
  URPE_CHECK(problem.empty(), "config schema: the default is outside the limits: " << problem);
  return *this;
}

ConfigSchema& ConfigSchema::limit_float(const std::string& name, double min, bool min_open, double max,
                                        bool max_open, const std::string& why) {
  ConfigKey* key = nullptr;
  for (ConfigKey& k : keys_)
    if (k.name == name) key = &k;
  URPE_CHECK(key && key->type == ConfigType::real && min <= max,
             "config schema: limit_float on '" << name << "', which is not a float key (or min > max)");
  key->limits = ConfigLimits{true, 0, 0, min, max, min_open, max_open, why};
  std::string canonical;
  const std::string problem = check_value(*key, key->default_value, canonical);
  URPE_CHECK(problem.empty(), "config schema: the default is outside the limits: " << problem);
  return *this;
}

std::string describe_limits(const ConfigKey& key) {
  const ConfigLimits& l = key.limits;
  const std::string why = l.why.empty() ? "" : " (" + l.why + ")";
  if (key.type == ConfigType::integer) {
    if (!l.set) return "an integer";
    if (l.int_max == INT64_MAX) return "an integer ≥ " + std::to_string(l.int_min) + why;
    return "an integer from " + std::to_string(l.int_min) + " to " + std::to_string(l.int_max) + why;
  }
  if (!l.set) return "a number";
  const std::string lo = json::format_number(l.min), hi = json::format_number(l.max);
  if (std::isinf(l.max)) return std::string("a finite number ") + (l.min_open ? "> " : "≥ ") + lo + why;
  return std::string("a number in ") + (l.min_open ? "(" : "[") + lo + ", " + hi + (l.max_open ? ")" : "]") + why;
}

const ConfigKey* ConfigSchema::find(const std::string& name) const {
  for (const ConfigKey& k : keys_)
    if (k.name == name) return &k;
  return nullptr;
}

// Ranked by case-insensitive edit distance, ties going to the longer shared prefix. A key is
// suggested when it is within about half the name's length, or when one name starts with the
// other ('lr_rate' → 'lr', 'step' → 'steps').
std::string ConfigSchema::closest(const std::string& name) const {
  const std::string n = lower(name);
  const ConfigKey* best = nullptr;
  size_t best_distance = 0, best_prefix = 0;
  for (const ConfigKey& k : keys_) {
    const std::string c = lower(k.name);
    const size_t d = edit_distance(n, c);
    size_t prefix = 0;
    while (prefix < n.size() && prefix < c.size() && n[prefix] == c[prefix]) ++prefix;
    const bool starts = prefix == std::min(n.size(), c.size()) && prefix >= 2;
    const bool near = d <= std::max<size_t>(1, std::max(n.size(), c.size()) / 2);
    if (!starts && !near) continue;
    if (!best || d < best_distance || (d == best_distance && prefix > best_prefix)) {
      best = &k;
      best_distance = d;
      best_prefix = prefix;
    }
  }
  return best ? best->name : "";
}

std::string ConfigSchema::help_text() const {
  size_t name_w = 3, default_w = 7;
  for (const ConfigKey& k : keys_) {
    name_w = std::max(name_w, k.name.size());
    default_w = std::max(default_w, format_value(k, k.default_value).size());
  }
  std::ostringstream out;
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  out << "  " << pad("key", name_w) << pad("type", 6) << pad("default", default_w) << "meaning\n";
  for (const ConfigKey& k : keys_) {
    out << "  " << pad(k.name, name_w) << pad(config_type_name(k.type), 6)
        << pad(format_value(k, k.default_value), default_w) << k.help;
    if (k.type == ConfigType::choice) out << " (one of: " << join(k.choices, ", ") << ")";
    out << "\n";
  }
  return out.str();
}

// ---- config ----

Config::Config(const ConfigSchema& schema) : schema_(schema) {
  for (const ConfigKey& k : schema_.keys()) values_[k.name] = k.default_value;
}

Config Config::from_file(const ConfigSchema& schema, const std::string& path) {
  Config config(schema);
  config.apply_text(read_file_bytes(path), path);
  return config;
}

void Config::assign(const std::string& key, const std::string& raw, const std::string& where,
                    const std::string& origin) {
  const ConfigKey* spec = schema_.find(key);
  if (!spec) {
    const std::string suggestion = schema_.closest(key);
    URPE_FAIL(where << ": unknown key '" << key << "'"
                    << (suggestion.empty() ? std::string(" (see 'urpe train --help' for the keys)")
                                           : " (did you mean '" + suggestion + "'?)"));
  }
  std::string canonical;
  const std::string problem = check_value(*spec, raw, canonical);
  URPE_CHECK(problem.empty(), where << ": " << printable(problem));  // the problem quotes the raw value
  values_[key] = canonical;
  origin_[key] = origin;
}

void Config::apply_text(const std::string& text, const std::string& source) {
  std::map<std::string, int> line_of;  // keys set by this text, and where
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string where = printable(source) + ":" + std::to_string(number);
    std::string key, value, problem;
    const LineKind kind = parse_config_line(line, key, value, problem);
    if (kind == LineKind::nothing) continue;
    URPE_CHECK(kind == LineKind::setting, where << ": " << problem);
    auto seen = line_of.find(key);
    URPE_CHECK(seen == line_of.end(), where << ": duplicate key '" << key << "' (first set on line "
                                            << (seen == line_of.end() ? 0 : seen->second) << ")");
    assign(key, value, where, where);
    line_of[key] = number;
  }
}

void Config::apply_override(const std::string& assignment) {
  const std::string where = "--set " + printable(assignment);
  const size_t eq = assignment.find('=');
  URPE_CHECK(eq != std::string::npos, where << ": expected key=value");
  const std::string key = trim_config_space(assignment.substr(0, eq));
  URPE_CHECK(valid_key_name(key), where << ": expected key=value with a key before '='");
  std::string value;
  const std::string problem = parse_value_text(assignment.substr(eq + 1), value);
  URPE_CHECK(problem.empty(), where << ": " << printable(problem));
  auto previous = origin_.find(key);
  URPE_CHECK(previous == origin_.end() || previous->second.rfind("--set ", 0) != 0,
             where << ": duplicate key '" << key << "' (already set by "
                   << (previous == origin_.end() ? "" : previous->second) << ")");
  assign(key, value, where, where);
}

const ConfigKey& Config::key_spec(const std::string& key) const {
  const ConfigKey* spec = schema_.find(key);
  URPE_CHECK(spec != nullptr, "config: no key '" << key << "' in the schema");
  return *spec;
}

int64_t Config::get_int(const std::string& key) const {
  const ConfigKey& spec = key_spec(key);
  URPE_CHECK(spec.type == ConfigType::integer,
             "config: key '" << key << "' is a " << config_type_name(spec.type) << ", not an int");
  return std::strtoll(values_.at(key).c_str(), nullptr, 10);
}

double Config::get_float(const std::string& key) const {
  const ConfigKey& spec = key_spec(key);
  URPE_CHECK(spec.type == ConfigType::real || spec.type == ConfigType::integer,
             "config: key '" << key << "' is a " << config_type_name(spec.type) << ", not a float");
  return std::strtod(values_.at(key).c_str(), nullptr);
}

bool Config::get_bool(const std::string& key) const {
  const ConfigKey& spec = key_spec(key);
  URPE_CHECK(spec.type == ConfigType::boolean,
             "config: key '" << key << "' is a " << config_type_name(spec.type) << ", not a bool");
  return values_.at(key) == "true";
}

std::string Config::get_string(const std::string& key) const {
  key_spec(key);
  return values_.at(key);
}

bool Config::is_set(const std::string& key) const {
  key_spec(key);
  return origin_.count(key) > 0;
}

std::string Config::origin(const std::string& key) const {
  key_spec(key);
  const auto it = origin_.find(key);
  return it == origin_.end() ? std::string() : it->second;
}

std::string Config::to_text(bool with_help) const {
  size_t width = 0;
  for (const ConfigKey& k : schema_.keys()) width = std::max(width, k.name.size());
  std::ostringstream out;
  for (const ConfigKey& k : schema_.keys()) {
    std::string line = k.name + std::string(width - k.name.size(), ' ') + " = " +
                       format_value(k, values_.at(k.name));
    if (with_help && !k.help.empty()) {
      line += std::string(line.size() < width + 16 ? width + 16 - line.size() : 1, ' ');
      std::string help = k.help;
      std::replace(help.begin(), help.end(), '\n', ' ');
      line += "# " + help;
    }
    out << line << "\n";
  }
  return out.str();
}

}  // namespace urpe
