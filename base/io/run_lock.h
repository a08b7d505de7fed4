// One writer per run directory (docs/runs.md#the-lock). Two `urpe train --out D` started together,
// an `--overwrite` or `--resume` while another process trains in D, or two `repro --resume` of one
// grid would otherwise mix two runs' config, checkpoint and metrics, or make both fail half-way.
//
// The lock is an advisory flock(2) on the directory itself: nothing is written into the directory
// for it (no lock file to clean up or to mistake for a run's file), two spellings of one directory
// (a symlink, `D/`, `./D`) are the same lock, and the kernel releases it when the process ends, however
// it ends, so a killed run never leaves a stale lock behind. Commands that write (train, repro, demo,
// profile, analyze's --out) hold it exclusively for their whole run. Commands that only read a run
// (eval, plot, analyze --run) take no lock (check_readable_run): only writers exclude each other,
// and a run can be watched while it trains. (LockMode::shared remains for a reader that must keep
// writers out.) Every attempt is non-blocking: a second writer fails at once with one error naming
// the directory and the holder's pid and command line (read from /proc/locks and /proc/PID/cmdline).
//
// Within one process the lock is re-entrant: `urpe train` takes it before moving an old run aside,
// and the training loop takes it again for the same directory (a repro grid also locks each run's
// own directory under its own). Under mpirun only rank 0 writes files, so only rank 0 locks.
#pragma once
#include <memory>
#include <string>

namespace urpe {

enum class LockMode { exclusive, shared };

class RunDirectoryLock {
 public:
  // Locks the existing directory `dir`. `option` is how the user named it ("--out", "--run",
  // "--resume"), for the messages. Throws one error when another process holds a conflicting lock,
  // when `dir` is not a directory, or when DIR/.urpe-replaced holds an old run left by a killed
  // `--overwrite` (run_dir.h: that directory is refused until the user moves the old run back or
  // deletes it). On a file system without flock support it warns once on stderr and goes on
  // unlocked.
  RunDirectoryLock(const std::string& dir, LockMode mode, const std::string& option);
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  unsigned long long device_ = 0, inode_ = 0;
  bool held_ = false;
};

// What a command that only reads a run (eval, plot, analyze --run) checks instead of locking it:
// readers take no lock, so they never refuse a writer nor wait for one, and watching a run while it
// trains is normal. They read a consistent snapshot because every file is replaced by a rename
// (a checkpoint is one file holding its config; metrics.csv is only appended to, and a reader skips
// a last row still being written). A DIR/.urpe-replaced is refused when no writer holds DIR (an
// interrupted --overwrite left the old run there); beside a live --overwrite it is the old run on
// its way out, and DIR holds the new run as far as it got. Nothing is checked when `dir` is not a
// directory (the command's own checks then say what is wrong with the path).
void check_readable_run(const std::string& dir, const std::string& option);

// The pid and command line of every other process holding a lock on `dir`, one per entry, as
// "pid 1234 (urpe train --out runs/x)"; empty when none is found.
std::string describe_lock_holders(const std::string& dir);

}  // namespace urpe
