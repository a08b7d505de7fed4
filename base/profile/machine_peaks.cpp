// The peaks cache (see machine_peaks.h).
#include "base/profile/machine_peaks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tensor/error.h"
#include "base/io/json.h"
#include "base/io/run_dir.h"

namespace urpe::profile {

namespace {

constexpr const char* kFormat = "urpe machine peaks v1";

json::Value to_json(const MachinePeaks& p) {
  json::Value gemms = json::Value::array();
  for (const GemmRate& g : p.gemms)
    gemms.push(json::Value::object()
                   .set("label", g.label)
                   .set("batch", g.batch)
                   .set("m", g.m)
                   .set("n", g.n)
                   .set("k", g.k)
                   .set("gflops", g.gflops));
  return json::Value::object()
      .set("key", p.key)
      .set("device", p.device)
      .set("measured", p.measured)
      .set("gemm_gflops", p.gemm_gflops)
      .set("bandwidth_gbs", p.bandwidth_gbs)
      .set("copy_gbs", p.copy_gbs)
      .set("triad_gbs", p.triad_gbs)
      .set("tf32_gflops", p.tf32_gflops)
      .set("bf16_gflops", p.bf16_gflops)
      .set("smoke", p.smoke)
      .set("gemms", gemms);
}

MachinePeaks from_json(const json::Value& v) {
  MachinePeaks p;
  p.key = v.at("key").as_string();
  p.device = v.at("device").as_string();
  p.measured = v.at("measured").as_string();
  p.gemm_gflops = v.at("gemm_gflops").as_number();
  p.bandwidth_gbs = v.at("bandwidth_gbs").as_number();
  p.copy_gbs = v.at("copy_gbs").as_number();
  p.triad_gbs = v.at("triad_gbs").as_number();
  p.tf32_gflops = v.at("tf32_gflops").as_number();
  // Entries written before the BF16 rate was cached have none: 0, "not measured".
  if (v.contains("bf16_gflops")) p.bf16_gflops = v.at("bf16_gflops").as_number();
  p.smoke = v.at("smoke").as_bool();
  for (const json::Value& g : v.at("gemms").items())
    p.gemms.push_back({g.at("label").as_string(), g.at("batch").as_integer(), g.at("m").as_integer(),
                       g.at("n").as_integer(), g.at("k").as_integer(), g.at("gflops").as_number()});
  URPE_CHECK(p.gemm_gflops > 0 && p.bandwidth_gbs > 0,
             "the entry of '" << p.key << "' has no positive compute or bandwidth ceiling");
  return p;
}

// Every entry of the cache file; an absent file is an empty cache.
std::vector<MachinePeaks> read_cache(const std::string& path) {
  std::vector<MachinePeaks> entries;
  if (!path_exists(path)) return entries;
  try {
    const json::Value doc = json::read_file(path);
    URPE_CHECK(doc.is_object() && doc.contains("format") && doc.at("format").is_string() &&
                   doc.at("format").as_string() == kFormat,
               "expected an object with \"format\": \"" << kFormat << "\"");
    for (const json::Value& e : doc.at("machines").items()) entries.push_back(from_json(e));
  } catch (const Error& e) {
    URPE_FAIL("peaks cache " << path << ": " << e.what()
                             << " (delete the file, or point URPE_PEAKS_CACHE elsewhere, and run 'urpe bench peaks')");
  }
  return entries;
}

}  // namespace

std::string peaks_cache_path() {
  if (const char* path = std::getenv("URPE_PEAKS_CACHE"); path && *path) return path;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return join_path(join_path(xdg, "urpe"), "peaks.json");
  if (const char* home = std::getenv("HOME"); home && *home)
    return join_path(join_path(join_path(home, ".cache"), "urpe"), "peaks.json");
  return "urpe_peaks.json";  // no home directory: the working directory
}

std::optional<MachinePeaks> cached_peaks(const std::string& key, const std::string& path) {
  for (MachinePeaks& p : read_cache(path))
    if (p.key == key) return std::move(p);
  return std::nullopt;
}

void store_peaks(const MachinePeaks& peaks, const std::string& path) {
  std::vector<MachinePeaks> entries = read_cache(path);
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const MachinePeaks& p) { return p.key == peaks.key; }),
                entries.end());
  entries.push_back(peaks);
  json::Value machines = json::Value::array();
  for (const MachinePeaks& p : entries) machines.push(to_json(p));
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) make_directories(path.substr(0, slash));
  json::write_file(path, json::Value::object().set("format", kFormat).set("machines", machines));
}

