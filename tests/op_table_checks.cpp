// The checks every row of the op table drives (tests/op_table.h): the gradient check, the same
// bits for 1, 2 and 3 threads and the profiler's cost on the CPU, and CUDA against the CPU. Each
// returns what it found (CheckResult) rather than asserting, so the suites can also show a check
// failing on a deliberately broken op.
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "autograd/node.h"
#include "ops/cast.h"
#include "op_table.h"
#include "test_util.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace urpe::test {

namespace {

void fail(CheckResult& r, const std::string& what) {
  r.ok = false;
  if (!r.message.empty()) r.message += "; ";
  r.message += what;
}

const DTypeColumn& column(const OpRow& row, DType dtype) {
  for (const DTypeColumn& c : row.dtypes)
    if (c.dtype == dtype) return c;
  URPE_FAIL("op table: row '" << row.name << "' has no " << dtype_name(dtype) << " column");
}

// The row's inputs, the differentiated ones flagged, on `device`.
std::vector<Tensor> inputs_on(const OpRow& row, const std::vector<Tensor>& cpu, const Device& device) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < cpu.size(); ++k) {
    Tensor t = device.is_cpu() ? cpu[k].clone() : cpu[k].to(device);
    if (row.inputs[k].grad) t.set_requires_grad(true);
    out.push_back(t);
  }
  return out;
}

// The output gradient every backward of the row starts from: seeded by the row's name.
Tensor upstream_for(const OpRow& row, const Tensor& out) {
  uint64_t seed = 0x0f0e0d0cull;
  for (unsigned char c : row.name) seed = seed * 131 + c;
  Rng rng(seed);
  const Tensor g = Tensor::uniform(out.shape(), -1.0f, 1.0f, rng);
  if (out.dtype() == g.dtype()) return g;
  // A gradient has its tensor's dtype (bf16 for a cast's output); the kernel, not the op, so that
  // no profiled cast is charged to the row.
  Tensor rounded = Tensor::empty(g.shape(), out.dtype());
  kernels::cast_cpu(g, rounded);
  return rounded;
}

struct Run {
  Tensor out;
  std::vector<Tensor> grads;  // of the differentiated inputs, in order (CPU copies)
};

// Forward, then (for a row with a backward) backward from the row's output gradient.
Run run(const OpRow& row, const std::vector<Tensor>& cpu_inputs, const Device& device) {
  const std::vector<Tensor> in = inputs_on(row, cpu_inputs, device);
  Run r;
  r.out = row.call(in, device);
  if (row.backward) {
    r.out.backward(upstream_for(row, r.out).to(device));
    for (size_t k = 0; k < in.size(); ++k)
      if (row.inputs[k].grad) r.grads.push_back(in[k].grad().defined() ? in[k].grad().cpu() : Tensor());
  }
  r.out = r.out.cpu();
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.cpu(), y = b.cpu();
  return std::memcmp(x.impl().storage->data, y.impl().storage->data, static_cast<size_t>(x.numel()) * dtype_size(x.dtype())) == 0;
}

// Every element finite where the reference is finite (NaN where it is NaN, the same infinity),
// and within atol + rtol·|want|. i32 tensors must be equal.
std::string compare(const Tensor& got_any, const Tensor& want_any, Tolerance tol, const std::string& what) {
  std::ostringstream msg;
  if (!got_any.defined() || !want_any.defined()) {
    if (got_any.defined() != want_any.defined()) msg << what << ": defined on one device only";
    return msg.str();
  }
  const Tensor got = got_any.cpu(), want = want_any.cpu();
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    msg << what << ": " << got.describe() << " against " << want.describe();
    return msg.str();
  }
  if (got.dtype() == DType::i32) {
    const std::vector<int32_t> g = got.to_vector_i32(), w = want.to_vector_i32();
    for (size_t k = 0; k < g.size(); ++k)
      if (g[k] != w[k]) {
        msg << what << ": element " << k << " is " << g[k] << ", the CPU's " << w[k];
        return msg.str();
      }
    return "";
  }
  const std::vector<float> g = got.to_vector_f32(), w = want.to_vector_f32();
  const test::Closeness c = test::closeness(g, w, tol.atol, tol.rtol);
  if (c.bad == 0) return "";
  msg << what << ": " << c.bad << " of " << g.size() << " elements out of bounds (atol " << tol.atol << ", rtol "
      << tol.rtol << "), max |diff| " << c.worst << "; first at " << c.first << ": " << g[c.first]
      << " against the CPU's " << w[c.first];
  return msg.str();
}

// Dropout: CUDA's zeros exactly where the CPU's are, and some of each.
std::string compare_zeros(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector_f32(), w = want.to_vector_f32();
  int64_t mismatch = 0, kept = 0;
  for (size_t k = 0; k < g.size(); ++k) {
    mismatch += (g[k] == 0.0f) != (w[k] == 0.0f);
    kept += w[k] != 0.0f;
  }
  std::ostringstream msg;
  if (mismatch) msg << "zeros: " << mismatch << " elements zero on one device only";
  else if (kept == 0 || kept == static_cast<int64_t>(w.size())) msg << "zeros: the CPU kept " << kept << " of " << w.size();
  return msg.str();
}

