// Runner of the paper's Table 5 (inference cost of URPE over RPE): one row per (length, pe,
// attention path), timed under NoGrad, then results.md / results.json / plots.
#include "app/repro/table5.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/node.h"
#include "models/encoder.h"
#include "tensor/cuda_backend.h"
#include "tensor/error.h"
#include "tensor/host_allocator.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"
#include "base/plot/charts.h"
#include "app/bench/process_memory.h"
#include "app/repro/paper_values.h"

namespace urpe {

namespace {

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }
// Table 5's memory unit: GB, read here as 2³⁰ bytes (what torch.cuda.max_memory_allocated() / 1024³
// gives; the paper does not say which GB it means, and 10⁹ would make ours 7% larger).
double gb(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

Table5Row run_row(const Table5Options& o, const Device& device, int64_t n, PositionalKind pe,
                  AttentionPath path) {
  Table5Row row;
  row.seq_len = n;
  row.pe = positional_kind_name(pe);
  row.attention = attention_path_name(path);
  if (device.is_cpu()) host::empty_cache();  // memory freed by earlier rows goes back first
  const bool rss = device.is_cpu() && reset_peak_resident();

  EncoderConfig c;
  c.vocab = o.vocab;
  c.seq_len = n;
  c.layers = o.layers;
  c.d_model = o.d_model;
  c.heads = o.heads;
  c.d_ff = o.d_ff;
  c.num_classes = n;  // position identification's head: one class per position
  c.pe = pe;
  c.attention = path;
  c.init_std = 0.02f;
  const TransformerEncoder model(c, 1, device);  // the same seed for every row
  row.params = model.parameters().count();
  Rng token_rng(2);
  std::vector<int32_t> ids(static_cast<size_t>(o.batch * n));
  for (int32_t& id : ids) id = static_cast<int32_t>(token_rng.below(o.vocab));
  const Tensor tokens = Tensor::from_vector(ids, {o.batch, n}, device);

  autograd::NoGrad no_grad;
  auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.context());
  };
  model.forward(tokens, false, nullptr);  // warm-up: caches, lazy initialisation
  sync();
  if (device.is_cuda()) cuda::reset_peak(device.context());
  else host::reset_peak();
  std::vector<double> times, cpu_times;
  for (int r = 0; r < o.repeats; ++r) {
    const double cpu_start = process_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    const Tensor logits = model.forward(tokens, false, nullptr);
    sync();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    cpu_times.push_back((process_cpu_seconds() - cpu_start) * 1000.0);
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  row.median_cpu_ms = cpu_times[cpu_times.size() / 2];
  row.median_ms = times[times.size() / 2];
  row.min_ms = times.front();
  row.runs = static_cast<int64_t>(times.size());
  row.peak_bytes = static_cast<double>(device.is_cuda() ? cuda::peak_bytes(device.context())
                                                        : host::peak_bytes());
  if (rss) row.peak_rss_bytes = peak_resident_bytes();
  return row;
}

const Table5Row& find_row(const std::vector<Table5Row>& rows, int64_t n, const std::string& pe,
                          const std::string& attention) {
  for (const Table5Row& r : rows)
    if (r.seq_len == n && r.pe == pe && r.attention == attention) return r;
  URPE_FAIL("table5: no row for n = " << n << ", " << pe << ", " << attention);
}

std::string markdown(const Table5Options& o, const std::vector<Table5Row>& rows,
                     const std::string& machine, const std::string& load_before,
                     const std::string& load_after, double seconds, int64_t params) {
  std::ostringstream md;
  const bool cpu = o.device == "cpu";
  md << "# Table 5: the inference cost of URPE over RPE\n\n"
     << "Model: post-LN encoder, " << o.layers << " layers, d = " << o.d_model << ", " << o.heads
     << " heads, d_ff = " << o.d_ff << ", batch " << o.batch << " (" << params
     << " parameters with URPE at the longest n); unique (Toeplitz) B and C. Forward only, under "
        "NoGrad; median of "
     << o.repeats << " timed runs after one warm-up.\n\n"
     << "Device: " << machine << ". Load averages (1, 5, 15 min): " << load_before
     << " at the start, " << load_after << " at the end. Wall time " << fixed(seconds, 1) << " s.\n\n";
  md << "| n | attention | RPE ms | URPE ms | URPE/RPE time |";
  if (cpu) md << " RPE CPU ms | URPE CPU ms | URPE/RPE CPU |";
  md << " RPE peak MiB | URPE peak MiB | URPE/RPE memory |";
  if (cpu) md << " RPE peak RSS MiB | URPE peak RSS MiB |";
  md << " paper (V100) |\n|---|---|---|---|---|";
  if (cpu) md << "---|---|---|";
  md << "---|---|---|";
  if (cpu) md << "---|---|";
  md << "---|\n";
  for (int64_t n : o.lengths) {
    for (const char* attention : {"materialized", "fused"}) {
      const Table5Row& rpe = find_row(rows, n, "rpe", attention);
      const Table5Row& urpe = find_row(rows, n, "urpe", attention);
      md << "| " << n << " | " << attention << " | " << fixed(rpe.median_ms, 1) << " | "
         << fixed(urpe.median_ms, 1) << " | " << fixed(urpe.median_ms / rpe.median_ms, 3) << " | ";
      if (cpu)
        md << fixed(rpe.median_cpu_ms, 1) << " | " << fixed(urpe.median_cpu_ms, 1) << " | "
           << fixed(urpe.median_cpu_ms / rpe.median_cpu_ms, 3) << " | ";
      md << fixed(mib(rpe.peak_bytes), 1) << " | " << fixed(mib(urpe.peak_bytes), 1) << " | "
         << fixed(urpe.peak_bytes / rpe.peak_bytes, 3) << " |";
      if (cpu) {
        auto rss = [](const Table5Row& r) { return r.peak_rss_bytes < 0 ? std::string("n/a") : fixed(mib(r.peak_rss_bytes), 1); };
        md << " " << rss(rpe) << " | " << rss(urpe) << " |";
      }
      // The paper measured its eager code, i.e. the materialised path; its values go on that row.
      const PaperValues::Table5Row* paper = paper_table5_row(n);
      if (paper != nullptr && std::string(attention) == "materialized") {
        const double rpe_ms = milliseconds_from_log2(paper->rpe_time), urpe_ms = milliseconds_from_log2(paper->urpe_time);
        md << " time " << fixed(paper->rpe_time, 2) << " → " << fixed(paper->urpe_time, 2) << " log₂ ms = "
           << fixed(rpe_ms, 1) << " → " << fixed(urpe_ms, 1) << " ms (" << fixed(urpe_ms / rpe_ms, 3) << "), memory "
           << fixed(paper->rpe_memory, 2) << " → " << fixed(paper->urpe_memory, 2) << " GB ("
           << fixed(paper->urpe_memory / paper->rpe_memory, 3) << ") |\n";
      }
      else
        md << (std::string(attention) == "materialized" ? " no value at this n |\n" : " — |\n");
    }
  }
  md << "\nms: wall-clock milliseconds of one forward; CPU ms: the process's CPU time (user + "
        "system, all threads) over the same forward, which a busy shared machine inflates much "
        "less than wall time.";
  md << "\nPeak MiB: the " << (cpu ? "host" : "CUDA caching")
     << " allocator's peak of tensor storage during the timed forwards, parameters included"
     << (cpu ? "; peak RSS: the process's resident-set high-water mark over the row (model "
               "construction included), reset per row through /proc/self/clear_refs"
             : "")
     << ".\n\nPaper (V100): RPE → URPE as printed in the paper's Table 5 (§5.4: inference runtime and peak "
        "memory of its eager PyTorch code, batch 32, on a 16 GB V100), runtime in "
     << PaperValues::table5_time_units << " as the caption gives it and in ms (2^value), memory in "
     << PaperValues::table5_memory_units << "; URPE/RPE in brackets. Shown on the materialised rows: the "
        "paper's code materialises the attention as well.\n"
     << (o.tf32 ? "TF32 tensor-core GEMMs on (`--tf32`).\n" : "TF32 off (full FP32 GEMMs).\n");
  // The same rows in the paper's units.
  md << "\n## In the paper's units (Table 5: log₂ ms and GB)\n\n"
     << "Ours: the materialised attention, median ms; GB = 2³⁰ bytes of the " << (cpu ? "host" : "CUDA caching")
     << " allocator's peak.\n\n"
     << "| n | RPE log₂ ms: paper / ours | URPE log₂ ms: paper / ours | RPE ms: paper / ours | URPE ms: paper / ours "
        "| RPE GB: paper / ours | URPE GB: paper / ours |\n|---|---|---|---|---|---|---|\n";
  for (int64_t n : o.lengths) {
    const Table5Row& rpe = find_row(rows, n, "rpe", "materialized");
    const Table5Row& urpe = find_row(rows, n, "urpe", "materialized");
    const PaperValues::Table5Row* paper = paper_table5_row(n);
    auto pair = [&](double paper_value, double ours, int digits) {
      return (paper ? fixed(paper_value, digits) : std::string("–")) + " / " + fixed(ours, digits);
    };
    md << "| " << n << " | " << pair(paper ? paper->rpe_time : 0, std::log2(rpe.median_ms), 2) << " | "
       << pair(paper ? paper->urpe_time : 0, std::log2(urpe.median_ms), 2) << " | "
       << pair(paper ? milliseconds_from_log2(paper->rpe_time) : 0, rpe.median_ms, 1) << " | "
       << pair(paper ? milliseconds_from_log2(paper->urpe_time) : 0, urpe.median_ms, 1) << " | "
       << pair(paper ? paper->rpe_memory : 0, gb(rpe.peak_bytes), 2) << " | "
       << pair(paper ? paper->urpe_memory : 0, gb(urpe.peak_bytes), 2) << " |\n";
  }
  std::vector<PaperComparison> comparisons;
  for (int64_t n : o.lengths) {
    const PaperValues::Table5Row* paper = paper_table5_row(n);
    for (const char* attention : {"materialized", "fused"}) {
      const Table5Row& rpe = find_row(rows, n, "rpe", attention);
      const Table5Row& urpe = find_row(rows, n, "urpe", attention);
      PaperComparison log_time, time, memory;
      log_time.quantity = "forward time, n = " + std::to_string(n) + " (log₂ ms; ours: " + attention + ")";
      time.quantity = "forward time, n = " + std::to_string(n) + " (ms; ours: " + attention + ", median)";
      memory.quantity = "peak memory, n = " + std::to_string(n) + " (GB; ours: " + attention + ")";
      if (paper != nullptr) {
        log_time.paper_base = paper->rpe_time;
        log_time.paper_urpe = paper->urpe_time;
        time.paper_base = milliseconds_from_log2(paper->rpe_time);
        time.paper_urpe = milliseconds_from_log2(paper->urpe_time);
        memory.paper_base = paper->rpe_memory;
        memory.paper_urpe = paper->urpe_memory;
      } else {
        log_time.paper_note = time.paper_note = memory.paper_note = "no value at this n (the paper has 128, 256, 512)";
      }
      log_time.relative_change = false;  // a difference of logarithms is a ratio: see the ms row
      log_time.ours_base = std::log2(rpe.median_ms);
      log_time.ours_urpe = std::log2(urpe.median_ms);
      time.ours_base = rpe.median_ms;
      time.ours_urpe = urpe.median_ms;
      memory.ours_base = gb(rpe.peak_bytes);
      memory.ours_urpe = gb(urpe.peak_bytes);
      log_time.decimals = memory.decimals = 2;
      time.decimals = 1;
      comparisons.push_back(log_time);
      comparisons.push_back(time);
      comparisons.push_back(memory);
    }
  }
  md << paper_comparison_markdown(comparisons, "RPE",
                                  "this run (" + machine + ", batch " + std::to_string(o.batch) + ", " +
                                      std::to_string(o.layers) + " layers).");
  return md.str();
}

void plots(const Table5Options& o, const std::vector<Table5Row>& rows, const std::string& dir) {
  plot::LineChartSpec time, memory;
  time.title = "Table 5: forward time (batch " + std::to_string(o.batch) + ", " + o.device + ")";
  time.x_label = "sequence length n";
  time.y_label = "median ms per forward";
  memory.title = "Table 5: peak memory (" + std::string(o.device == "cpu" ? "host" : "CUDA") + " allocator)";
  memory.x_label = "sequence length n";
  memory.y_label = "MiB";
  for (const char* attention : {"materialized", "fused"})
    for (const char* pe : {"rpe", "urpe"}) {
      plot::Series t{std::string(pe == std::string("rpe") ? "RPE" : "URPE") + ", " + attention, {}, {}};
      plot::Series m = t;
      for (int64_t n : o.lengths) {
        const Table5Row& r = find_row(rows, n, pe, attention);
        t.x.push_back(static_cast<double>(n));
        t.y.push_back(r.median_ms);
        m.x.push_back(static_cast<double>(n));
        m.y.push_back(mib(r.peak_bytes));
      }
      time.series.push_back(t);
      memory.series.push_back(m);
    }
  make_directories(dir);
  plot::line_chart(join_path(dir, "time.png"), time);
  plot::line_chart(join_path(dir, "memory.png"), memory);
}

}  // namespace