double roofline_bound_ms(const MachinePeaks& peaks, double flops, double bytes) {
  const double compute_s = peaks.gemm_gflops > 0 ? flops / (peaks.gemm_gflops * 1e9) : 0.0;
  const double memory_s = peaks.bandwidth_gbs > 0 ? bytes / (peaks.bandwidth_gbs * 1e9) : 0.0;
  return 1e3 * std::max(compute_s, memory_s);
}

double gemm_ceiling_gflops(const MachinePeaks& peaks, GemmMath math, std::string* source) {
  if (math == GemmMath::bf16 && peaks.bf16_gflops > 0) {
    if (source) *source = "BF16 GEMM rate";
    return peaks.bf16_gflops;
  }
  if (math != GemmMath::fp32 && peaks.tf32_gflops > 0) {
    if (source) *source = math == GemmMath::tf32 ? "TF32 GEMM rate" : "TF32 GEMM rate (no BF16 rate measured)";
    return peaks.tf32_gflops;
  }
  if (source)
    *source = math == GemmMath::fp32 ? "sgemm rate" : std::string("sgemm rate (no ") + gemm_math_name(math) + " rate measured)";
  return peaks.gemm_gflops;
}

double roofline_bound_ms(const MachinePeaks& peaks, const Cost& cost) {
  const double fp32_flops = std::max(0.0, cost.flops - cost.tf32_flops - cost.bf16_flops);
  double compute_s = 0;
  const std::pair<double, GemmMath> parts[] = {
      {fp32_flops, GemmMath::fp32}, {cost.tf32_flops, GemmMath::tf32}, {cost.bf16_flops, GemmMath::bf16}};
  for (const auto& [flops, math] : parts) {
    const double ceiling = gemm_ceiling_gflops(peaks, math);
    if (flops > 0 && ceiling > 0) compute_s += flops / (ceiling * 1e9);
  }
  const double memory_s = peaks.bandwidth_gbs > 0 ? cost.bytes / (peaks.bandwidth_gbs * 1e9) : 0.0;
  return 1e3 * std::max(compute_s, memory_s);
}

std::string describe(const MachinePeaks& p) {
  char line[256];
  if (p.triad_gbs > 0)
    std::snprintf(line, sizeof line, "sgemm %.1f GFLOP/s, bandwidth %.1f GB/s (copy %.1f, triad %.1f), measured %s",
                  p.gemm_gflops, p.bandwidth_gbs, p.copy_gbs, p.triad_gbs, p.measured.c_str());
  else
    std::snprintf(line, sizeof line, "sgemm %.1f GFLOP/s, bandwidth %.1f GB/s (copy), measured %s", p.gemm_gflops,
                  p.bandwidth_gbs, p.measured.c_str());
  std::string tensor_cores;
  for (const auto& [rate, name] : {std::pair<double, const char*>{p.tf32_gflops, "TF32"}, {p.bf16_gflops, "BF16→FP32"}})
    if (rate > 0) {
      char part[64];
      std::snprintf(part, sizeof part, "%s %.1f GFLOP/s", name, rate);
      tensor_cores += (tensor_cores.empty() ? "" : ", ") + std::string(part);
    }
  if (!tensor_cores.empty()) tensor_cores = "; tensor-core GEMMs " + tensor_cores;
  return std::string(line) + tensor_cores + (p.smoke ? " at smoke sizes (not the machine's limits: run 'urpe bench peaks')" : "");
}

}  // namespace urpe::profile
