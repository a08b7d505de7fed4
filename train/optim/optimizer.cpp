// Adam/AdamW state and step: gathers the parameters that have gradients into one kernel call.
#include "train/optim/optimizer.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "autograd/node.h"
#include "ops/optimizer_kernels.h"
#include "tensor/op_profile.h"

namespace urpe {

Adam::Adam(std::vector<Tensor> params, AdamConfig config)
    : params_(std::move(params)), config_(config) {
  check_config();
  for (const Tensor& p : params_) {
    m_.push_back(Tensor::zeros(p.shape(), DType::f32, p.device()));
    v_.push_back(Tensor::zeros(p.shape(), DType::f32, p.device()));
  }
  // CUDA: the update kernels read each step's lr and bias corrections from these (one per weight
  // decay group), kept for the optimizer's life at fixed addresses (ops/optimizer_kernels.h).
  if (!params_.empty() && params_[0].device().is_cuda())
    for (Tensor& scalars : step_scalars_) scalars = Tensor::zeros({kAdamScalarFloats}, DType::f32, params_[0].device());
}

// The hyperparameters and the parameter list (f32 leaves on one device, each once), and the
// checkpoint keys.
void Adam::check_config() const {
  URPE_CHECK(config_.beta1 >= 0 && config_.beta1 < 1 && config_.beta2 >= 0 && config_.beta2 < 1,
             "Adam: betas must lie in [0, 1), got (" << config_.beta1 << ", " << config_.beta2 << ")");
  URPE_CHECK(config_.eps > 0, "Adam: eps must be > 0, got " << config_.eps);
  URPE_CHECK(config_.weight_decay >= 0, "Adam: weight_decay must be ≥ 0, got " << config_.weight_decay);
  URPE_CHECK(config_.clip_norm >= 0 && std::isfinite(config_.clip_norm),
             "Adam: clip_norm must be ≥ 0 (0 = no clipping), got " << config_.clip_norm);
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor& p = params_[k];
    check_dtype("Adam", "param", p, DType::f32);
    URPE_CHECK(p.requires_grad(), "Adam: parameter " << k << " " << p.describe()
                                                     << " does not require a gradient");
    URPE_CHECK(!p.grad_fn(), "Adam: parameter " << k << " " << p.describe()
                                                << " is not a leaf (it was computed by an op)");
    check_same_device("Adam", params_[0], p);
    for (size_t q = 0; q < k; ++q)
      URPE_CHECK(!params_[q].same_as(p), "Adam: parameter " << k << " " << p.describe()
                                                            << " is listed twice");
  }
}

std::vector<std::string> Adam::state_keys() const {
  std::vector<std::string> out = {"adam.step"};
  std::set<std::string> seen;
  for (size_t k = 0; k < params_.size(); ++k) {
    std::string key = params_[k].name();
    if (key.empty() || !seen.insert(key).second) key = "param" + std::to_string(k);
    out.push_back("adam.m." + key);
    out.push_back("adam.v." + key);
  }
  return out;
}

int64_t Adam::moment_elements() const {
  int64_t n = 0;
  for (const Tensor& m : m_) n += 2 * m.numel();
  return n;
}

// The hyper-parameters of the next step (its number, the lr of the schedule), shared by the
// unsharded and the sharded step.
AdamHyper Adam::next_step_hyper(float lr) const {
  AdamHyper hyper;
  hyper.lr = lr;
  hyper.beta1 = config_.beta1;
  hyper.beta2 = config_.beta2;
  hyper.eps = config_.eps;
  hyper.weight_decay = config_.weight_decay;
  hyper.decoupled_weight_decay = config_.decoupled_weight_decay;
  hyper.step = step_ + 1;
  return hyper;
}

std::optional<Tensor> Adam::step(float lr) {
  URPE_CHECK(std::isfinite(lr) && lr >= 0, "Adam.step: lr must be finite and ≥ 0, got " << lr);
  URPE_CHECK(!sharded(), "Adam.step: a sharded optimizer steps with step_sharded (internal error)");
  autograd::NoGrad no_grad;
  const profile::PhaseRange phase(profile::Phase::optimizer);
  std::vector<AdamSlot> slots;
  std::vector<bool> decayed;
  std::vector<Tensor> grads;
  gather_slots(slots, decayed, grads);
  // The clip stays on the gradients' device (no host wait on CUDA): the norm comes back as a
  // scalar tensor that nobody reads unless it is printed.
  std::optional<Tensor> norm;
  if (config_.clip_norm > 0) norm = clip_grad_norm_on_device(grads, config_.clip_norm);
  const AdamHyper hyper = next_step_hyper(lr);
  update_in_decay_groups(slots, decayed, hyper);
  step_ = hyper.step;
  return norm;
}

void Adam::gather_slots(std::vector<AdamSlot>& slots, std::vector<bool>& decayed, std::vector<Tensor>& grads) const {
  for (size_t k = 0; k < params_.size(); ++k) {
    Tensor g = params_[k].grad();
    if (!g.defined()) continue;
    slots.push_back({params_[k], g, m_[k], v_[k]});
    decayed.push_back(decays(params_[k]));
    grads.push_back(g);
  }
}

namespace {
// The slots of parameters with weight decay and of those without (decay_biases_and_norms off),
// each group in the parameters' order: the eager update and the captured one split them alike.
struct DecayGroups {
  std::vector<AdamSlot> decayed, kept;
};
DecayGroups split_decay_groups(const std::vector<AdamSlot>& slots, const std::vector<bool>& decayed) {
  DecayGroups groups;
  for (size_t k = 0; k < slots.size(); ++k) (decayed[k] ? groups.decayed : groups.kept).push_back(slots[k]);
  return groups;
}
}  // namespace

