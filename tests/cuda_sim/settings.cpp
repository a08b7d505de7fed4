// CUDA simulator: the schedules and checks in force (include/urpe_sim_checks.h), parsed from
// URPE_SIM_SCHEDULES and URPE_SIM_CHECKS, and the per-kernel launch records, which
// URPE_SIM_SUMMARY=DIR writes to DIR/cuda_sim_<pid>.tsv at exit (bench/sim_checks.sh sums them).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "sim_state.h"
#include "urpe_sim_checks.h"

namespace urpe_sim {

namespace {

// "a,b" → {"a", "b"}; "" → {""} (so that an empty value is refused as an empty name).
std::vector<std::string> split(const std::string& text, char separator) {
  if (text.empty()) return {""};
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.push_back("");
  return parts;
}

bool parse_schedule(std::string word, Schedule* out) {
  Schedule s;
  const std::string suffix = "+switch";
  if (word.size() > suffix.size() && word.compare(word.size() - suffix.size(), suffix.size(), suffix) == 0) {
    s.switch_at_access = true;
    word.resize(word.size() - suffix.size());
  }
  if (word == "forward") {
    s.order = Order::Forward;
  } else if (word == "reverse") {
    s.order = Order::Reverse;
  } else if (word == "random") {
    s.order = Order::Random;
  } else if (word.rfind("random:", 0) == 0 && word.size() > 7) {
    s.order = Order::Random;
    char* end = nullptr;
    s.seed = std::strtoull(word.c_str() + 7, &end, 10);
    if (*end != '\0' || word[7] == '-') return false;
  } else {
    return false;
  }
  *out = s;
  return true;
}

Settings& current() {
  static Settings settings = [] {
    Settings parsed;
    std::string error;
    if (!parse_settings(std::getenv("URPE_SIM_SCHEDULES"), std::getenv("URPE_SIM_CHECKS"), &parsed,
                        &error) ||
        !parse_bank_setting(std::getenv("URPE_SIM_BANKS"), &parsed.banks, &error)) {
      std::fprintf(stderr, "cuda_sim: %s\n", error.c_str());
      std::exit(2);
    }
    return parsed;
  }();
  return settings;
}

std::map<std::string, LaunchRecord>& records() {
  static std::map<std::string, LaunchRecord> all;
  return all;
}

// URPE_SIM_SUMMARY=DIR: one TSV per process, written to a temporary name and renamed.
void write_summary() {
  const char* dir = std::getenv("URPE_SIM_SUMMARY");
  if (!dir || !*dir || records().empty()) return;
  const std::string path = std::string(dir) + "/cuda_sim_" + std::to_string(getpid()) + ".tsv";
  const std::string temp = path + ".tmp";
  FILE* f = std::fopen(temp.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cuda_sim: URPE_SIM_SUMMARY: cannot write %s\n", temp.c_str());
    return;
  }
  std::string schedules;
  for (const Schedule& s : settings().schedules) schedules += (schedules.empty() ? "" : ",") + describe(s);
  std::fprintf(f, "# schedules=%s hooks=%d\n", schedules.c_str(), int(access_hooks_available()));
  std::fprintf(f, "kernel\tlaunches\treplayed\tblocks\tshared_accesses\tglobal_accesses\tfailures\n");
  for (const auto& [kernel, r] : records())
    std::fprintf(f, "%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n", kernel.c_str(),
                 (unsigned long long)r.launches, (unsigned long long)r.replayed,
                 (unsigned long long)r.blocks, (unsigned long long)r.shared_accesses,
                 (unsigned long long)r.global_accesses, (unsigned long long)r.failures);
  const bool ok = std::fclose(f) == 0;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0)
    std::fprintf(stderr, "cuda_sim: URPE_SIM_SUMMARY: cannot write %s\n", path.c_str());
}

}  // namespace

std::string describe(const Schedule& schedule) {
  std::string name = schedule.order == Order::Forward   ? "forward"
                     : schedule.order == Order::Reverse ? "reverse"
                                                        : "random:" + std::to_string(schedule.seed);
  return schedule.switch_at_access ? name + "+switch" : name;
}

bool parse_settings(const char* schedules, const char* checks, Settings* out, std::string* error) {
  Settings settings;
  if (schedules) {
    settings.schedules.clear();
    for (const std::string& word : split(schedules, ',')) {
      Schedule s;
      if (!parse_schedule(word, &s)) {
        *error = "URPE_SIM_SCHEDULES: '" + word +
                 "' is not a schedule (expected forward, reverse or random[:SEED], each optionally "
                 "followed by +switch, separated by commas)";
        return false;
      }
      settings.schedules.push_back(s);
    }
  }
  if (checks) {
    const std::string all = checks;
    if (all == "none") {
      settings.checks = Checks{false, false, false};
    } else if (all != "all") {
      settings.checks = Checks{false, false, false};
      for (const std::string& word : split(all, ',')) {
        if (word == "racecheck") settings.checks.racecheck = true;
        else if (word == "memcheck") settings.checks.memcheck = true;
        else if (word == "initcheck") settings.checks.initcheck = true;
        else {
          *error = "URPE_SIM_CHECKS: '" + word +
                   "' is not a check (expected all, none, or racecheck, memcheck, initcheck "
                   "separated by commas)";
          return false;
        }
      }
    }
  }
  *out = settings;
  return true;
}

bool parse_bank_setting(const char* value, BankReport* out, std::string* error) {
  const std::string word = value ? value : "off";
  if (word == "off" || word.empty()) *out = BankReport::Off;
  else if (word == "launch") *out = BankReport::Launch;
  else if (word == "exit") *out = BankReport::Exit;
  else {
    *error = "URPE_SIM_BANKS: '" + word + "' is not a bank report (expected off, launch or exit)";
    return false;
  }
  return true;
}

const Settings& settings() { return current(); }

void set_settings(const Settings& settings) {
  if (settings.schedules.empty()) {
    std::fprintf(stderr, "cuda_sim: set_settings: at least one schedule is needed\n");
    std::abort();
  }
  current() = settings;
}

LaunchRecord& launch_record(const std::string& kernel) {
  // The map and the settings first, then the exit handler: handlers and static destructors run
  // in reverse order, so the summary is written while both still exist.
  std::map<std::string, LaunchRecord>& all = records();
  settings();
  static const bool registered = [] {
    return std::atexit(write_summary) == 0 && std::atexit(print_bank_report_at_exit) == 0;
  }();
  (void)registered;
  return all[kernel];
}

std::vector<KernelRecord> launch_records() {
  std::vector<KernelRecord> all;
  for (const auto& [kernel, record] : records()) all.push_back({kernel, record});
  return all;
}

}  // namespace urpe_sim
