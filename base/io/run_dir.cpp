// Run-directory files: plain text and CSV, written atomically; the claim on an output directory.
#include "base/io/run_dir.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "tensor/error.h"
#include "base/io/printable.h"

namespace urpe {

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void make_directories(const std::string& path) {
  before_writing(path);
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      URPE_FAIL("cannot create directory '" << partial << "': " << std::strerror(errno));
  }
  struct stat st;
  URPE_CHECK(::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode),
             "'" << path << "' exists but is not a directory");
}

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

void write_text_atomic(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

std::string read_text_file(const std::string& path) {
  // An ifstream opens a directory without complaint and reads it as empty.
  URPE_CHECK(!is_directory(path), "cannot read '" << path << "': it is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  URPE_CHECK(in.good(), "cannot read '" << path << "' (missing or unreadable)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- the claim on an output directory ----

namespace fs = std::filesystem;

const std::vector<std::string>& run_output_names() {
  // Most telling first: the first one found is the one the error names.
  static const std::vector<std::string> names = {"results.json", "model.safetensors", "model.best.safetensors",
                                                 "results.md",   "config.txt",        "metrics.csv",
                                                 "runs",         "plots"};
  return names;
}

static const char* kReplaced = ".urpe-replaced";

// Whether a run under `dir` has saved a checkpoint (itself, or one of a repro's runs).
static bool holds_checkpoint(const std::string& dir) {
  if (path_exists(join_path(dir, "model.safetensors"))) return true;
  std::error_code ec;
  for (fs::directory_iterator it(join_path(dir, "runs"), ec), end; !ec && it != end; it.increment(ec))
    if (path_exists(join_path(it->path().string(), "model.safetensors"))) return true;
  return false;
}

// Whether anything is at `path` itself: a symlink counts, whether or not it leads anywhere.
static bool entry_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string normal_directory(const std::string& path) {
  std::string normal = fs::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal.empty() ? "." : normal;
}

bool same_directory(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (path_exists(a) && path_exists(b)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const fs::path absolute_a = fs::absolute(normal_directory(a), ec), absolute_b = fs::absolute(normal_directory(b), ec);
  return normal_directory(absolute_a.string()) == normal_directory(absolute_b.string());
}

// The claims alive in this process (a command holds one; rank 0 only), for before_writing.
static std::vector<OutputClaim*>& live_claims() {
  static std::vector<OutputClaim*> claims;
  return claims;
}

static std::string absolute_normal(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return normal_directory(ec ? path : absolute.string());
}

OutputClaim::OutputClaim(const std::string& dir, const std::string& option, bool overwrite,
                         const std::string& alternative)
    : dir_(dir), absolute_(absolute_normal(dir)) {
  URPE_CHECK(!dir.empty(), option << " needs a directory");
  URPE_CHECK(!path_exists(dir) || is_directory(dir), option << " " << dir << " is a file, not a directory");
  // A symlink that leads nowhere is the user's, not a directory to create (mkdir would fail on it,
  // and the clean-up would then delete the link).
  std::error_code ec;
  for (fs::path p = fs::path(normal_directory(dir)); !p.empty(); p = p.parent_path()) {
    if (fs::is_symlink(fs::symlink_status(p, ec)) && !path_exists(p.string()))
      URPE_FAIL(option << " " << dir << ": '" << p.string() << "' is a symbolic link to '"
                       << fs::read_symlink(p, ec).string()
                       << "', which does not exist or is a loop of links; fix or remove the link, or choose another "
                          "directory");
    if (p == p.parent_path()) break;
  }
  // What this command creates (and so may remove again): only paths where nothing was at all.
  std::vector<std::string> absent;
  for (fs::path p = fs::path(normal_directory(dir)); !p.empty() && !entry_exists(p.string()); p = p.parent_path()) {
    absent.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  try {
    make_directories(dir);
  } catch (const Error&) {
    for (const std::string& created : absent) fs::remove(created, ec);  // only when empty
    throw;
  }
  // From here DIR is ours: another command that locked it first makes this one fail without
  // removing anything (the directories it lacked may be the other command's by now).
  lock_ = std::make_unique<RunDirectoryLock>(dir, LockMode::exclusive, option);
  created_ = absent;
  for (const std::string& name : run_output_names())
    if (entry_exists(join_path(dir, name))) old_run_.push_back(name);
  URPE_CHECK(old_run_.empty() || overwrite, option << " " << dir << " already holds a run (" << old_run_[0] << "); "
                                                    << alternative << "choose another directory or pass --overwrite");
  live_claims().push_back(this);
}

bool OutputClaim::covers(const std::string& path, bool strictly_inside) const {
  const std::string target = absolute_normal(path);
  if (target == absolute_) return !strictly_inside;
  return target.size() > absolute_.size() && target.compare(0, absolute_.size(), absolute_) == 0 &&
         (absolute_ == "/" || target[absolute_.size()] == '/');
}

void OutputClaim::move_old_run_aside() {
  if (moved_ || done_ || old_run_.empty()) return;
  // From the first move on, a signal must not end urpe before the old run is back or deleted.
  if (!stop_signals_) stop_signals_ = std::make_unique<StopOnInterrupt>();
  const std::string replaced = join_path(dir_, kReplaced);
  std::error_code ec;
  fs::create_directory(replaced, ec);
  URPE_CHECK(!ec, "--overwrite: cannot create '" << replaced << "': " << ec.message());
  std::vector<std::string> moved;
  for (const std::string& name : old_run_) {
    fs::rename(join_path(dir_, name), join_path(replaced, name), ec);
    if (ec) {
      const std::string reason = ec.message();
      for (const std::string& back : moved) fs::rename(join_path(replaced, back), join_path(dir_, back), ec);
      fs::remove(replaced, ec);
      URPE_FAIL("--overwrite: cannot move '" << join_path(dir_, name) << "' aside: " << reason);
    }
    moved.push_back(name);
  }
  moved_ = true;
}

// The new run's files go, the old run's come back. Runs while an error unwinds, so it must not
// throw: what cannot be moved back stays in DIR/.urpe-replaced (the next command names it).
void OutputClaim::put_old_run_back() {
  std::error_code ec;
  const std::string replaced = join_path(dir_, kReplaced);
  for (const std::string& name : run_output_names()) fs::remove_all(join_path(dir_, name), ec);
  bool restored = true;
  for (const std::string& name : old_run_) {
    fs::rename(join_path(replaced, name), join_path(dir_, name), ec);
    restored = restored && !ec;
  }
  if (restored) fs::remove(replaced, ec);
  moved_ = false;
  // After a stop, say what happened to the old run (an error has its one line, which says no checkpoint
  // was saved; docs/cli.md#output-directories says the old run is then back).
  if (stop_signal() != 0 && restored)
    std::fprintf(stderr, "urpe: %s: stopped before the new run's first checkpoint; the run that was in %s is back "
                         "as it was\n",
                 printable(dir_).c_str(), printable(dir_).c_str());
}

void OutputClaim::done() {
  if (done_) return;
  done_ = true;
  std::error_code ec;
  if (moved_) fs::remove_all(join_path(dir_, kReplaced), ec);
}

OutputClaim::~OutputClaim() {
  auto& claims = live_claims();
  claims.erase(std::remove(claims.begin(), claims.end(), this), claims.end());
  if (!done_) {
    std::error_code ec;
    if (!old_run_.empty() && !moved_) {
      // Nothing was written under DIR: the old run is untouched.
    } else if (holds_checkpoint(dir_)) {  // the new run got far enough to be resumed: keep it
      done();
    } else if (moved_) {
      put_old_run_back();
    } else {
      for (const std::string& name : run_output_names()) fs::remove_all(join_path(dir_, name), ec);
    }
    for (const std::string& created : created_) fs::remove(created, ec);  // only when empty
  }
  stop_signals_.reset();
}

void before_writing(const std::string& path) {
  for (OutputClaim* claim : live_claims())
    if (!claim->moved_ && !claim->done_ && !claim->old_run_.empty() && claim->covers(path, true))
      claim->move_old_run_aside();
}

bool old_run_restorable(const std::string& dir) {
  for (OutputClaim* claim : live_claims())
    if (!claim->done_ && !claim->old_run_.empty() && claim->covers(dir, false)) return true;
  return false;
}

void new_run_saved(const std::string& dir) {
  for (OutputClaim* claim : live_claims())
    if (claim->covers(dir, false)) claim->done();
}

// ---- a resumed run's files until its first checkpoint ----

static const char* kResumeKept = ".urpe-resume";

// What a resumed run may rewrite before it saves its first checkpoint (metrics.csv.torn: the copy
// of a metrics.csv whose torn last row the resume dropped).
static const std::vector<std::string>& resume_rewrites() {
  static const std::vector<std::string> names = {"config.txt", "metrics.csv", "metrics.csv.torn",
                                                 "model.best.safetensors", "results.json", "results.md"};
  return names;
}

ResumeRollback::ResumeRollback(const std::string& dir) : dir_(dir) {
  if (dir.empty()) return;
  const std::string kept = join_path(dir, kResumeKept);
  std::error_code ec;
  fs::remove_all(kept, ec);  // left by a resume that was killed: DIR's files are the newer ones
  fs::create_directory(kept, ec);
  URPE_CHECK(!ec, "--resume: cannot create '" << kept << "': " << ec.message());
  committed_ = false;
  for (const std::string& name : resume_rewrites()) {
    const std::string path = join_path(dir, name);
    if (!entry_exists(path)) {
      absent_.push_back(name);
      continue;
    }
    fs::create_hard_link(path, join_path(kept, name), ec);
    if (ec) fs::copy_file(path, join_path(kept, name), ec);
    if (ec) {
      const std::string reason = ec.message();
      commit();  // nothing rewritten yet: drop what was kept
      URPE_FAIL("--resume: cannot keep a copy of '" << path << "' while the run resumes: " << reason);
    }
    kept_.push_back(name);
  }
}

void ResumeRollback::commit() {
  if (committed_) return;
  committed_ = true;
  std::error_code ec;
  fs::remove_all(join_path(dir_, kResumeKept), ec);
}

// Runs while an error unwinds: it must not throw, and what it cannot put back stays in
// DIR/.urpe-resume.
ResumeRollback::~ResumeRollback() {
  if (committed_) return;
  std::error_code ec;
  const std::string kept = join_path(dir_, kResumeKept);
  bool restored = true;
  for (const std::string& name : kept_) {
    fs::rename(join_path(kept, name), join_path(dir_, name), ec);
    restored = restored && !ec;
  }
  for (const std::string& name : absent_) fs::remove(join_path(dir_, name), ec);
  if (restored) fs::remove_all(kept, ec);
}

// ---- metrics.csv ----

static const char* kMetricsHeader = "step,split,loss,metric,lr,tokens_per_s,seconds";

std::vector<MetricsRow> read_metrics(const std::string& path, std::string* torn_row) {
  std::string text = read_text_file(path);
  if (torn_row) torn_row->clear();
  if (!text.empty() && text.back() != '\n') {
    const size_t start = text.rfind('\n');
    const size_t begin = start == std::string::npos ? 0 : start + 1;
    if (begin > 0) {  // the header itself is never appended: a file of one unfinished line stays an error
      const std::string torn = text.substr(begin);
      if (torn_row) *torn_row = torn;
      else
        std::fprintf(stderr, "urpe: warning: %s ends in a torn row ('%s': being appended, or cut by a crash); it is "
                             "left out\n",
                     printable(path).c_str(), printable(torn.size() > 60 ? torn.substr(0, 60) + "..." : torn).c_str());
      text.erase(begin);
    }
  }
  std::istringstream in(text);
  std::string line;
  std::vector<MetricsRow> rows;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line_number == 1) {
      URPE_CHECK(line == kMetricsHeader, path << " line 1: expected the header '" << kMetricsHeader << "'");
      continue;
    }
    if (line.empty()) continue;
    std::stringstream fields(line);
    MetricsRow r;
    std::string step, loss, metric, lr, tps, secs;
    if (!(std::getline(fields, step, ',') && std::getline(fields, r.split, ',') &&
          std::getline(fields, loss, ',') && std::getline(fields, metric, ',') &&
          std::getline(fields, lr, ',') && std::getline(fields, tps, ',') && std::getline(fields, secs)))
      URPE_FAIL(path << " line " << line_number << ": expected 7 comma-separated fields");
    try {
      r.step = std::stoll(step);
      r.loss = std::stod(loss);
      r.metric = std::stod(metric);
      r.lr = std::stod(lr);
      r.tokens_per_s = std::stod(tps);
      r.seconds = std::stod(secs);
    } catch (const std::exception&) {
      URPE_FAIL(path << " line " << line_number << ": a field is not a number");
    }
    rows.push_back(r);
  }
  return rows;
}

MetricsLog::MetricsLog(const std::string& path, bool append, int64_t keep_until_step) : path_(path) {
  if (path.empty()) return;
  std::string kept = std::string(kMetricsHeader) + "\n";
  if (append && path_exists(path)) {
    std::string torn;
    const std::vector<MetricsRow> rows = read_metrics(path, &torn);
    if (!torn.empty()) {
      const std::string copy = path + ".torn";
      write_file_atomic(copy, read_text_file(path));
      std::fprintf(stderr, "urpe: warning: %s ends in a torn row ('%s': a crash during an append leaves one); the "
                           "resumed run drops it, and the file as it was is kept as %s\n",
                   printable(path).c_str(), printable(torn.size() > 60 ? torn.substr(0, 60) + "..." : torn).c_str(),
                   printable(copy).c_str());
    }
    std::ostringstream text;
    text << kMetricsHeader << "\n";
    for (const MetricsRow& r : rows) {
      if (r.step > keep_until_step) continue;
      char buffer[256];
      std::snprintf(buffer, sizeof buffer, "%lld,%s,%.9g,%.9g,%.9g,%.6g,%.6g\n",
                    static_cast<long long>(r.step), r.split.c_str(), r.loss, r.metric, r.lr,
                    r.tokens_per_s, r.seconds);
      text << buffer;
    }
    kept = text.str();
  }
  write_text_atomic(path, kept);
  file_ = std::fopen(path.c_str(), "a");
  URPE_CHECK(file_ != nullptr, "cannot append to '" << path << "': " << std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(int64_t step, const std::string& split, double loss, double metric,
                       double lr, double tokens_per_s, double seconds) {
  if (!file_) return;
  errno = 0;
  const bool written = std::fprintf(file_, "%lld,%s,%.9g,%.9g,%.9g,%.6g,%.6g\n", static_cast<long long>(step),
                                    split.c_str(), loss, metric, lr, tokens_per_s, seconds) > 0 &&
                       std::fflush(file_) == 0;
  if (!written) {
    const int error = errno != 0 ? errno : ENOSPC;
    std::fclose(file_);  // a row it could not finish stays torn: the next --resume drops it
    file_ = nullptr;
    URPE_FAIL(write_failure(path_, error));
  }
}

// ---- results.json rows ----

json::Value result_to_json(const ResultRow& r) {
  json::Value v = json::Value::object();
  v.set("experiment", r.experiment).set("task", r.task).set("model", r.model).set("pe", r.pe);
  v.set("seed", r.seed).set("metric_name", r.metric_name).set("metric", r.metric);
  v.set("params", r.params).set("steps", r.steps).set("seconds", r.seconds).set("device", r.device);
  return v;
}

ResultRow result_from_json(const json::Value& v) {
  ResultRow r;
  r.experiment = v.at("experiment").as_string();
  r.task = v.at("task").as_string();
  r.model = v.at("model").as_string();
  r.pe = v.at("pe").as_string();
  r.seed = v.at("seed").as_integer();
  r.metric_name = v.at("metric_name").as_string();
  r.metric = v.at("metric").as_number();
  r.params = v.at("params").as_integer();
  r.steps = v.at("steps").as_integer();
  r.seconds = v.at("seconds").as_number();
  r.device = v.at("device").as_string();
  return r;
}

}  // namespace urpe
