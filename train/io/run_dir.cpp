// Run-directory files: plain text and CSV, written atomically; the claim on an output directory.
#include "train/io/run_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "tensor/error.h"

namespace urpe {

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void make_directories(const std::string& path) {
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

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    URPE_CHECK(out.good(), "cannot write '" << tmp << "': " << std::strerror(errno));
    out << text;
    out.flush();
    URPE_CHECK(out.good(), "writing '" << tmp << "' failed (disk full?)");
  }
  URPE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0,
             "cannot rename '" << tmp << "' to '" << path << "': " << std::strerror(errno));
}

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

OutputClaim::OutputClaim(const std::string& dir, const std::string& option, bool overwrite,
                         const std::string& alternative)
    : dir_(dir) {
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
  const std::string replaced = join_path(dir, kReplaced);
  std::vector<std::string> found;
  for (const std::string& name : run_output_names())
    if (entry_exists(join_path(dir, name))) found.push_back(name);
  if (found.empty()) return;
  URPE_CHECK(overwrite, option << " " << dir << " already holds a run (" << found[0] << "); " << alternative
                               << "choose another directory or pass --overwrite");
  fs::create_directory(replaced, ec);
  URPE_CHECK(!ec, "--overwrite: cannot create '" << replaced << "': " << ec.message());
  for (const std::string& name : found) {
    fs::rename(join_path(dir, name), join_path(replaced, name), ec);
    if (ec) {
      const std::string reason = ec.message();
      done_ = true;  // nothing of the new run exists yet: put back what moved, then report
      for (const std::string& back : moved_) fs::rename(join_path(replaced, back), join_path(dir, back), ec);
      fs::remove(replaced, ec);
      URPE_FAIL("--overwrite: cannot move '" << join_path(dir, name) << "' aside: " << reason);
    }
    moved_.push_back(name);
  }
}

void OutputClaim::done() {
  if (done_) return;
  done_ = true;
  std::error_code ec;
  if (!moved_.empty()) fs::remove_all(join_path(dir_, kReplaced), ec);
}

// Runs while an error unwinds, so it must not throw: failures here leave files in place (the
// next claim then names DIR/.urpe-replaced).
OutputClaim::~OutputClaim() {
  if (done_) return;
  if (holds_checkpoint(dir_)) {  // the new run got far enough to be resumed: keep it
    done();
    return;
  }
  std::error_code ec;
  for (const std::string& name : run_output_names()) fs::remove_all(join_path(dir_, name), ec);
  bool restored = true;
  for (const std::string& name : moved_) {
    fs::rename(join_path(join_path(dir_, kReplaced), name), join_path(dir_, name), ec);
    restored = restored && !ec;
  }
  if (!moved_.empty() && restored) fs::remove(join_path(dir_, kReplaced), ec);
  for (const std::string& created : created_) fs::remove(created, ec);  // only when empty
}

// ---- metrics.csv ----

static const char* kMetricsHeader = "step,split,loss,metric,lr,tokens_per_s,seconds";

std::vector<MetricsRow> read_metrics(const std::string& path) {
  std::istringstream in(read_text_file(path));
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
    std::ostringstream text;
    text << kMetricsHeader << "\n";
    for (const MetricsRow& r : read_metrics(path)) {
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
  std::fprintf(file_, "%lld,%s,%.9g,%.9g,%.9g,%.6g,%.6g\n", static_cast<long long>(step),
               split.c_str(), loss, metric, lr, tokens_per_s, seconds);
  std::fflush(file_);
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