std::vector<int64_t> parse_lengths(const std::string& text) {
  std::vector<int64_t> lengths;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    URPE_CHECK(!item.empty() && end != nullptr && *end == '\0' && value >= 2 && value <= 65536,
               "option --lengths: expected comma-separated sequence lengths between 2 and 65536 "
               "(like 128,256,512), got '" << item << "' in '" << text << "'");
    URPE_CHECK(std::find(lengths.begin(), lengths.end(), value) == lengths.end(),
               "option --lengths: " << value << " is given twice in '" << text << "'");
    lengths.push_back(value);
  }
  URPE_CHECK(!lengths.empty() && text.back() != ',',
             "option --lengths: expected comma-separated sequence lengths (like 128,256,512), got '"
                 << text << "'");
  return lengths;
}

std::vector<Table5Row> run_table5(const Table5Options& o, const std::string& out_dir) {
  URPE_CHECK(!o.lengths.empty(), "table5: no sequence lengths");
  URPE_CHECK(o.batch >= 1 && o.layers >= 1 && o.repeats >= 1,
             "table5: batch, layers and repeats must be at least 1");
  const Device device = parse_device(o.device);
  URPE_CHECK(!o.tf32 || device.is_cuda(), "urpe repro table5: --tf32 needs a CUDA device (--device cuda), got "
                                              << o.device);
  if (device.is_cuda()) cuda::set_tf32(device.context(), o.tf32);
  make_directories(out_dir);
  const std::string machine = machine_description(device);
  const std::string load_before = load_averages();
  std::printf("urpe repro table5: %s, batch %lld, %lld layers, d = %lld, %lld heads; load %s\n",
              machine.c_str(), static_cast<long long>(o.batch), static_cast<long long>(o.layers),
              static_cast<long long>(o.d_model), static_cast<long long>(o.heads), load_before.c_str());
  const auto start = std::chrono::steady_clock::now();
  std::vector<Table5Row> rows;
  const size_t total = o.lengths.size() * 4;
  for (int64_t n : o.lengths)
    for (AttentionPath path : {AttentionPath::materialized, AttentionPath::fused})
      for (PositionalKind pe : {PositionalKind::rpe, PositionalKind::urpe}) {
        rows.push_back(run_row(o, device, n, pe, path));
        const Table5Row& r = rows.back();
        std::printf("[%zu/%zu] n = %-5lld %-4s %-12s median %9.1f ms (CPU %9.1f ms)  peak %9.1f MiB",
                    rows.size(), total, static_cast<long long>(n), r.pe.c_str(),
                    r.attention.c_str(), r.median_ms, r.median_cpu_ms, mib(r.peak_bytes));
        if (r.peak_rss_bytes >= 0) std::printf("  peak RSS %9.1f MiB", mib(r.peak_rss_bytes));
        std::printf("\n");
        std::fflush(stdout);
      }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const int64_t params = find_row(rows, o.lengths.back(), "urpe", "fused").params;

  json::Value list = json::Value::array();
  for (const Table5Row& r : rows) {
    json::Value row = json::Value::object();
    row.set("experiment", "table5").set("seq_len", r.seq_len).set("pe", r.pe)
        .set("attention", r.attention).set("median_ms", r.median_ms).set("min_ms", r.min_ms)
        .set("median_cpu_ms", r.median_cpu_ms)
        .set("runs", r.runs).set("peak_bytes", r.peak_bytes)
        .set("peak_rss_bytes", r.peak_rss_bytes < 0 ? json::Value() : json::Value(r.peak_rss_bytes))
        .set("batch", o.batch).set("layers", o.layers).set("d_model", o.d_model)
        .set("heads", o.heads).set("device", o.device).set("machine", machine).set("tf32", o.tf32);
    // The paper's value for this n and positional encoding (its eager, materialised code), and
    // its URPE/RPE ratio; null where the paper has no value at this n.
    const PaperValues::Table5Row* paper = paper_table5_row(r.seq_len);
    json::Value p;
    if (paper != nullptr) {
      const bool is_urpe = r.pe == "urpe";
      p = json::Value::object();
      const double time = is_urpe ? paper->urpe_time : paper->rpe_time;
      p.set("time_log2_ms", time)
          .set("time_ms", milliseconds_from_log2(time))
          .set("memory_gb", is_urpe ? paper->urpe_memory : paper->rpe_memory)
          .set("urpe_over_rpe_time", milliseconds_from_log2(paper->urpe_time) / milliseconds_from_log2(paper->rpe_time))
          .set("urpe_over_rpe_memory", paper->urpe_memory / paper->rpe_memory)
          .set("source", "Table 5 of the paper (§5.4; runtime in log2 ms, memory in GB; V100 16 GB, batch 32)");
    }
    row.set("paper", p);
    list.push(row);
  }
  write_text_atomic(join_path(out_dir, "results.json"), list.dump(2) + "\n");
  write_text_atomic(join_path(out_dir, "results.md"),
                    markdown(o, rows, machine, load_before, load_averages(), seconds, params));
  plots(o, rows, join_path(out_dir, "plots"));
  return rows;
}

}  // namespace urpe