// ---- the profiler's recorder for one call: the cost of each op name ----
class CostRecorder final : public profile::Recorder {
 public:
  std::map<std::string, profile::Cost> cost;
  std::map<std::string, int> calls;

  void begin_op(const char* name, const Device&) override { open(name); }
  void begin_op(const std::string& name, const Device&) override { open(name); }
  void end_op() override { stack_.pop_back(); }
  void add_cost(const profile::Cost& c) override {
    if (!stack_.empty()) cost[stack_.back()] += c;
  }
  void begin_scope(const std::string&) override {}
  void end_scope() override {}
  profile::ScopePath scope_path() override { return nullptr; }
  void enter_scopes(const profile::ScopePath&) override {}
  profile::Phase phase() const override { return phase_; }
  void set_phase(profile::Phase p) override { phase_ = p; }

 private:
  void open(const std::string& name) {
    stack_.push_back(name);
    ++calls[name];
  }
  std::vector<std::string> stack_;
  profile::Phase phase_ = profile::Phase::forward;
};

std::string compare_cost(const CostRecorder& rec, const std::string& span, const profile::Cost& want) {
  std::ostringstream msg;
  const auto calls = rec.calls.find(span);
  if (calls == rec.calls.end()) {
    msg << "cost: no span '" << span << "' recorded";
    return msg.str();
  }
  const auto it = rec.cost.find(span);
  const profile::Cost got = it == rec.cost.end() ? profile::Cost{} : it->second;
  if (got.flops != want.flops || got.bytes != want.bytes)
    msg << "cost of '" << span << "': recorded " << got.flops << " FLOPs, " << got.bytes << " bytes; the row's formula "
        << want.flops << " FLOPs, " << want.bytes << " bytes";
  return msg.str();
}

}  // namespace

void poison_free_blocks(const std::vector<Shape>& shapes, const Device& device) {
  // A NaN whose two 16-bit halves are each a bf16 NaN (0x7FC0): a bf16 output that lands in an
  // f32 block reads NaN in every element too (the canonical f32 NaN's low half is a bf16 zero).
  uint32_t bits = 0x7FC07FC0u;
  float nan_both;
  std::memcpy(&nan_both, &bits, 4);
  std::vector<Tensor> blocks;
  for (const Shape& s : shapes)
    for (int k = 0; k < 4; ++k) {
      blocks.push_back(Tensor::full(s, nan_both, device));
      // The same shape in bf16 (half the bytes: a block of its own size) for bf16 outputs.
      blocks.push_back(cast(blocks.back(), DType::bf16));
    }
}

static CheckResult gradcheck_row_unguarded(const OpRow& row) {
  CheckResult r;
  if (!(row.checks & kGradcheck) || !row.backward) return r;
  r.ran = true;
  const std::vector<Tensor> in = inputs_on(row, make_inputs(row), Device::cpu());
  const autograd::GradcheckResult g = autograd::gradcheck(
      [&row](const std::vector<Tensor>& v) { return row.call(v, Device::cpu()); }, in,
      column(row, DType::f32).gradcheck);
  if (!g.ok) fail(r, "gradcheck: " + g.message);
  return r;
}

static CheckResult threads_row_unguarded(const OpRow& row) {
  CheckResult r;
#if defined(_OPENMP)
  if (!(row.checks & kThreads)) return r;
  r.ran = true;
  const std::vector<Tensor> in = make_inputs(row);
  struct Restore {  // the thread count as it was, also when the row throws
    int previous = omp_get_max_threads();
    ~Restore() { omp_set_num_threads(previous); }
  } restore;
  omp_set_num_threads(1);
  const Run one = run(row, in, Device::cpu());
  for (const int threads : {2, 3}) {
    omp_set_num_threads(threads);
    const Run more = run(row, in, Device::cpu());
    const std::string between = " differs between 1 and " + std::to_string(threads) + " threads";
    if (!same_bits(one.out, more.out)) fail(r, "threads: the output" + between);
    for (size_t k = 0; k < one.grads.size(); ++k)
      if (!same_bits(one.grads[k], more.grads[k])) fail(r, "threads: gradient " + std::to_string(k) + between);
  }
#else
  (void)row;
#endif
  return r;
}

static CheckResult cost_row_unguarded(const OpRow& row) {
  CheckResult r;
  if (!(row.checks & kCost)) return r;
  r.ran = true;
  const std::vector<Tensor> cpu = make_inputs(row);
  const std::vector<Tensor> in = inputs_on(row, cpu, Device::cpu());
  CostRecorder rec;
  {
    const profile::ActiveRecorder active(&rec);
    const Tensor out = row.call(in, Device::cpu());
    if (row.backward) {
      const Tensor upstream = upstream_for(row, out);
      out.backward(upstream);
    }
  }
  const OpCosts want = row.cost(cpu);
  if (std::string m = compare_cost(rec, row.op, want.forward); !m.empty()) fail(r, m);
  if (row.backward)
    if (std::string m = compare_cost(rec, row.op + " backward", want.backward); !m.empty()) fail(r, m);
  return r;
}

