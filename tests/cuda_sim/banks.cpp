// CUDA simulator: the shared-memory bank model (URPE_SIM_BANKS, off by default). A GPU serves a
// warp's shared-memory instruction in wavefronts; lanes that hit different 4-byte words of one bank
// cost one wavefront each (a bank conflict), and ncu counts the wavefronts beyond the ideal as
// l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}. The simulator runs a warp's lanes
// one after another, so the model first rebuilds the warp-level instructions: every shared access
// (the access hooks pass the program counter of the instrumented load or store) is filed under
//   (warp, the access site's PC, the warp's epoch and collective count, k)
// where k counts the lane's earlier executions of that site since the last __syncthreads() or
// warp collective. The lanes of one warp that run the same site for the k-th time in the same
// interval form one request. This assumes warp-convergent code, as urpe's tile loops are. Where
// lanes diverge it is an approximation: lanes that skip a site (a partial mask) just leave the
// request, as on a GPU, but when lanes skip it in different passes of a loop the host compiler
// kept rolled (nvcc unrolls it into one instruction per pass), the k-th runs of two lanes are
// different passes and are filed together (docs/cuda.md, the limits); and lanes that a GPU
// would issue in separate passes of a divergent branch are merged here.
// The hardware model (NVIDIA, CUDA C++ Programming Guide, "Shared Memory" in the compute
// capability 5.x and later sections, and "Shared Memory" in the performance guidelines): 32 banks,
// successive 4-byte words in successive banks; lanes reading one word share it (broadcast), two
// different words in one bank are serialized. Per request:
//   accesses of 4 bytes or less: one phase of 32 lanes; 8 bytes: two phases (half-warps);
//   16 bytes: four (quarter-warps); a phase with no active lane is skipped;
//   wavefronts of a phase = max over banks of the distinct words the phase's lanes touch there;
//   ideal = Σ over active phases of max(1, ⌈distinct words / 32⌉) (1 per phase for ≤ 16 bytes).
// A cp.async (ops/cp_async.cuh) is counted as a write of its size when it is issued, and reported
// apart from the stores (another instruction, LDGSTS); its landing at the wait is not counted again.
// nvcc stores a float2 or float4 with one instruction, which the host compiler may split into
// 4-byte accesses: such pieces are joined back (bank_access).
// Limits: the widths are those of the host compiler's instrumented accesses (joined as above),
// not nvcc's SASS; arrays sit in the simulator's arena, not at nvcc's offsets, which
// shifts every address of one array by a multiple of 16 bytes and changes no request that stays
// inside one array.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "sim_state.h"

