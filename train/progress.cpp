// Progress output on stderr; ETA from the average speed since this run (re)started.
#include "train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace urpe {

ProgressLine::ProgressLine(std::string label, int64_t total, int64_t start, bool quiet)
    : label_(std::move(label)), total_(total), start_(start), quiet_(quiet),
      tty_(::isatty(STDERR_FILENO) != 0), begin_(std::chrono::steady_clock::now()),
      last_print_(begin_), plain_interval_(std::max<int64_t>(1, total / 10)) {}

static std::string format_seconds(double s) {
  char buffer[32];
  const int total = static_cast<int>(s + 0.5);
  if (total >= 3600) std::snprintf(buffer, sizeof buffer, "%dh%02dm", total / 3600, (total / 60) % 60);
  else std::snprintf(buffer, sizeof buffer, "%dm%02ds", total / 60, total % 60);
  return buffer;
}

void ProgressLine::update(int64_t step, double loss, double lr, double tokens_per_s) {
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  const bool due = tty_ ? (since_print > 0.2 || step == total_)
                        : (step % plain_interval_ == 0 || step == total_);
  if (!due) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - begin_).count();
  const double per_step = elapsed / std::max<int64_t>(1, step - start_);
  const double eta = per_step * static_cast<double>(total_ - step);
  char line[256];
  std::snprintf(line, sizeof line, "%s step %lld/%lld  loss %.4f  lr %.2e  %.0f tok/s  ETA %s",
                label_.c_str(), static_cast<long long>(step), static_cast<long long>(total_), loss,
                lr, tokens_per_s, format_seconds(eta).c_str());
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line);
    line_open_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
}

void ProgressLine::message(const std::string& text) {
  if (quiet_) return;
  if (line_open_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s %s\n", label_.c_str(), text.c_str());
  line_open_ = false;
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (line_open_) std::fprintf(stderr, "\n");
  line_open_ = false;
}

}  // namespace urpe