// The row's call in a column's dtype: its cast_inputs cast (differentiably) to the column's dtype.
Tensor call_in(const OpRow& row, const DTypeColumn& c, const std::vector<Tensor>& in, const Device& device) {
  if (c.cast_inputs.empty()) return row.call(in, device);
  std::vector<Tensor> cast_in = in;
  for (size_t k : c.cast_inputs) cast_in.at(k) = cast(in.at(k), c.dtype);
  return row.call(cast_in, device);
}

static void parity_column(CheckResult& r, const OpRow& row, const DTypeColumn& tol, const Device& device) {
  const std::string prefix = tol.dtype == DType::f32 ? "" : std::string(dtype_name(tol.dtype)) + " ";
  auto fail = [&r, &prefix](const std::string& what) { test::fail(r, prefix + what); };
  const std::vector<Tensor> cpu = make_inputs(row);

  // The CPU, the reference.
  const std::vector<Tensor> on_cpu = inputs_on(row, cpu, Device::cpu());
  const Tensor want = call_in(row, tol, on_cpu, Device::cpu());
  Tensor upstream;
  if (row.backward) {
    upstream = upstream_for(row, want);
    want.backward(upstream);
  }

  // The device, twice when the row promises the same bits on a second run.
  std::vector<Run> device_runs;
  for (int repeat = 0; repeat < (row.device_repeat ? 2 : 1); ++repeat) {
    const std::vector<Tensor> on_device = inputs_on(row, cpu, device);
    const Tensor upstream_d = upstream.defined() ? upstream.to(device) : Tensor();
    poison_free_blocks({want.shape()}, device);
    const Tensor got = call_in(row, tol, on_device, device);
    if (!(got.device() == device)) {
      fail("parity: the output is on " + got.device().name() + ", not the device");
      return;
    }
    Run d;
    if (row.backward) {
      std::vector<Shape> grad_shapes;
      for (size_t k = 0; k < cpu.size(); ++k)
        if (row.inputs[k].grad) grad_shapes.push_back(cpu[k].shape());
      poison_free_blocks(grad_shapes, device);
      got.backward(upstream_d);
      for (size_t k = 0; k < on_device.size(); ++k)
        if (row.inputs[k].grad) d.grads.push_back(on_device[k].grad().defined() ? on_device[k].grad().cpu() : Tensor());
    }
    d.out = got.cpu();
    device_runs.push_back(d);
  }

  const Run& d = device_runs[0];
  if (std::string m = compare(d.out, want, tol.forward, "forward"); !m.empty()) fail(m);
  if (row.same_zeros && want.dtype() == DType::f32)
    if (std::string m = compare_zeros(d.out, want); !m.empty()) fail(m);
  size_t g = 0;
  for (size_t k = 0; k < on_cpu.size(); ++k) {
    if (!row.inputs[k].grad || !row.backward) continue;
    const Tensor& want_grad = on_cpu[k].grad();
    if (!want_grad.defined() || !d.grads[g].defined()) {
      fail("backward: no gradient of input " + std::to_string(k) + " (" + row.inputs[k].name + ")");
    } else if (std::string m = compare(d.grads[g], want_grad, tol.backward,
                                       "backward, gradient of " + row.inputs[k].name);
               !m.empty()) {
      fail(m);
    }
    ++g;
  }
  if (row.device_repeat) {
    const Run& again = device_runs[1];
    if (!same_bits(again.out, d.out)) fail("repeat: a second device run gave other output bits");
    for (size_t k = 0; k < d.grads.size(); ++k)
      if (!same_bits(again.grads[k], d.grads[k]))
        fail("repeat: a second device run gave other bits for gradient " + std::to_string(k));
  }
}

static CheckResult parity_row_unguarded(const OpRow& row, const Device& device) {
  CheckResult r;
  if (!(row.checks & kParity)) return r;
  r.ran = true;
  for (const DTypeColumn& c : row.dtypes) parity_column(r, row, c, device);
  return r;
}

// A check that throws (an op refusing the row's inputs) is a failure of that row, not the end of
// the loop over the table.
template <typename Fn>
CheckResult guarded(Fn fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    CheckResult r;
    r.ran = true;
    fail(r, std::string("threw: ") + e.what());
    return r;
  }
}

CheckResult gradcheck_row(const OpRow& row) { return guarded([&] { return gradcheck_row_unguarded(row); }); }
CheckResult threads_row(const OpRow& row) { return guarded([&] { return threads_row_unguarded(row); }); }
CheckResult cost_row(const OpRow& row) { return guarded([&] { return cost_row_unguarded(row); }); }
CheckResult parity_row(const OpRow& row, const Device& device) {
  return guarded([&] { return parity_row_unguarded(row, device); });
}

}  // namespace urpe::test
