// The progress line of a training run: on a terminal one line rewritten in place (step, loss,
// metric, lr, speed, ETA); otherwise (not a terminal, or TERM=dumb or unset) plain lines at a
// steady interval, so logs stay readable.
// Inside a grid of runs (`urpe repro`, `urpe demo`) the line also names the run (k/N) and gives
// the ETA of the whole grid, and evaluations update the line instead of printing their own.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace urpe {

// Where a grid of runs stands: how many runs, which one is training, how long the finished ones
// took (their average predicts the runs still to come).
class GridProgress {
 public:
  explicit GridProgress(int64_t runs);
  void begin_run(const std::string& name);  // the next run starts
  void end_run();                           // it has finished
  int64_t run() const { return run_; }      // 1-based index of the current run
  int64_t runs() const { return runs_; }
  const std::string& name() const { return name_; }
  // Seconds left in the grid, given the current run's elapsed and remaining seconds.
  double eta(double run_elapsed, double run_remaining) const;

 private:
  int64_t runs_, run_ = 0, finished_ = 0;
  double finished_seconds_ = 0;
  std::string name_;
  std::chrono::steady_clock::time_point run_start_;
};

class ProgressLine {
 public:
  // `grid`, when given, must outlive the line.
  ProgressLine(std::string label, int64_t total_steps, int64_t start_step, bool quiet,
               const GridProgress* grid = nullptr);
  // Called after every step; prints when due.
  void update(int64_t step, double loss, double lr, double tokens_per_s);
  // A line that always prints, keeping the progress line intact.
  void message(const std::string& text);
  // An evaluation's result: `metric` (e.g. "acc 93.20%") joins the progress line; outside a grid
  // `text` is also printed as its own line.
  void validation(const std::string& text, const std::string& metric);
  void finish();

 private:
  std::string label_;
  int64_t total_, start_;
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point begin_, last_print_;
  int64_t plain_interval_;
  bool line_open_ = false;
  const GridProgress* grid_;
  std::string metric_;
};

}  // namespace urpe