namespace urpe_sim {

namespace {

constexpr int kWarp = 32;
constexpr int kBanks = 32;

struct SiteKey {
  const void* pc;
  bool write, async;
  int bytes;
  bool operator<(const SiteKey& o) const {
    return std::tie(pc, write, async, bytes) < std::tie(o.pc, o.write, o.async, o.bytes);
  }
};
struct SiteCounts {
  uint64_t accesses = 0, requests = 0, wavefronts = 0, ideal = 0;
};
using SiteMap = std::map<SiteKey, SiteCounts>;

// A request in the making: the lanes that have joined it so far and their byte offsets.
struct RequestKey {
  const void* pc;
  uint64_t sync;
  uint32_t warp, k;
  bool operator==(const RequestKey& o) const {
    return pc == o.pc && sync == o.sync && warp == o.warp && k == o.k;
  }
};
struct RequestHash {
  size_t operator()(const RequestKey& r) const {
    uint64_t h = reinterpret_cast<uintptr_t>(r.pc) * 0x9e3779b97f4a7c15ull;
    h ^= (r.sync + 0x632be59bd9b4e019ull * r.warp + (uint64_t(r.k) << 40)) * 0xbf58476d1ce4e5b9ull;
    return size_t(h ^ (h >> 31));
  }
};
struct Request {
  bool write = false, async = false;
  int bytes = 0;
  uint32_t mask = 0;
  uint32_t offset[kWarp] = {};
};

// One thread's access not yet filed: it may still be the first piece of a vector access.
struct Pending {
  bool active = false;
  uint32_t offset = 0, pieces = 0, piece_bytes = 0;
  const void* pc[4] = {};  // each piece's site (only pc[0] names a fused access)
  uint32_t epoch = 0;
  uint64_t sync = 0;
};

// How often a thread ran each site in its current interval (collective count `sync`).
struct Seen {
  uint32_t epoch = 0;
  uint64_t sync = 0;
  std::vector<std::pair<const void*, uint32_t>> sites;
};
// Per thread: that, kept apart for loads, stores and cp.async (each files its accesses in order,
// but a held-back store may be filed after a later load), and its pending load and store.
struct LaneSites {
  Seen seen[3];        // [load, store, cp.async]
  Pending pending[2];  // [write]
};

std::vector<LaneSites> g_lanes;
std::unordered_map<RequestKey, Request, RequestHash> g_open;
SiteMap g_launch;                          // this launch's sites
std::map<std::string, SiteMap> g_kernels;  // every counted launch's, by kernel

uint32_t occurrence(Seen& seen, const void* pc, uint32_t epoch, uint64_t sync) {
  if (seen.epoch != epoch || seen.sync != sync) {
    seen.epoch = epoch;
    seen.sync = sync;
    seen.sites.clear();
  }
  for (auto& [site, count] : seen.sites)
    if (site == pc) return count++;
  seen.sites.emplace_back(pc, 1);
  return 0;
}

// Wavefronts and the ideal of one complete request (the model in the header).
void count(const Request& r, SiteCounts& site) {
  const int width = r.bytes <= 4 ? 4 : r.bytes;
  const int lanes_per_phase = width <= 4 ? 32 : width <= 8 ? 16 : 8;
  std::vector<uint32_t> words;
  for (int phase = 0; phase < kWarp / lanes_per_phase; ++phase) {
    words.clear();
    for (int lane = phase * lanes_per_phase; lane < (phase + 1) * lanes_per_phase; ++lane) {
      if (!(r.mask >> lane & 1u)) continue;
      ++site.accesses;
      const uint32_t first = r.offset[lane] / 4, last = (r.offset[lane] + uint32_t(r.bytes) - 1) / 4;
      for (uint32_t w = first; w <= last; ++w) words.push_back(w);
    }
    if (words.empty()) continue;
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    int per_bank[kBanks] = {};
    for (uint32_t w : words) ++per_bank[w % kBanks];
    site.wavefronts += uint64_t(*std::max_element(per_bank, per_bank + kBanks));
    site.ideal += std::max<uint64_t>(1, (words.size() + kBanks - 1) / kBanks);
  }
  ++site.requests;
}

// ---- naming a site: addr2line on the object that holds the PC ----

std::string strip_root(std::string file) {
#ifdef URPE_SIM_SOURCE_ROOT
  const std::string root = URPE_SIM_SOURCE_ROOT;
  if (file.compare(0, root.size(), root) == 0) file = file.substr(root.size());
#endif
  return file;
}

// The innermost source line and the outermost caller it was inlined into, e.g.
// "ops/urpe_flash_tc_tiles.cuh:138 (in ops/urpe_flash_tc_forward_cuda.cu:213)"; a raw
// "object+0xOFFSET" when addr2line is missing or the object has no line table.
std::string symbolise(const void* pc) {
  static std::map<const void*, std::string> cache;
  auto hit = cache.find(pc);
  if (hit != cache.end()) return hit->second;
  Dl_info info{};
  std::ostringstream raw;
  // The PC is the return address of the hook's call: one byte back lies inside the call.
  const uintptr_t at = reinterpret_cast<uintptr_t>(pc) - 1;
  if (!dladdr(pc, &info) || !info.dli_fname) {
    raw << "0x" << std::hex << at;
    return cache[pc] = raw.str();
  }
  const uintptr_t offset = at - reinterpret_cast<uintptr_t>(info.dli_fbase);
  raw << strip_root(info.dli_fname) << "+0x" << std::hex << offset;
  std::string name = raw.str();
  char command[4096];
  std::snprintf(command, sizeof command, "addr2line -i -e '%s' 0x%lx 2>/dev/null", info.dli_fname,
                (unsigned long)offset);
  if (FILE* pipe = popen(command, "r")) {
    std::vector<std::string> lines;
    char line[2048];
    while (std::fgets(line, sizeof line, pipe)) {
      std::string text = line;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      const size_t discriminator = text.find(" (discriminator");
      if (discriminator != std::string::npos) text.resize(discriminator);
      if (!text.empty() && text.compare(0, 2, "??") != 0) lines.push_back(strip_root(text));
    }
    pclose(pipe);
    if (!lines.empty()) {
      name = lines.front();
      if (lines.size() > 1 && lines.back() != lines.front()) name += " (in " + lines.back() + ")";
    }
  }
  return cache[pc] = name;
}

const char* kind_of(const SiteKey& key) { return key.async ? "cp.async" : key.write ? "store" : "load"; }

}  // namespace

void bank_begin_block(int threads) {
  g_lanes.assign(size_t(threads), LaneSites{});
  g_open.clear();
}

namespace {

// Files one lane's access into its warp's request.
void file(int linear, uint32_t offset, size_t bytes, bool write, const void* pc, bool async, uint32_t epoch,
          uint64_t sync) {
  Seen& seen = g_lanes[size_t(linear)].seen[async ? 2 : write ? 1 : 0];
  const RequestKey key{pc, sync, uint32_t(linear / kWarp), occurrence(seen, pc, epoch, sync)};
  Request& r = g_open[key];
  const int lane = linear % kWarp;
  r.write = write;
  r.async = async;
  r.bytes = std::max(r.bytes, int(bytes));
  r.mask |= 1u << lane;
  r.offset[lane] = offset;
}

// A pending access filed: one vector access when its pieces make a naturally aligned 8 or 16
// bytes, else each piece at its own site.
void file_pending(int linear, bool write) {
  Pending& p = g_lanes[size_t(linear)].pending[write];
  if (!p.active) return;
  p.active = false;
  const uint32_t total = p.pieces * p.piece_bytes;
  if (p.pieces == 1 || ((total == 8 || total == 16) && p.offset % total == 0)) {
    file(linear, p.offset, total, write, p.pc[0], false, p.epoch, p.sync);
    return;
  }
  for (uint32_t k = 0; k < p.pieces; ++k)
    file(linear, p.offset + k * p.piece_bytes, p.piece_bytes, write, p.pc[k], false, p.epoch, p.sync);
}

}  // namespace

// nvcc stores a float2 or float4 with one 8- or 16-byte instruction (STS.64, STS.128), but the
// host compiler may split the copy into 4-byte accesses at neighbouring call sites. So a thread's
// access is held back: the next one of the same direction that continues it (the next bytes, the
// same piece size, a site a little further on in the code, no collective or barrier between,
// within 16 bytes) joins it, and the whole is filed as one access if it makes an aligned 8 or 16
// bytes. A loop's next pass (the same site again) or two separate scalar stores through other
// arrays in between never join. Two neighbouring scalar accesses that nvcc would keep apart are
// joined (a limit, for code that stores adjacent floats one by one).
void bank_access(const char* p, size_t bytes, bool write, const void* pc, bool async) {
  const int linear = g_access.thread->linear;
  const uint32_t offset = uint32_t(p - g_shared_base), epoch = g_access.epoch;
  const uint64_t sync = g_access.thread->sync;
  if (async) {
    file(linear, offset, bytes, write, pc, true, epoch, sync);
    return;
  }
  Pending& pending = g_lanes[size_t(linear)].pending[write];
  if (pending.active && pending.epoch == epoch && pending.sync == sync && bytes == pending.piece_bytes &&
      bytes >= 4 && pending.pieces < 4 && offset == pending.offset + pending.pieces * pending.piece_bytes &&
      (pending.pieces + 1) * bytes <= 16 && pc > pending.pc[pending.pieces - 1] &&
      reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(pending.pc[pending.pieces - 1]) < 256) {
    pending.pc[pending.pieces++] = pc;
    return;
  }
  file_pending(linear, write);
  pending.active = true;
  pending.offset = offset;
  pending.pieces = 1;
  pending.piece_bytes = uint32_t(bytes);
  pending.pc[0] = pc;
  pending.epoch = epoch;
  pending.sync = sync;
}

void bank_flush() {
  for (size_t t = 0; t < g_lanes.size(); ++t) {
    file_pending(int(t), false);
    file_pending(int(t), true);
  }
  for (const auto& [key, r] : g_open) count(r, g_launch[SiteKey{key.pc, r.write, r.async, r.bytes}]);
  g_open.clear();
}

void bank_end_launch(const std::string& kernel) {
  bank_flush();
  if (g_launch.empty()) return;
  SiteMap& total = g_kernels[kernel];
  for (const auto& [key, c] : g_launch) {
    SiteCounts& t = total[key];
    t.accesses += c.accesses, t.requests += c.requests, t.wavefronts += c.wavefronts, t.ideal += c.ideal;
  }
  if (settings().banks == BankReport::Launch) {
    std::map<std::string, SiteMap> one{{kernel, g_launch}};
    std::swap(one, g_kernels);
    const std::string report = bank_report(kernel);
    std::swap(one, g_kernels);
    std::fputs(report.c_str(), stderr);
  }
  g_launch.clear();
}

std::vector<BankSite> bank_sites() {
  std::vector<BankSite> all;
  for (const auto& [kernel, sites] : g_kernels)
    for (const auto& [key, c] : sites)
      all.push_back({kernel, key.pc, key.write, key.async, key.bytes, c.accesses, c.requests, c.wavefronts, c.ideal});
  return all;
}

std::string bank_site_name(const void* pc) { return symbolise(pc); }

void reset_bank_counts() { g_kernels.clear(); }

std::string bank_report(const std::string& kernel_filter, size_t top) {
  std::ostringstream out;
  for (const auto& [kernel, sites] : g_kernels) {
    if (!kernel_filter.empty() && kernel.find(kernel_filter) == std::string::npos) continue;
    // Totals per kind, then the sites by excess wavefronts (sites of one source line, inlined at
    // several places, stay apart: each is its own instruction).
    SiteCounts kinds[3];
    std::vector<std::pair<SiteKey, SiteCounts>> ranked(sites.begin(), sites.end());
    for (const auto& [key, c] : ranked) {
      SiteCounts& k = kinds[key.async ? 2 : key.write ? 1 : 0];
      k.accesses += c.accesses, k.requests += c.requests, k.wavefronts += c.wavefronts, k.ideal += c.ideal;
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.second.wavefronts - a.second.ideal > b.second.wavefronts - b.second.ideal;
    });
    out << "cuda_sim banks: " << kernel << "\n";
    const char* names[3] = {"loads", "stores", "cp.async"};
    for (int k = 0; k < 3; ++k) {
      if (kinds[k].requests == 0) continue;
      const SiteCounts& c = kinds[k];
      char line[256];
      std::snprintf(line, sizeof line,
                    "  %-8s requests %llu wavefronts %llu ideal %llu excess %llu (%.1f%% of wavefronts)\n",
                    names[k], (unsigned long long)c.requests, (unsigned long long)c.wavefronts,
                    (unsigned long long)c.ideal, (unsigned long long)(c.wavefronts - c.ideal),
                    100.0 * double(c.wavefronts - c.ideal) / double(c.wavefronts));
      out << line;
    }
    size_t shown = 0;
    for (const auto& [key, c] : ranked) {
      if (shown++ == top || c.wavefronts == c.ideal) break;
      char line[256];
      std::snprintf(line, sizeof line, "  %8s %2dB requests %9llu wavefronts %9llu ideal %9llu excess %9llu (%.2f/req)  ",
                    kind_of(key), key.bytes, (unsigned long long)c.requests, (unsigned long long)c.wavefronts,
                    (unsigned long long)c.ideal, (unsigned long long)(c.wavefronts - c.ideal),
                    double(c.wavefronts) / double(c.requests));
      out << line << symbolise(key.pc) << "\n";
    }
  }
  return out.str();
}

void print_bank_report_at_exit() {
  if (settings().banks != BankReport::Exit) return;
  const std::string report = bank_report();
  std::fputs(report.c_str(), stderr);
}

}  // namespace urpe_sim
