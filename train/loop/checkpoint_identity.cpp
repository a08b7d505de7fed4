// Run ids, config hashes and the checks of --resume (see checkpoint_identity.h).
#include "train/loop/checkpoint_identity.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

#include "tensor/error.h"
#include "base/io/run_dir.h"
#include "train/config/run_config.h"
#include "train/loop/run_control.h"

namespace urpe {

namespace {

const char* kRunIdLine = "# run_id = ";

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// config.txt without its run-id line: the text the checkpoint's config_hash was taken of.
std::string without_run_id_line(const std::string& text) {
  if (text.rfind(kRunIdLine, 0) != 0) return text;
  const size_t end = text.find('\n');
  return end == std::string::npos ? "" : text.substr(end + 1);
}

std::string joined(const std::vector<std::string>& names, const std::string& last_separator = " and ") {
  std::string out;
  for (size_t k = 0; k < names.size(); ++k)
    out += (k == 0 ? "" : k + 1 == names.size() ? last_separator : ", ") + names[k];
  return out;
}

bool is_resumable(const std::string& key) {
  const auto& keys = resumable_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

std::string new_run_id() {
  std::random_device source;
  const uint64_t high = source(), low = source();
  return hex64((high << 32) ^ low);
}

bool is_run_id(const std::string& text) {
  return text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string config_text_hash(const std::string& text) {
  uint64_t hash = 14695981039346656037ULL;  // the FNV-1a 64 offset basis
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hex64(hash);
}

std::string config_file_text(const std::string& run_id, const std::string& config_text) {
  if (run_id.empty()) return config_text;
  return kRunIdLine + run_id + "  (this run's checkpoints carry the same id; see docs/runs.md)\n" + config_text;
}

std::string run_id_in_config_file(const std::string& text) {
  if (text.rfind(kRunIdLine, 0) != 0) return "";
  const std::string id = text.substr(std::string(kRunIdLine).size(), 16);
  return is_run_id(id) ? id : "";
}

std::vector<ConfigDifference> config_differences(const Config& a, const Config& b) {
  std::vector<ConfigDifference> differences;
  std::set<std::string> seen;
  for (const ConfigKey& key : a.schema().keys()) {
    seen.insert(key.name);
    const std::string second = b.schema().find(key.name) ? b.get_string(key.name) : "(none)";
    if (a.get_string(key.name) != second) differences.push_back({key.name, a.get_string(key.name), second});
  }
  for (const ConfigKey& key : b.schema().keys())
    if (!seen.count(key.name)) differences.push_back({key.name, "(none)", b.get_string(key.name)});
  return differences;
}

std::string describe_differences(const std::vector<ConfigDifference>& differences, const std::string& first_name,
                                 const std::string& second_name) {
  std::string out;
  for (const ConfigDifference& d : differences)
    out += (out.empty() ? "" : ", ") + d.key + " (" + first_name + " " + printable(d.first) + ", " + second_name +
           " " + printable(d.second) + ")";
  return out;
}

const std::vector<std::string>& resumable_keys() {
  static const std::vector<std::string> keys = {"steps", "eval_every", "device", "precision"};
  return keys;
}

Config resumed_config(const std::string& dir, const std::vector<std::string>& overrides) {
  Config config = stored_run_config(dir);
  if (overrides.empty()) return config;
  const std::string checkpoint = join_path(dir, kLastCheckpointName);
  for (const std::string& assignment : overrides) {
    const std::string key = trim_config_space(assignment.substr(0, assignment.find('=')));
    URPE_CHECK(is_resumable(key), "--set " << printable(assignment) << ": '" << printable(key)
                                           << "' cannot change when a run resumes (it would change what the run has "
                                              "learned so far); --resume may change "
                                           << joined(resumable_keys(), " or ")
                                           << ". Start a new run with --out (or --init-from " << dir
                                           << ") to change it");
    config.apply_override(assignment);
  }
  check_config_values(config);
  const int64_t step = read_checkpoint_info(checkpoint).progress.step;
  const int64_t steps = run_settings_from(config).steps;
  URPE_CHECK(steps >= step, "--set steps=" << steps << ": the run in " << dir
                                                             << " has already taken " << step
                                                             << " steps; a resumed run can only run longer");
  return config;
}

void check_resume_identity(const std::string& dir, const Config& resumed) {
  const std::string last = join_path(dir, kLastCheckpointName);
  const CheckpointInfo info = read_checkpoint_info(last);
  const std::string& run_id = info.progress.run_id;
  // The stored config matches its config_hash: read_checkpoint_info checks that on every read.

  const std::string config_path = join_path(dir, "config.txt");
  if (path_exists(config_path)) {
    const std::string text = read_text_file(config_path);
    const std::string file_id = run_id_in_config_file(text);
    URPE_CHECK(file_id.empty() || run_id.empty() || file_id == run_id,
               "--resume " << dir << ": " << last << " belongs to another run (run id " << run_id << ") than "
                           << config_path << " (run id " << file_id << "): a checkpoint copied in from another run "
                           << "directory is not resumed; put this run's checkpoint back, or continue the other run "
                           << "in its own directory");
    // The same text as the checkpoint's (the common case) needs no parsing. Otherwise a key may
    // differ from the checkpoint only where this resume's --set gives it config.txt's value.
    if (config_text_hash(without_run_id_line(text)) != config_text_hash(info.config_text)) {
      const Config file_config = config_from_text(text, config_path);
      const Config stored = config_from_text(info.config_text, last + " (config)");
      std::vector<ConfigDifference> differences;
      for (const ConfigDifference& d : config_differences(file_config, stored))
        if (!resumed.schema().find(d.key) || resumed.get_string(d.key) != d.first) differences.push_back(d);
      if (!differences.empty()) {
        std::vector<std::string> keys, sets;
        bool all_resumable = true;
        for (const ConfigDifference& d : differences) {
          keys.push_back(d.key);
          sets.push_back("--set " + d.key + "=" + d.first);
          all_resumable = all_resumable && is_resumable(d.key) && d.first != "(none)";
        }
        URPE_FAIL("--resume " << dir << ": " << config_path << " differs from the config stored in " << last << ": "
                              << describe_differences(differences, "config.txt", "checkpoint")
                              << "; a resumed run continues with the checkpoint's config, so restore config.txt"
                              << (all_resumable ? ", or continue with the new value" +
                                                      std::string(differences.size() > 1 ? "s" : "") +
                                                      " on purpose: urpe train --resume " + dir + " " +
                                                      joined(sets, " ")
                                                : " (of its keys, --resume --set may change only " +
                                                      joined(resumable_keys(), " and ") + ")"));
      }
    }
  }

  const std::string best = join_path(dir, kBestCheckpointName);
  if (path_exists(best)) {
    const CheckpointInfo best_info = read_checkpoint_info(best);
    const std::string& best_id = best_info.progress.run_id;
    URPE_CHECK(best_id.empty() || run_id.empty() || best_id == run_id,
               "--resume " << dir << ": " << best << " belongs to another run (run id " << best_id << ") than " << last
                           << " (run id " << run_id << "); put this run's best checkpoint back, or delete it (the run "
                           << "then keeps its best from the evaluations still to come)");
    std::vector<ConfigDifference> differences;
    for (const ConfigDifference& d :
         config_differences(config_from_text(best_info.config_text, best + " (config)"), resumed))
      if (!is_resumable(d.key)) differences.push_back(d);
    URPE_CHECK(differences.empty(), "--resume " << dir << ": " << best << " was trained with another config than "
                                                << last << ": " << describe_differences(differences, "best", "last")
                                                << "; put this run's best checkpoint back, or delete it");
  }
}

}  // namespace urpe
