// The files of a run directory (docs/cli.md#run-directories): config.txt, metrics.csv,
// results.json, plots/.
// Every file is written through a temp file + rename so a crash never leaves half a file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/io/json.h"
#include "base/io/run_lock.h"
#include "base/io/stop_signals.h"

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
// run by accident and a failed or stopped command leaves the directory as it found it.
//  - DIR holds a run (run_output_names) and overwrite is false: one error naming the option, DIR
//    and the file found, e.g. "--out runs/demo already holds a run (results.json); choose another
//    directory or pass --overwrite" (`alternative` is put before that advice).
//  - overwrite: those entries (only those: other files in DIR stay) are the old run. They stay in
//    place, untouched, while the command prepares (reads its data, builds its model: Ctrl-C there
//    simply ends urpe), and are moved into DIR/.urpe-replaced just before the command writes
//    anything under DIR (before_writing). From then on SIGINT, SIGTERM and SIGHUP only set the stop
//    flag (base/io/stop_signals.h). Until the new run has saved its first checkpoint
//    (new_run_saved), any end but done() (an error, a stop signal) removes what the new run wrote
//    and moves the old run back: DIR is as it was. Once the new run has saved a checkpoint it is
//    kept (resumable), and the old run is deleted then.
//  - Without an old run, a command that fails or stops before its first checkpoint removes what
//    it wrote; directories it created are removed again when that left them empty; a path that
//    was there before (a symlink too, dangling or not) is never removed.
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
  // The command succeeded: the new run is kept and the old one deleted. A command a signal stopped
  // does not call it (the destructor keeps the new run only if it saved a checkpoint).
  void done();

 private:
  friend void before_writing(const std::string& path);
  friend bool old_run_restorable(const std::string& dir);
  friend void new_run_saved(const std::string& dir);
  bool covers(const std::string& path, bool strictly_inside) const;
  void move_old_run_aside();
  void put_old_run_back();

  std::string dir_, absolute_;        // as given; absolute and lexically normal, for covers()
  std::vector<std::string> old_run_;  // the old run's entries (names in DIR), found at the claim
  bool moved_ = false;                // old_run_ is in DIR/.urpe-replaced
  std::vector<std::string> created_;  // DIR and the parents it lacked, deepest first
  bool done_ = false;
  std::unique_ptr<StopOnInterrupt> stop_signals_;  // from the move until the claim ends
  std::unique_ptr<RunDirectoryLock> lock_;         // destroyed after the destructor's clean-up
};

// Called by every writer (write_file_atomic, write_text_atomic, make_directories) before it creates
// or replaces anything at `path`: when `path` lies inside a claimed directory whose old run is still
// in place, the old run is moved aside now (OutputClaim). Throws when it cannot be moved.
void before_writing(const std::string& path);
// Whether a run writing into `dir` (DIR or a run under a grid's DIR) replaces an old run that can
// still be put back: an --overwrite claim covers it and no checkpoint of the new run exists yet. The
// training loop then stops on a signal without saving, so that the old run comes back.
bool old_run_restorable(const std::string& dir);
// The run in `dir` saved a checkpoint: the claims covering it keep the new run from now on, and an
// old run they moved aside is deleted.
void new_run_saved(const std::string& dir);

// The files a resumed run rewrites before its first new checkpoint (config.txt, metrics.csv,
// model.best.safetensors, ...), kept as they were: each is hard-linked (or copied) into
// DIR/.urpe-resume first. Without commit() (an error unwinds, the run fails before it saves a
// checkpoint) the destructor puts them back and removes what the resume created, so a failed
// `--resume` leaves DIR as it was. commit() (the first checkpoint is saved) deletes the copies. An
// empty `dir` keeps nothing (ranks other than 0).
class ResumeRollback {
 public:
  explicit ResumeRollback(const std::string& dir);
  ~ResumeRollback();
  ResumeRollback(const ResumeRollback&) = delete;
  ResumeRollback& operator=(const ResumeRollback&) = delete;
  void commit();

 private:
  std::string dir_;
  std::vector<std::string> kept_, absent_;  // names kept in .urpe-resume; names that did not exist
  bool committed_ = true;
};

// metrics.csv: one row per logged point.
// Columns: step, split (train|valid), loss, metric, lr, tokens_per_s, seconds.
class MetricsLog {
 public:
  // append = true keeps existing rows (a resumed run) but drops rows after `keep_until_step`,
  // so a resumed run's log matches an uninterrupted one; a torn last row (read_metrics) is dropped
  // with a warning, and the file as it was is kept as metrics.csv.torn. An empty path: a log that
  // keeps nothing (the ranks other than 0 of a data-parallel run, which write no files). A row that
  // cannot be written (a full disk, `ulimit -f`) is an error naming the file.
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
// The rows of metrics.csv. A last line without its newline is a row still being appended (a reader
// beside a live run) or one a crash cut (an append is one write, so nothing else leaves it): it is
// skipped, and given back in `torn_row` when asked (else a warning on stderr says so). Any other bad
// line is an error naming the line.
std::vector<MetricsRow> read_metrics(const std::string& path, std::string* torn_row = nullptr);

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
