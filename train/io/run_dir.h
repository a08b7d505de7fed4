// The files of a run directory (README.md#run-directories-and-config-keys): config.txt, metrics.csv,
// results.json, plots/.
// Every file is written through a temp file + rename so a crash never leaves half a file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "train/io/json.h"

namespace urpe {

void make_directories(const std::string& path);  // mkdir -p, with a clear error
bool path_exists(const std::string& path);
std::string join_path(const std::string& dir, const std::string& name);
void write_text_atomic(const std::string& path, const std::string& text);
std::string read_text_file(const std::string& path);  // error names the file

// metrics.csv: one row per logged point.
// Columns: step, split (train|valid), loss, metric, lr, tokens_per_s, seconds.
class MetricsLog {
 public:
  // append = true keeps existing rows (a resumed run) but drops rows after `keep_until_step`,
  // so a resumed run's log matches an uninterrupted one.
  MetricsLog(const std::string& path, bool append, int64_t keep_until_step = 0);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(int64_t step, const std::string& split, double loss, double metric, double lr,
             double tokens_per_s, double seconds);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

struct MetricsRow {
  int64_t step = 0;
  std::string split;
  double loss = 0, metric = 0, lr = 0, tokens_per_s = 0, seconds = 0;
};
std::vector<MetricsRow> read_metrics(const std::string& path);

// One row of results.json (README.md#run-directories-and-config-keys): what a run or a repro
// configuration achieved.
struct ResultRow {
  std::string experiment, task, model, pe;
  int64_t seed = 0;
  std::string metric_name;
  double metric = 0;
  int64_t params = 0, steps = 0;
  double seconds = 0;
  std::string device;
};
json::Value result_to_json(const ResultRow& row);
ResultRow result_from_json(const json::Value& value);

}  // namespace urpe
