// The Chrome trace-event writer (see chrome_trace.h). Written as text, event by event: a step of a
// large model has thousands of ops.
#include "base/profile/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <vector>

#include "base/io/json.h"
#include "base/io/run_dir.h"

namespace urpe::profile {

namespace {

constexpr int kPid = 1;
constexpr int kStreamTrack = 10;  // the CUDA stream's track; the phases are 1 … 4

int phase_track(Phase phase) { return 1 + static_cast<int>(phase); }

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", x);
  return text;
}

struct Event {
  double ts;
  int order;  // ties: ends before begins, so a span that ends where the next begins closes first
  std::string text;
};

std::string begin_end(char ph, const std::string& name, const char* category, double ts, int tid,
                      const std::string& args) {
  std::string e = "{\"name\":" + json::quote(name) + ",\"cat\":\"" + category + "\",\"ph\":\"" + ph + "\",\"ts\":" +
                  number(ts) + ",\"pid\":" + std::to_string(kPid) + ",\"tid\":" + std::to_string(tid);
  if (!args.empty()) e += ",\"args\":" + args;
  return e + "}";
}

std::string metadata(const char* what, int tid, const std::string& args) {
  return std::string("{\"name\":\"") + what + "\",\"ph\":\"M\",\"pid\":" + std::to_string(kPid) +
         (tid > 0 ? ",\"tid\":" + std::to_string(tid) : std::string()) + ",\"args\":" + args + "}";
}

}  // namespace

std::string chrome_trace_json(const Recording& rec) {
  // The innermost scope of every span, for the ops' arguments.
  std::vector<int32_t> scope_of(rec.spans.size(), -1);
  for (size_t k = 0; k < rec.spans.size(); ++k) {
    const int32_t parent = rec.spans[k].parent;
    if (parent < 0) continue;
    scope_of[k] = rec.spans[static_cast<size_t>(parent)].kind == SpanKind::scope ? parent
                                                                                  : scope_of[static_cast<size_t>(parent)];
  }
  std::vector<Event> events;
  for (size_t k = 0; k < rec.spans.size(); ++k) {
    const Span& s = rec.spans[k];
    const std::string& name = rec.name_of(s);
    if (s.kind == SpanKind::step) {  // on every phase's track, around everything of that step
      for (int p = 0; p < kPhaseCount; ++p) {
        const std::string args = "{\"step\":" + std::to_string(s.step) + "}";
        events.push_back({s.begin_us, 1, begin_end('B', name, "step", s.begin_us, 1 + p, args)});
        events.push_back({s.end_us, 0, begin_end('E', name, "step", s.end_us, 1 + p, "")});
      }
      continue;
    }
    const int tid = phase_track(s.phase);
    const char* category = s.kind == SpanKind::scope ? "scope" : "op";
    std::string args;
    if (s.kind == SpanKind::op) {
      const std::string scope = scope_of[k] >= 0 ? rec.name_of(rec.spans[static_cast<size_t>(scope_of[k])]) : "";
      args = "{\"scope\":" + json::quote(scope) + ",\"device\":" + json::quote(s.cuda ? rec.device : "cpu") +
             ",\"flops\":" + json::format_number(s.cost.flops) + ",\"bytes\":" + json::format_number(s.cost.bytes) + "}";
    }
    events.push_back({s.begin_us, 1, begin_end('B', name, category, s.begin_us, tid, args)});
    events.push_back({s.end_us, 0, begin_end('E', name, category, s.end_us, tid, "")});
    if (s.kind == SpanKind::op && s.cuda) {
      const std::string e = "{\"name\":" + json::quote(name) + ",\"cat\":\"cuda\",\"ph\":\"X\",\"ts\":" +
                            number(s.device_begin_us) + ",\"dur\":" + number(std::max(0.0, s.device_us())) +
                            ",\"pid\":" + std::to_string(kPid) + ",\"tid\":" + std::to_string(kStreamTrack) +
                            ",\"args\":{\"phase\":\"" + phase_name(s.phase) + "\"}}";
      events.push_back({s.device_begin_us, 2, e});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return std::tie(a.ts, a.order) < std::tie(b.ts, b.order); });

  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"urpe profile\",\"device\":" +
                    json::quote(rec.device) + "},\"traceEvents\":[\n";
  out += metadata("process_name", 0, "{\"name\":" + json::quote("urpe (" + rec.device + ")") + "}");
  for (int p = 0; p < kPhaseCount; ++p) {
    const int tid = 1 + p;
    out += ",\n" + metadata("thread_name", tid, std::string("{\"name\":\"") + phase_name(static_cast<Phase>(p)) + "\"}");
    out += ",\n" + metadata("thread_sort_index", tid, "{\"sort_index\":" + std::to_string(tid) + "}");
  }
  if (rec.cuda) {
    out += ",\n" + metadata("thread_name", kStreamTrack, "{\"name\":\"cuda stream (op events)\"}");
    out += ",\n" + metadata("thread_sort_index", kStreamTrack, "{\"sort_index\":" + std::to_string(kStreamTrack) + "}");
  }
  for (const Event& e : events) out += ",\n" + e.text;
  out += "\n]}\n";
  return out;
}

void write_chrome_trace(const std::string& path, const Recording& recording) {
  write_file_atomic(path, chrome_trace_json(recording));
}

}  // namespace urpe::profile
