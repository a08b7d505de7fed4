// `urpe bench kernels|step`: reads the options and hands them to app/bench/ (which knows nothing of
// the command line).
#include "app/bench/bench_attention.h"
#include "app/bench/bench_kernels.h"
#include "app/bench/bench_step.h"
#include "app/bench/peaks.h"
#include "tensor/error.h"
#include "app/cli/handlers.h"
#include "train/families/model_family.h"
#include "app/repro/table5.h"

namespace urpe::cli {

namespace {

// --repeats as a count of timed runs: a positive int, checked before it is narrowed.
int repeats_option(const Args& args, long fallback) {
  const long repeats = args.get_int("repeats", fallback);
  URPE_CHECK(repeats >= 1 && repeats <= 1000000,
             "option --repeats: expected a count between 1 and 1000000, got " << args.get("repeats"));
  return static_cast<int>(repeats);
}

}  // namespace

int run_bench(const Args& args) {
  const std::string what = args.positional.empty() ? "" : args.positional[0];
  URPE_CHECK(args.positional.size() <= 1,
             "bench: expected one of peaks|kernels|step|attention, got '" << args.positional[1] << "' after '" << what << "'");
  if (what == "peaks") {
    bench::PeaksOptions options;
    options.device = args.get("device", "cpu");
    bench::require_cuda_device("bench peaks", options.device);
    const std::string sizes = args.get("sizes", "full");
    URPE_CHECK(sizes == "full" || sizes == "smoke",
               "option --sizes: bench peaks measures full sizes, or smoke (tiny: checks it runs); got '" << sizes << "'");
    options.smoke = sizes == "smoke";
    return bench::run_peaks_bench(options);
  }
  if (what == "kernels") {
    bench::KernelBenchOptions options;
    options.device = args.get("device", "cpu");
    options.repeats = repeats_option(args, 50);
    options.tf32 = args.has("tf32");
    options.sizes = args.get("sizes", "table5");
    return bench::run_kernel_bench(options);
  }
  if (what == "step") {
    bench::StepBenchOptions options;
    options.device = args.get("device", "cpu");
    options.tf32 = args.has("tf32");
    bench::require_cuda_device("bench step", options.device);
    URPE_CHECK(!options.tf32 || options.device != "cpu",
               "option --tf32: TF32 is a mode of the GPU's tensor cores; use it with --device cuda");
    options.model = args.get("model", options.model);
    URPE_CHECK(is_model_family(options.model),
               "option --model: expected encoder, txl or graphormer, got '" << options.model << "'");
    options.steps = repeats_option(args, options.steps);
    if (args.has("seq-len")) {
      const long seq_len = args.get_int("seq-len", 0);
      URPE_CHECK(seq_len >= 2 && seq_len <= 65536,
                 "option --seq-len: expected a sequence length between 2 and 65536, got " << args.get("seq-len"));
      options.seq_len = seq_len;
    }
    if (args.has("batch")) {
      const long batch = args.get_int("batch", 0);
      URPE_CHECK(batch >= 1 && batch <= 65536,
                 "option --batch: expected a batch size between 1 and 65536, got " << args.get("batch"));
      options.batch = batch;
    }
    options.attention = args.get("attention", options.attention);
    URPE_CHECK(options.attention == "fused" || options.attention == "materialized",
               "option --attention: expected fused or materialized, got '" << options.attention << "'");
    for (const std::string& set : args.all("set")) {
      const size_t eq = set.find('=');
      const std::string key = set.substr(0, eq), value = eq == std::string::npos ? "" : set.substr(eq + 1);
      URPE_CHECK(key == "cuda_graph", "option --set " << set << ": bench step takes --set cuda_graph=on|off only");
      URPE_CHECK(value == "on" || value == "off" || value == "true" || value == "false",
                 "option --set " << set << ": expected cuda_graph=on or cuda_graph=off");
      options.cuda_graph = value == "on" || value == "true";
    }
    bench::run_step_benchmark(options);
    return 0;
  }
  if (what == "attention") {
    bench::AttentionBenchOptions options;
    options.device = args.get("device", "cpu");
    bench::require_cuda_device("bench attention", options.device);
    if (args.has("lengths")) options.lengths = parse_lengths(args.get("lengths"));
    const long batch = args.get_int("batch", options.batch);
    URPE_CHECK(batch >= 1 && batch <= 65536,
               "option --batch: expected a batch size between 1 and 65536, got " << args.get("batch"));
    options.batch = batch;
    const long heads = args.get_int("heads", options.heads);
    URPE_CHECK(heads >= 1 && heads <= 1024, "option --heads: expected between 1 and 1024 heads, got " << args.get("heads"));
    options.heads = heads;
    const long head_dim = args.get_int("head-dim", options.head_dim);
    URPE_CHECK(head_dim >= 1 && head_dim <= 128,
               "option --head-dim: expected a head dim between 1 and 128 (the fused kernels' tiles), got "
                   << args.get("head-dim"));
    options.head_dim = head_dim;
    options.causal = args.has("causal");
    options.math = args.get("math", args.has("tf32") ? "tf32" : "fp32");
    URPE_CHECK(!args.has("tf32") || options.math == "tf32",
               "option --tf32 is --math tf32; got --math " << options.math << " as well");
    URPE_CHECK(options.math == "fp32" || options.math == "tf32" || options.math == "bf16",
               "option --math: expected fp32, tf32 or bf16, got '" << options.math << "'");
    URPE_CHECK(options.math == "fp32" || options.device != "cpu",
               "option --math " << options.math << ": a mode of the GPU's tensor cores; use it with --device cuda");
    const std::string pipeline = args.get("tc-pipeline", "auto");
    URPE_CHECK(pipeline == "on" || pipeline == "off" || pipeline == "auto",
               "option --tc-pipeline: expected auto, on or off, got '" << pipeline << "'");
    URPE_CHECK(pipeline != "on" || options.math != "fp32",
               "option --tc-pipeline on: a variant of the tensor-core kernels; use it with --math tf32 or bf16");
    options.tc_pipeline = pipeline == "on" ? cuda::TcPipeline::on
                          : pipeline == "off" ? cuda::TcPipeline::off
                                              : cuda::TcPipeline::automatic;
    const std::string rows = args.get("tc-rows", "auto");
    URPE_CHECK(rows == "auto" || rows == "1" || rows == "2",
               "option --tc-rows: expected auto, 1 or 2, got '" << rows << "'");
    URPE_CHECK(rows == "auto" || options.math != "fp32",
               "option --tc-rows " << rows << ": a variant of the tensor-core forward; use it with --math tf32 or bf16");
    options.tc_rows = rows == "2" ? cuda::TcRows::two : rows == "1" ? cuda::TcRows::one : cuda::TcRows::automatic;
    options.repeats = repeats_option(args, options.repeats);
    const std::string sizes = args.get("sizes", "full");
    URPE_CHECK(sizes == "full" || sizes == "smoke",
               "option --sizes: bench attention takes full, or smoke (the TF32 reference GEMM at 256³: checks it runs); got '"
                   << sizes << "'");
    options.smoke = sizes == "smoke";
    if (args.has("attention")) {
      const std::string path = args.get("attention");
      URPE_CHECK(path == "fused" || path == "materialized",
                 "option --attention: expected fused or materialized, got '" << path << "'");
      options.paths = {path};
    }
    for (int64_t n : options.lengths)
      URPE_CHECK(n <= 4096 || options.paths == std::vector<std::string>{"fused"},
                 "option --lengths: " << n << " is above 4096, which only the fused path runs (the materialized "
                 "one holds n² floats per head three times); add --attention fused");
    return bench::run_attention_bench(options);
  }
  URPE_FAIL("bench: expected 'urpe bench peaks', 'urpe bench kernels', 'urpe bench step' or 'urpe bench attention', got '"
            << (what.empty() ? std::string("nothing") : what) << "'");
}

}  // namespace urpe::cli
