// The stop signals of a command that writes a run: SIGINT (Ctrl-C), SIGTERM (kill, a batch system's
// time limit) and SIGHUP (the terminal closed). While a StopOnInterrupt scope is alive they set a
// flag instead of killing the process; the training loop polls it between steps, saves a checkpoint
// and stops, a repro grid stops after that run (docs/runs.md#interrupted-grids), and an
// `--overwrite` that has moved the old run aside puts it back (base/io/run_dir.h). A signal handler
// can only talk to the program through such a flag.
//
// Scopes nest: the first one installs the handlers and clears the flag, the others share them, and
// the last one to end restores the handlers that were there before, whatever order they end in.
// The flag stays readable (stop_signal) after the last scope.
#pragma once

namespace urpe {

class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
  bool requested() const;
};

// The signal that asked the last (or current) StopOnInterrupt scope to stop: SIGINT, SIGTERM,
// SIGHUP or 0.
int stop_signal();
// The exit code of a command stopped that way, as a shell reports a process killed by the signal:
// 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
int stop_exit_code();
// "SIGINT", "SIGTERM" or "SIGHUP".
const char* stop_signal_name(int signal);

// Signals about output that must not kill a run, ignored for the whole process (main() calls this
// first): SIGPIPE (`urpe train | head` closed its pipe: printing stops, training goes on) and SIGXFSZ
// (a write beyond `ulimit -f`: the write fails with EFBIG, which names the file and the limit,
// instead of the process dying half-way through a checkpoint).
void ignore_output_signals();

}  // namespace urpe
