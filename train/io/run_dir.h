// The files of a run directory (docs/cli.md#run-directories): config.txt, metrics.csv,
// results.json, plots/.
// Every file is written through a temp file + rename so a crash never leaves half a file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "train/io/json.h"
#include "train/io/run_lock.h"

namespace urpe {

void make_directories(const std::string& path);  // mkdir -p, with a clear error
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// A directory as the user named it, spelled once for every comparison and message: lexically
// normal ("a/./b/" and "a/b" are one), without a trailing slash, "." for an empty path.
std::string normal_directory(const std::string& path);
// Whether `a` and `b` name the same directory: the same file when both exist (symlinks and
// relative spellings included), else the same absolute normal spelling.
bool same_directory(const std::string& a, const std::string& b);
std::string join_path(const std::string& dir, const std::string& name);
void write_text_atomic(const std::string& path, const std::string& text);
std::string read_text_file(const std::string& path);  // error names the file (and a directory as one)

// What a command writes into its output directory: config.txt, metrics.csv, model.safetensors,
// results.json, results.md, plots/ and runs/ (a repro's runs). A directory holding any of them
// holds a run.
const std::vector<std::string>& run_output_names();

// How a command takes its output directory (`--out DIR`), so that no command overwrites another
// run by accident and a failed command leaves the directory as it found it.
//  - DIR holds a run (run_output_names) and overwrite is false: one error naming the option, DIR
//    and the file found, e.g. "--out runs/demo already holds a run (results.json); choose another
//    directory or pass --overwrite" (`alternative` is put before that advice).
//  - overwrite: those entries (only those: other files in DIR stay) are moved into
//    DIR/.urpe-replaced. done() deletes them. Without done() (the command failed) the new files
//    are removed and the old ones moved back, unless the new run wrote a checkpoint
//    (DIR/model.safetensors, DIR/runs/*/model.safetensors): then it is resumable, so it is kept
//    and the old run deleted as done() would.
//  - Directories the command created are removed again after a failure that left them empty; a
//    path that was there before (a symlink too, dangling or not) is never removed.
// The claim holds DIR's exclusive lock (run_lock.h) from before it looks into DIR until it is
// destroyed, so a second command cannot claim DIR meanwhile. A DIR/.urpe-replaced left by a
// killed process is refused (its files are the old run: move them back or delete it), and so are
// a DIR that is a file and a DIR that is a symlink to nothing (dangling, or a loop).
class OutputClaim {
 public:
  OutputClaim(const std::string& dir, const std::string& option, bool overwrite,
              const std::string& alternative = "");
  ~OutputClaim();
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;
  void done();  // the command succeeded (or stopped on Ctrl-C with its checkpoint saved)

 private:
  std::string dir_;
  std::vector<std::string> moved_;    // names moved into DIR/.urpe-replaced
  std::vector<std::string> created_;  // DIR and the parents it lacked, deepest first
  bool done_ = false;
  std::unique_ptr<RunDirectoryLock> lock_;  // destroyed after the destructor's clean-up
};

// metrics.csv: one row per logged point.
// Columns: step, split (train|valid), loss, metric, lr, tokens_per_s, seconds.
class MetricsLog {
 public:
  // append = true keeps existing rows (a resumed run) but drops rows after `keep_until_step`,
  // so a resumed run's log matches an uninterrupted one. An empty path: a log that keeps nothing
  // (the ranks other than 0 of a data-parallel run, which write no files).
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

// One row of results.json (docs/cli.md#run-directories): what a run or a repro
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
