// The precision switch (`--set precision=fp32|tf32|bf16`, docs/cuda.md#mixed-precision): the config
// key and its errors, TF32 as --tf32's synonym, and bf16 on the CPU twin: the linear layers multiply
// in BF16 while the parameters, the optimizer and the checkpoint stay FP32, and a tiny encoder run
// on position identification reaches the same 100% as its FP32 twin, and an FP32 run resumes in bf16.
#include <unistd.h>

#include <cstdlib>

#include "doctest/doctest.h"
#include "models/encoder.h"
#include "test_util.h"
#include "train/config/run_config.h"
#include "train/families/encoder/encoder_trainer.h"
#include "base/io/run_dir.h"
#include "base/io/safetensors.h"
#include "train/loop/checkpoint.h"
#include "train/loop/checkpoint_identity.h"
#include "train/loop/train_options.h"

using namespace urpe;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string dir = std::string("/tmp/urpe_test_precision_") + std::to_string(::getpid()) + "_" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

// Position identification at n = 8 with URPE: 100% on the validation set after 150 steps (about
// 5 s of CPU per run; 100 steps stop near 72%, so reaching 100% is a result, not a given).
Config tiny_pi(const std::string& precision) {
  return resolve_config("", "", {"task=pi", "pe=urpe", "seq_len=8", "layers=1", "d_model=32", "heads=2", "d_ff=64",
                                 "batch=16", "steps=150", "warmup=15", "lr=0.015", "eval_every=150",
                                 "valid_size=32", "precision=" + precision});
}

}  // namespace

TEST_CASE("precision: the config key, its default and its errors") {
  CHECK(resolve_config("", "", {}).get_string("precision") == "fp32");
  CHECK(linear_dtype_of(resolve_config("", "", {})) == DType::f32);
  CHECK(linear_dtype_of(resolve_config("", "", {"precision=tf32"})) == DType::f32);
  CHECK(linear_dtype_of(resolve_config("", "", {"precision=bf16"})) == DType::bf16);
  CHECK(linear_dtype_of(resolve_config("", "", {"model=txl", "precision=bf16"})) == DType::bf16);
  CHECK_THROWS_WITH_AS(resolve_config("", "", {"precision=fp16"}), doctest::Contains("precision"), Error);
  TrainOptions options;
  CHECK_THROWS_WITH_AS(apply_device_options(options, Device::cpu(), 10, "tf32"),
                       doctest::Contains("precision=tf32 needs a CUDA device"), Error);
  options.tf32 = true;
  CHECK_THROWS_WITH_AS(apply_device_options(options, Device::cpu(), 10, "bf16"),
                       doctest::Contains("--tf32 is precision=tf32"), Error);
  CHECK_THROWS_WITH_AS(apply_device_options(options, Device::cpu(), 10, "fp32"), doctest::Contains("--tf32 needs"),
                       Error);
  options.tf32 = false;
  CHECK_NOTHROW(apply_device_options(options, Device::cpu(), 10, "bf16"));  // the CPU twin
}

TEST_CASE("precision: bf16 keeps TF32 on for what stays FP32, as autocast with allow_tf32") {
  // The CUDA context's switch itself: test_cuda_training ("the context's TF32 switch ...").
  CHECK_FALSE(tf32_under("fp32", false));
  CHECK(tf32_under("fp32", true));  // --tf32
  CHECK(tf32_under("tf32", false));
  CHECK(tf32_under("bf16", false));
}

TEST_CASE("precision: bf16 linear layers: the same parameters, the output within BF16 rounding of FP32's") {
  EncoderConfig c;
  c.seq_len = 8;
  c.vocab = 6;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 2;
  c.d_ff = 64;
  c.num_classes = 8;
  EncoderConfig c16 = c;
  c16.linear_dtype = DType::bf16;
  const TransformerEncoder fp32(c, 7), bf16(c16, 7);
  const Tensor tokens = test::random_ids({3, 8}, 6, 8);
  const Tensor want = fp32.forward(tokens, false, nullptr), got = bf16.forward(tokens, false, nullptr);
  CHECK(got.dtype() == DType::f32);
  const double diff = test::max_abs_diff(got, want);
  CHECK(diff > 0.0);    // the GEMMs did round
  CHECK(diff < 0.05);   // ... by BF16's few 2⁻⁸
  // The parameters are the same FP32 tensors (the masters), and their gradients FP32.
  for (const auto& p : bf16.parameters().items()) CHECK(p.second.dtype() == DType::f32);
}

