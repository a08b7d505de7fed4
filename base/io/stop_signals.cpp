// The stop flag and its handlers (see stop_signals.h).
#include "base/io/stop_signals.h"

#include <csignal>

namespace urpe {

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;  // 0, or the signal that asked to stop
int g_stop_scopes = 0;                         // StopOnInterrupt objects alive (nested)
const int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
void (*g_previous[3])(int) = {nullptr, nullptr, nullptr};  // the handlers before the first scope
void request_stop(int signal) { g_stop_signal = signal; }
}  // namespace

StopOnInterrupt::StopOnInterrupt() {
  if (g_stop_scopes++ > 0) return;  // an outer scope (a repro grid, an --overwrite) already catches them
  g_stop_signal = 0;
  for (int k = 0; k < 3; ++k) {
    g_previous[k] = std::signal(kStopSignals[k], request_stop);
    // A signal the caller ignores stays ignored: `nohup urpe train` must survive SIGHUP, and a job
    // a non-interactive shell started in the background ignores SIGINT.
    if (g_previous[k] == SIG_IGN) std::signal(kStopSignals[k], SIG_IGN);
  }
}

StopOnInterrupt::~StopOnInterrupt() {
  if (--g_stop_scopes > 0) return;
  for (int k = 0; k < 3; ++k) std::signal(kStopSignals[k], g_previous[k]);
}

bool StopOnInterrupt::requested() const { return g_stop_signal != 0; }

int stop_signal() { return g_stop_signal; }

int stop_exit_code() { return 128 + (g_stop_signal != 0 ? static_cast<int>(g_stop_signal) : SIGINT); }

const char* stop_signal_name(int signal) {
  return signal == SIGTERM ? "SIGTERM" : signal == SIGHUP ? "SIGHUP" : "SIGINT";
}

void ignore_output_signals() {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace urpe
