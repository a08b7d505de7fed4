// The per-directory flock and the /proc lookups that name its holder (see run_lock.h).
#include "base/io/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "tensor/error.h"
#include "base/io/printable.h"
#include "base/io/run_dir.h"

namespace urpe {

namespace {

// The directories this process has locked: one open descriptor each (flock belongs to the open
// file description, so a second open() of the same directory would conflict with the first), and
// how many RunDirectoryLock objects share it.
struct HeldLock {
  int fd = -1;
  LockMode mode = LockMode::shared;
  int count = 0;
};
using LockKey = std::pair<unsigned long long, unsigned long long>;  // (st_dev, st_ino)

std::map<LockKey, HeldLock>& held_locks() {
  static std::map<LockKey, HeldLock> locks;
  return locks;
}
std::mutex& held_locks_mutex() {
  static std::mutex mutex;
  return mutex;
}

// /proc/PID/cmdline as one line: arguments joined by spaces, escaped, at most 200 characters.
std::string command_line_of(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  text = printable(text);
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

// Whether flock failed because the file system cannot lock at all (then the run goes on unlocked,
// with a warning), rather than because another process holds the lock.
bool lock_unsupported(int error) {
  return error == ENOLCK || error == EOPNOTSUPP || error == EINVAL || error == EBADF;
}

void warn_unlocked(const std::string& dir, int error) {
  static bool warned = false;
  if (warned) return;
  warned = true;
  std::fprintf(stderr, "urpe: warning: cannot lock '%s' (%s); another urpe command could write into it at the "
                       "same time\n", printable(dir).c_str(), std::strerror(error));
}

const char* kReplacedName = ".urpe-replaced";

}  // namespace

std::string describe_lock_holders(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return "";
  std::ifstream in("/proc/locks");
  std::string line, holders;
  const long self = static_cast<long>(::getpid());
  while (std::getline(in, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters are listed as "1: -> FLOCK ...".
    std::istringstream fields(line);
    std::string id, kind, advisory, access, where;
    long pid = 0;
    if (!(fields >> id >> kind) || kind == "->" || kind != "FLOCK") continue;
    if (!(fields >> advisory >> access >> pid >> where)) continue;
    unsigned major_id = 0, minor_id = 0;
    unsigned long long inode = 0;
    if (std::sscanf(where.c_str(), "%x:%x:%llu", &major_id, &minor_id, &inode) != 3) continue;
    if (inode != static_cast<unsigned long long>(st.st_ino)) continue;
    // Some file systems (overlay) report another device number here than stat(): the inode
    // decides when the device differs only that way.
    const bool same_device = major_id == major(st.st_dev) && minor_id == minor(st.st_dev);
    if (!same_device && major_id != 0) continue;
    if (pid == self) continue;
    const std::string command = command_line_of(pid);
    holders += std::string(holders.empty() ? "" : ", ") + "pid " + std::to_string(pid) +
               (command.empty() ? "" : " (" + command + ")") + (access == "WRITE" ? " writing" : " reading");
  }
  return holders;
}

RunDirectoryLock::RunDirectoryLock(const std::string& dir, LockMode mode, const std::string& option) {
  const std::string named = option.empty() ? "'" + dir + "'" : option + " " + dir;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    URPE_CHECK(error != ENOENT, named << ": the directory does not exist");
    URPE_CHECK(error != ENOTDIR, named << " is not a directory");
    URPE_FAIL(named << ": cannot open the directory to lock it: " << std::strerror(error));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    URPE_FAIL(named << ": cannot stat the directory: " << std::strerror(error));
  }
  device_ = static_cast<unsigned long long>(st.st_dev);
  inode_ = static_cast<unsigned long long>(st.st_ino);
  const LockKey key{device_, inode_};
  std::lock_guard<std::mutex> guard(held_locks_mutex());
  auto& locks = held_locks();
  auto it = locks.find(key);
  if (it != locks.end()) {  // this process holds it already: share the descriptor
    ::close(fd);
    if (mode == LockMode::exclusive && it->second.mode == LockMode::shared) {
      URPE_CHECK(::flock(it->second.fd, LOCK_EX | LOCK_NB) == 0,
                 named << " is in use by another urpe command: " << describe_lock_holders(dir)
                       << "; wait for it to finish");
      it->second.mode = LockMode::exclusive;
    }
    ++it->second.count;
    held_ = true;
    return;
  }
  if (::flock(fd, (mode == LockMode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    const int error = errno;
    if (lock_unsupported(error)) {
      ::close(fd);
      warn_unlocked(dir, error);
      return;
    }
    ::close(fd);
    URPE_CHECK(error == EWOULDBLOCK, named << ": cannot lock the directory: " << std::strerror(error));
    std::string holders = describe_lock_holders(dir);
    if (holders.empty()) holders = "another process";
    if (mode == LockMode::exclusive)
      URPE_FAIL(named << " is in use by another urpe command: " << holders
                      << "; wait for it to finish, or choose another directory");
    URPE_FAIL(named << " is being written by another urpe command: " << holders
                    << "; wait for it to finish, then try again");
  }
  // The directory may have been removed (or replaced) between open() and flock(): the lock is then
  // on a directory nobody will ever see again.
  struct stat now;
  if (::stat(dir.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
    ::close(fd);
    URPE_FAIL(named << ": the directory was removed or replaced while it was being locked; try again");
  }
  const std::string replaced = join_path(dir, kReplacedName);
  if (path_exists(replaced)) {
    ::close(fd);
    URPE_FAIL(named << ": " << replaced << " holds a run that an interrupted --overwrite replaced; move its "
                    << "files back into " << dir << " or delete it");
  }
  locks[key] = HeldLock{fd, mode, 1};
  held_ = true;
}

void check_readable_run(const std::string& dir, const std::string& option) {
  if (!is_directory(dir)) return;
  const std::string replaced = join_path(dir, kReplacedName);
  if (!path_exists(replaced) || !describe_lock_holders(dir).empty()) return;
  URPE_FAIL(option << " " << dir << ": " << replaced << " holds a run that an interrupted --overwrite replaced; move "
                   << "its files back into " << dir << " or delete it");
}

RunDirectoryLock::~RunDirectoryLock() {
  if (!held_) return;
  std::lock_guard<std::mutex> guard(held_locks_mutex());
  auto& locks = held_locks();
  auto it = locks.find({device_, inode_});
  if (it == locks.end() || --it->second.count > 0) return;
  ::close(it->second.fd);  // closing the last descriptor releases the flock
  locks.erase(it);
}

}  // namespace urpe