// The fused attention under bf16 takes the projections' bf16 q, k, v and returns a bf16 context
// (models/attention.cpp): the encoder's output stays within BF16 rounding of the FP32 fused one, and
// the tiny position-identification run still reaches 100% on that path (--set attention=fused).
TEST_CASE("precision: bf16 with the fused attention: bf16 q, k, v and context, the same accuracy") {
  EncoderConfig c;
  c.seq_len = 8;
  c.vocab = 6;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 2;
  c.d_ff = 64;
  c.num_classes = 8;
  c.attention = AttentionPath::fused;
  EncoderConfig c16 = c;
  c16.linear_dtype = DType::bf16;
  const TransformerEncoder fp32(c, 7), bf16(c16, 7);
  const Tensor tokens = test::random_ids({3, 8}, 6, 8);
  const Tensor want = fp32.forward(tokens, false, nullptr), got = bf16.forward(tokens, false, nullptr);
  CHECK(got.dtype() == DType::f32);
  const double diff = test::max_abs_diff(got, want);
  CHECK(diff > 0.0);
  CHECK(diff < 0.05);  // BF16's few 2⁻⁸, as the materialised path above

  TrainOptions options;
  options.quiet = true;
  const std::string dir = temp_dir("bf16_fused");
  const Config config = resolve_config("", "", {"task=pi", "pe=urpe", "seq_len=8", "layers=1", "d_model=32", "heads=2",
                                   "d_ff=64", "batch=16", "steps=150", "warmup=15", "lr=0.015", "eval_every=150",
                                   "valid_size=32", "precision=bf16", "attention=fused"});
  const EncoderTrainOutcome fused = train_encoder(config, dir, options);
  CHECK(fused.result.metric == 1.0);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("precision: a tiny encoder run in bf16 learns position identification like its fp32 twin") {
  TrainOptions options;
  options.quiet = true;
  const std::string dir32 = temp_dir("fp32"), dir16 = temp_dir("bf16");
  const EncoderTrainOutcome fp32 = train_encoder(tiny_pi("fp32"), dir32, options);
  const EncoderTrainOutcome bf16 = train_encoder(tiny_pi("bf16"), dir16, options);
  CHECK(fp32.result.metric == 1.0);
  CHECK(bf16.result.metric == 1.0);
  CHECK(bf16.final_valid_loss != fp32.final_valid_loss);  // a different run, not the FP32 one again
  // Recorded in the run's config; the checkpoint holds FP32 tensors.
  const Config stored = config_from_text(read_checkpoint_info(join_path(dir16, "model.safetensors")).config_text, "checkpoint");
  CHECK(stored.get_string("precision") == "bf16");
  for (const auto& [name, t] : load_safetensors(join_path(dir16, "model.safetensors")).tensors) {
    INFO(name);
    CHECK(t.dtype() != DType::bf16);  // f32 (or the optimizer's i32 counters)
  }
  // precision may change on --resume (the checkpoint is FP32 either way): the FP32 run goes on in
  // bf16 for 20 more steps, its config and checkpoint now say bf16, and it still scores 100%.
  TrainOptions resume = options;
  resume.resume = true;
  resume.resume_overrides = {"steps=170", "precision=bf16"};
  const EncoderTrainOutcome resumed = train_encoder(resumed_config(dir32, resume.resume_overrides), dir32, resume);
  CHECK(resumed.result.metric == 1.0);
  const CheckpointInfo after = read_checkpoint_info(join_path(dir32, "model.safetensors"));
  CHECK(after.progress.step == 170);
  CHECK(config_from_text(after.config_text, "checkpoint").get_string("precision") == "bf16");
  CHECK(config_from_text(read_text_file(join_path(dir32, "config.txt")), "config.txt").get_string("precision") == "bf16");
  std::system(("rm -rf '" + dir32 + "' '" + dir16 + "'").c_str());
}
