// The progress line of a training run: on a terminal one line rewritten in place (step, loss,
// metric, lr, speed, ETA); otherwise plain lines at a steady interval, so logs stay readable.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace urpe {

class ProgressLine {
 public:
  ProgressLine(std::string label, int64_t total_steps, int64_t start_step, bool quiet);
  // Called after every step; prints when due.
  void update(int64_t step, double loss, double lr, double tokens_per_s);
  // A line that always prints (evaluation results), keeping the progress line intact.
  void message(const std::string& text);
  void finish();

 private:
  std::string label_;
  int64_t total_, start_;
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point begin_, last_print_;
  int64_t plain_interval_;
  bool line_open_ = false;
};

}  // namespace urpe