// ---- the captured step's halves (CUDA graphs) ----

void Adam::prepare_captured_step(float lr) {
  URPE_CHECK(std::isfinite(lr) && lr >= 0, "Adam.step: lr must be finite and ≥ 0, got " << lr);
  URPE_CHECK(!sharded() && step_scalars_[0].defined(),
             "Adam: a captured step needs an unsharded optimizer on CUDA (internal error)");
  const AdamHyper hyper = next_step_hyper(lr);
  upload_adam_step_scalars(step_scalars_[0], hyper);
  if (two_decay_groups(hyper.weight_decay)) {
    AdamHyper no_decay = hyper;
    no_decay.weight_decay = 0.0f;
    upload_adam_step_scalars(step_scalars_[1], no_decay);
  }
  step_ = hyper.step;
}

void Adam::cancel_captured_step() { --step_; }

void Adam::record_captured_step() {
  autograd::NoGrad no_grad;
  const profile::PhaseRange phase(profile::Phase::optimizer);
  std::vector<AdamSlot> slots;
  std::vector<bool> decayed;
  std::vector<Tensor> grads;
  gather_slots(slots, decayed, grads);
  if (config_.clip_norm > 0) clip_grad_norm_on_device(grads, config_.clip_norm);
  const profile::OpRange range("adam_update", slots.empty() ? Tensor() : slots[0].param);
  if (!two_decay_groups(config_.weight_decay)) {
    launch_adam_update(slots, step_scalars_[0]);
    return;
  }
  const DecayGroups groups = split_decay_groups(slots, decayed);
  if (!groups.decayed.empty()) launch_adam_update(groups.decayed, step_scalars_[0]);
  if (!groups.kept.empty()) launch_adam_update(groups.kept, step_scalars_[1]);
}

bool Adam::decays(const Tensor& param) const { return config_.decay_biases_and_norms || param.dim() >= 2; }

// One kernel call for the slots weight decay applies to, one (wd = 0) for those it skips: the
// same update element by element as a per-parameter decay would give.
void Adam::update_in_decay_groups(const std::vector<AdamSlot>& slots, const std::vector<bool>& decayed_slots,
                                  const AdamHyper& hyper) const {
  if (!two_decay_groups(hyper.weight_decay)) {
    adam_update(slots, hyper, step_scalars_[0]);
    return;
  }
  const DecayGroups groups = split_decay_groups(slots, decayed_slots);
  if (!groups.decayed.empty()) adam_update(groups.decayed, hyper, step_scalars_[0]);
  AdamHyper no_decay = hyper;
  no_decay.weight_decay = 0.0f;
  if (!groups.kept.empty()) adam_update(groups.kept, no_decay, step_scalars_[1]);
}

void Adam::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

// ---- checkpoint state ----

std::vector<std::pair<std::string, Tensor>> Adam::state() const {
  URPE_CHECK(step_ <= std::numeric_limits<int32_t>::max(), "Adam: step " << step_ << " does not fit the i32 checkpoint entry");
  if (sharded()) return sharded_state();
  const std::vector<std::string> keys = state_keys();
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back(keys[0], Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(step_)}, {1}));
  for (size_t k = 0; k < params_.size(); ++k) {
    out.emplace_back(keys[1 + 2 * k], m_[k]);
    out.emplace_back(keys[2 + 2 * k], v_[k]);
  }
  return out;
}

// Every entry of state_keys() present, the step one non-negative i32 and each moment the shape
// of its parameter; checked before anything changes, so a bad checkpoint leaves the optimizer
// intact.
void Adam::check_state(const std::vector<std::pair<std::string, Tensor>>& state) const {
  std::map<std::string, Tensor> by_key;
  for (const auto& [key, t] : state) by_key[key] = t;
  const std::vector<std::string> keys = state_keys();
  for (size_t e = 0; e < keys.size(); ++e) {
    auto it = by_key.find(keys[e]);
    URPE_CHECK(it != by_key.end() && it->second.defined(),
               "Adam: optimizer state has no entry '" << keys[e] << "' (was it saved for the same model?)");
    const Tensor& t = it->second;
    if (e == 0) {
      URPE_CHECK(t.dtype() == DType::i32 && t.numel() == 1 && t.to_vector_i32()[0] >= 0,
                 "Adam: optimizer state 'adam.step' must be one non-negative i32, got " << t.describe());
      continue;
    }
    const Tensor& p = params_[(e - 1) / 2];
    URPE_CHECK(t.dtype() == DType::f32 && t.shape() == p.shape(),
               "Adam: optimizer state '" << keys[e] << "' is " << t.describe() << " but the parameter is "
                                         << p.describe());
  }
}

void Adam::load_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  check_state(state);
  if (sharded()) return load_sharded_state(state);
  std::map<std::string, Tensor> by_key;
  for (const auto& [key, t] : state) by_key[key] = t;
  const std::vector<std::string> keys = state_keys();
  for (size_t k = 0; k < params_.size(); ++k) {
    m_[k].copy_from(by_key.at(keys[1 + 2 * k]));
    v_[k].copy_from(by_key.at(keys[2 + 2 * k]));
  }
  step_ = by_key.at("adam.step").to_vector_i32()[0];
}

}  // namespace urpe
