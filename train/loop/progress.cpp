// Progress output on stderr; ETA from the average speed since this run (re)started.
#include "train/loop/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace urpe {

// A terminal that understands "\r\033[K" (go to the line start, clear it): stderr is a tty and
// TERM names a real terminal. TERM=dumb (Emacs shell buffers, some CI logs) or no TERM at all
// would show the escape codes as text, so those get the plain lines.
static bool line_rewriting_terminal() {
  if (::isatty(STDERR_FILENO) == 0) return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && *term != '\0' && std::strcmp(term, "dumb") != 0;
}

GridProgress::GridProgress(int64_t runs) : runs_(runs) {}

void GridProgress::begin_run(const std::string& name) {
  ++run_;
  name_ = name;
  run_start_ = std::chrono::steady_clock::now();
}

void GridProgress::end_run() {
  finished_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
  ++finished_;
}

double GridProgress::eta(double run_elapsed, double run_remaining) const {
  // Before any run has finished, the current run's projected length stands for every run.
  const double per_run = finished_ > 0 ? finished_seconds_ / static_cast<double>(finished_)
                                       : run_elapsed + run_remaining;
  return run_remaining + per_run * static_cast<double>(std::max<int64_t>(0, runs_ - run_));
}

ProgressLine::ProgressLine(std::string label, int64_t total, int64_t start, bool quiet, const GridProgress* grid)
    : label_(std::move(label)), total_(total), start_(start), quiet_(quiet),
      tty_(line_rewriting_terminal()), begin_(std::chrono::steady_clock::now()),
      last_print_(begin_), plain_interval_(std::max<int64_t>(1, total / 10)), grid_(grid) {
  if (grid_)
    label_ = "[" + std::to_string(grid_->run()) + "/" + std::to_string(grid_->runs()) + " " + grid_->name() + "]";
}

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
  char line[384];
  int used = std::snprintf(line, sizeof line, "%s step %lld/%lld  loss %.4f%s%s  lr %.2e  %.0f tok/s  ETA %s",
                           label_.c_str(), static_cast<long long>(step), static_cast<long long>(total_), loss,
                           metric_.empty() ? "" : "  ", metric_.c_str(), lr, tokens_per_s,
                           format_seconds(eta).c_str());
  if (grid_ && used > 0 && used < static_cast<int>(sizeof line))
    std::snprintf(line + used, sizeof line - used, " (grid %s)", format_seconds(grid_->eta(elapsed, eta)).c_str());
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

void ProgressLine::validation(const std::string& text, const std::string& metric) {
  metric_ = metric;
  if (!grid_) message(text);
}

// Inside a grid the caller prints the run's result line next: the progress line makes way for it.
void ProgressLine::finish() {
  if (line_open_) std::fprintf(stderr, grid_ ? "\r\033[K" : "\n");
  line_open_ = false;
  std::fflush(stderr);
}

}  // namespace urpe
