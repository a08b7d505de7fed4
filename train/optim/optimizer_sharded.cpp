// Adam's ZeRO-1 mode (train/optim/optimizer.h, config shard_optimizer = true): each of K ranks keeps
// Adam's moments for its contiguous range of the flat parameter vector only, so the optimizer
// state per rank is 2·P/K floats instead of 2·P.
//
// One step, on every rank r (P parameters' elements, S = ceil(P/K)):
//   g_r ← the range [r·S, (r+1)·S) of Σ_q w_q·g_q / Σ_q w_q     (reduce-scatter: MPI on the host,
//                                                                or NCCL on the GPU)
//   clip (clip_norm > 0):  ‖g‖² = Σ_r ‖g_r‖² (an all-reduce of one double), the same factor as
//                          unsharded on every rank
//   θ_r, m_r, v_r ← Adam(θ_r, g_r, m_r, v_r)                    (ops/optimizer_kernels.h, per piece)
//   θ ← concat_r θ_r                                             (all-gather, MPI or NCCL)
// The update is element-wise, so each element gets the arithmetic it gets unsharded: the same
// values, bit for bit, whenever the gradient sum is (two ranks: a + b either way).
// A range cuts parameters into pieces (the part of one parameter inside it); a piece whose
// parameter no rank's backward reached is left alone, moments included, as unsharded.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "autograd/node.h"
#include "ops/optimizer_kernels.h"
#include "tensor/op_profile.h"
#include "train/optim/optimizer.h"

namespace urpe {

namespace {

// (n,) f32 on `device` holding values[at, at + n).
Tensor slice_of(const std::vector<float>& values, int64_t at, int64_t n, const Device& device) {
  return Tensor::from_vector(std::vector<float>(values.begin() + at, values.begin() + at + n), {n}).to(device);
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamConfig config, dist::Communicator& shard_over,
           dist::DeviceCollectives* device)
    : params_(std::move(params)), comm_(&shard_over), device_(device), config_(config) {
  check_config();
  total_ = dist::total_elements(params_);
  const dist::FlatRange range = dist::optimizer_shard(*comm_, total_);
  int64_t start = 0;
  for (size_t k = 0; k < params_.size(); ++k) {
    const int64_t end = start + params_[k].numel();
    const int64_t from = std::max(start, range.begin), to = std::min(end, range.end);
    if (from < to) {
      pieces_.push_back({k, from - start, to - from, from - range.begin});
      m_.push_back(Tensor::zeros({to - from}, DType::f32, params_[k].device()));
      v_.push_back(Tensor::zeros({to - from}, DType::f32, params_[k].device()));
    }
    start = end;
  }
}

dist::StepSync Adam::step_sharded(float lr, double local_loss, double weight, bool stop_requested) {
  URPE_CHECK(sharded(), "Adam.step_sharded: the optimizer is not sharded (internal error)");
  URPE_CHECK(std::isfinite(lr) && lr >= 0, "Adam.step: lr must be finite and ≥ 0, got " << lr);
  autograd::NoGrad no_grad;
  const profile::PhaseRange phase(profile::Phase::optimizer);  // its collectives: communication
  const dist::ShardedStepSync synced =
      dist::reduce_scatter_gradients(*comm_, params_, local_loss, weight, stop_requested, device_);
  // This rank's range of the parameters, piece by piece (the updated values go back from here).
  std::vector<Tensor> values, grads;
  std::vector<AdamSlot> slots;
  std::vector<bool> decayed;  // per slot: whether weight decay applies to its parameter
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& piece = pieces_[i];
    const Tensor& p = params_[piece.param];
    Tensor value = Tensor::empty({piece.length}, DType::f32, p.device());
    dist::copy_elements(value, 0, p, piece.offset, piece.length);
    values.push_back(value);
    if (!synced.reached[piece.param]) continue;
    Tensor grad = Tensor::empty({piece.length}, DType::f32, p.device());
    dist::copy_elements(grad, 0, synced.gradient, piece.at, piece.length);
    grads.push_back(grad);
    slots.push_back({value, grad, m_[i], v_[i]});
    decayed.push_back(decays(p));
  }
  if (config_.clip_norm > 0) {
    // clip_grad_norm's rule on the global norm: a non-finite norm leaves the gradients unscaled.
    double sum_of_squares = grads.empty() ? 0.0 : grad_sum_of_squares(grads);
    comm_->all_reduce_sum(&sum_of_squares, 1);
    const float norm = static_cast<float>(std::sqrt(sum_of_squares));
    if (std::isfinite(norm)) {
      const double factor = static_cast<double>(config_.clip_norm) / (static_cast<double>(norm) + 1e-6);
      if (factor < 1.0 && !grads.empty()) scale_grads(grads, static_cast<float>(factor));
    }
  }
  const AdamHyper hyper = next_step_hyper(lr);
  update_in_decay_groups(slots, decayed, hyper);
  step_ = hyper.step;
  const Tensor mine = Tensor::empty({dist::optimizer_shard(*comm_, total_).size()}, DType::f32,
                                    params_.empty() ? Device::cpu() : params_[0].device());
  for (size_t i = 0; i < pieces_.size(); ++i) dist::copy_elements(mine, pieces_[i].at, values[i], 0, pieces_[i].length);
  dist::all_gather_parameters(*comm_, params_, mine, device_);
  return synced;
}

// ---- checkpoint state: gathered on save, each rank's range taken on load ----

std::vector<std::pair<std::string, Tensor>> Adam::sharded_state() const {
  const std::vector<std::string> keys = state_keys();
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back(keys[0], Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(step_)}, {1}));
  const int64_t range = dist::optimizer_shard(*comm_, total_).size();
  std::vector<float> mine_m(static_cast<size_t>(range)), mine_v(static_cast<size_t>(range));
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const std::vector<float> m = m_[i].to_vector_f32(), v = v_[i].to_vector_f32();
    std::copy(m.begin(), m.end(), mine_m.begin() + pieces_[i].at);
    std::copy(v.begin(), v.end(), mine_v.begin() + pieces_[i].at);
  }
  const std::vector<float> all_m = dist::all_gather_ranges(*comm_, total_, mine_m);
  const std::vector<float> all_v = dist::all_gather_ranges(*comm_, total_, mine_v);
  int64_t at = 0;
  for (size_t k = 0; k < params_.size(); ++k) {
    const int64_t n = params_[k].numel();
    out.emplace_back(keys[1 + 2 * k], slice_of(all_m, at, n, Device::cpu()).view(params_[k].shape()));
    out.emplace_back(keys[2 + 2 * k], slice_of(all_v, at, n, Device::cpu()).view(params_[k].shape()));
    at += n;
  }
  return out;
}

void Adam::load_sharded_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  std::map<std::string, Tensor> by_key;
  for (const auto& [key, t] : state) by_key[key] = t;
  const std::vector<std::string> keys = state_keys();
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& piece = pieces_[i];
    dist::copy_elements(m_[i], 0, by_key.at(keys[1 + 2 * piece.param]).cpu(), piece.offset, piece.length);
    dist::copy_elements(v_[i], 0, by_key.at(keys[2 + 2 * piece.param]).cpu(), piece.offset, piece.length);
  }
  step_ = by_key.at("adam.step").to_vector_i32()[0];
}

}  // namespace urpe
