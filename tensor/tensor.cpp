// Tensor creation, copies between devices and printing. Device work goes through
// tensor/cuda_backend.h; everything here is plain host code.
#include "tensor/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "tensor/cuda_backend.h"
#include "tensor/host_allocator.h"

namespace urpe {

// ---- shapes ----

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << (shape.size() == 1 ? ",)" : ")");
  return out.str();
}

// The product is checked: a shape whose element count does not fit in int64 (a config asking
// for a 2^58 × 64 table) is an error here, not a count that wraps to a small number and a
// buffer too small for what the ops then write into it.
int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    URPE_CHECK(!__builtin_mul_overflow(n, s, &n),
               "tensor shape " << shape_str(shape) << " has more elements than a 64-bit count holds");
  return n;
}

size_t tensor_bytes(const Shape& shape, DType dtype) {
  const int64_t n = shape_numel(shape);
  const size_t element = dtype_size(dtype);
  URPE_CHECK(n >= 0 && static_cast<uint64_t>(n) <= kMaxTensorBytes / element,
             "tensor shape " << shape_str(shape) << " of " << dtype_name(dtype) << " needs " << n << " × "
                             << element << " bytes, more than any machine's memory");
  return static_cast<size_t>(n) * element;
}

static void check_shape(const Shape& shape) {
  URPE_CHECK(shape.size() <= static_cast<size_t>(kMaxDims),
             "tensor shape " << shape_str(shape) << " has more than " << kMaxDims << " dims");
  for (int64_t s : shape)
    URPE_CHECK(s >= 0, "tensor shape " << shape_str(shape) << " has a negative size");
}

// ---- devices and storage ----

Device Device::cuda(std::shared_ptr<cuda::Context> context) {
  Device d;
  d.kind_ = DeviceKind::cuda;
  d.context_ = std::move(context);
  return d;
}

std::string Device::name() const { return is_cpu() ? "cpu" : "cuda"; }

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  int index = 0;
  if (text.rfind("cuda:", 0) == 0) {
    char* end = nullptr;
    index = static_cast<int>(std::strtol(text.c_str() + 5, &end, 10));
    URPE_CHECK(end && *end == 0 && index >= 0, "device '" << text << "': expected cpu, cuda or cuda:N");
  } else {
    URPE_CHECK(text == "cuda", "device '" << text << "': expected cpu, cuda or cuda:N");
  }
  return Device::cuda(cuda::create_context(index));
}

Storage::Storage(size_t n_bytes, Device dev) : bytes(n_bytes), device(std::move(dev)) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    data = host::allocate(bytes);
  } else {
    data = cuda::allocate(device.context(), bytes);
  }
}

Storage::~Storage() {
  if (!data) return;
  if (device.is_cpu()) host::release(data, bytes);
  else cuda::release(device.context(), data, bytes);
}

// ---- creation ----

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  check_shape(shape);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(tensor_bytes(shape, dtype), device);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  t.fill(0.0f);
  return t;
}

Tensor Tensor::ones(const Shape& shape, const Device& device) { return full(shape, 1.0f, device); }

Tensor Tensor::full(const Shape& shape, float value, const Device& device) {
  Tensor t = empty(shape, DType::f32, device);
  t.fill(value);
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype, const Device& device) {
  Tensor host = empty({n}, dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::f32) host.f32()[i] = static_cast<float>(i);
    else if (dtype == DType::bf16) host.data<bf16>()[i] = to_bf16(static_cast<float>(i));
    else host.i32()[i] = static_cast<int32_t>(i);
  }
  return host.to(device);
}

template <typename T>
static Tensor tensor_from(const std::vector<T>& values, const Shape& shape, const Device& device) {
  URPE_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
             "from_vector: " << values.size() << " values do not fill shape " << shape_str(shape));
  Tensor host = Tensor::empty(shape, dtype_of<T>());
  if (!values.empty()) std::memcpy(host.data<T>(), values.data(), values.size() * sizeof(T));
  return host.to(device);
}

Tensor Tensor::from_vector(const std::vector<float>& v, const Shape& s, const Device& d) {
  return tensor_from(v, s, d);
}
Tensor Tensor::from_vector(const std::vector<int32_t>& v, const Shape& s, const Device& d) {
  return tensor_from(v, s, d);
}

Tensor Tensor::uniform(const Shape& shape, float low, float high, Rng& rng, const Device& device) {
  Tensor host = empty(shape);
  const int64_t n = host.numel();
  const uint64_t start = rng.reserve(n);
  float* p = host.f32();
  for (int64_t k = 0; k < n; ++k) p[k] = low + (high - low) * philox_uniform(rng.seed(), start, k);
  return host.to(device);
}

// Box–Muller on pairs of uniforms: element k uses uniforms 2k and 2k+1 of the stream.
Tensor Tensor::normal(const Shape& shape, float mean, float stddev, Rng& rng, const Device& device) {
  Tensor host = empty(shape);
  const int64_t n = host.numel();
  const uint64_t start = rng.reserve(2 * n);
  float* p = host.f32();
  for (int64_t k = 0; k < n; ++k) {
    const double u1 = 1.0 - philox_uniform(rng.seed(), start, 2 * k);  // (0, 1]
    const double u2 = philox_uniform(rng.seed(), start, 2 * k + 1);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    p[k] = static_cast<float>(mean + stddev * z);
  }
  return host.to(device);
}

// ---- metadata ----

int64_t Tensor::size(int axis) const {
  const int d = dim();
  const int a = axis < 0 ? axis + d : axis;
  URPE_CHECK(a >= 0 && a < d, "axis " << axis << " out of range for " << describe());
  return shape()[a];
}

Tensor& Tensor::set_name(const std::string& name) {
  impl().name = name;
  return *this;
}

std::string Tensor::describe() const {
  if (!defined()) return "<undefined tensor>";
  std::ostringstream out;
  if (!name().empty()) out << "'" << name() << "' ";
  out << dtype_name(dtype()) << " " << shape_str(shape()) << " on " << device().name();
  return out.str();
}

// ---- copies ----

static void copy_bytes(const Device& dst_dev, void* dst, const Device& src_dev, const void* src,
                       size_t bytes) {
  if (bytes == 0) return;
  if (dst_dev.is_cpu() && src_dev.is_cpu()) std::memcpy(dst, src, bytes);
  else if (dst_dev.is_cuda() && src_dev.is_cpu())
    cuda::copy_host_to_device(dst_dev.context(), dst, src, bytes);
  else if (dst_dev.is_cpu() && src_dev.is_cuda())
    cuda::copy_device_to_host(src_dev.context(), dst, src, bytes);
  else cuda::copy_device_to_device(dst_dev.context(), dst, src, bytes);
}

Tensor Tensor::to(const Device& device) const {
  if (this->device() == device) return *this;
  Tensor out = empty(shape(), dtype(), device);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = this->impl().storage;
  impl->shape = shape();
  impl->dtype = dtype();
  return Tensor(std::move(impl));
}

Tensor Tensor::view(const Shape& new_shape) const {
  check_shape(new_shape);
  URPE_CHECK(shape_numel(new_shape) == numel(),
             "view: cannot view " << describe() << " as " << shape_str(new_shape));
  Tensor out = detach();
  out.impl().shape = new_shape;
  return out;
}

void Tensor::copy_from(const Tensor& source) const {
  URPE_CHECK(source.dtype() == dtype() && source.numel() == numel(),
             "copy_from: cannot copy " << source.describe() << " into " << describe());
  copy_bytes(device(), impl().storage->data, source.device(), source.impl().storage->data,
             numel() * dtype_size(dtype()));
}

void Tensor::fill(float value) const {
  const size_t n = static_cast<size_t>(numel());
  if (device().is_cpu()) {
    if (dtype() == DType::f32) std::fill(f32(), f32() + n, value);
    else if (dtype() == DType::bf16) std::fill(data<bf16>(), data<bf16>() + n, to_bf16(value));
    else std::fill(i32(), i32() + n, static_cast<int32_t>(value));
  } else if (dtype() == DType::f32) {
    cuda::fill_f32(device().context(), f32(), n, value);
  } else if (dtype() == DType::bf16) {
    cuda::fill_bf16(device().context(), data<bf16>(), n, to_bf16(value));
  } else {
    cuda::fill_i32(device().context(), i32(), n, static_cast<int32_t>(value));
  }
}

float Tensor::item() const {
  URPE_CHECK(numel() == 1, "item: expected a one-element tensor, got " << describe());
  return cpu().to_vector_f32()[0];
}

// f32 as stored; bf16 widened (exactly); i32 as float.
std::vector<float> Tensor::to_vector_f32() const {
  Tensor host = cpu();
  const int64_t n = numel();
  if (dtype() == DType::f32) return std::vector<float>(host.f32(), host.f32() + n);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    out[k] = dtype() == DType::bf16 ? to_float(host.data<bf16>()[k]) : static_cast<float>(host.i32()[k]);
  return out;
}

std::vector<int32_t> Tensor::to_vector_i32() const {
  Tensor host = cpu();
  const int32_t* p = host.i32();
  return std::vector<int32_t>(p, p + numel());
}

Tensor& Tensor::set_requires_grad(bool value) {
  // Leaves are f32 (parameters are FP32 masters under every precision); a bf16 tensor gets its
  // gradient as the output of a differentiable cast.
  URPE_CHECK(!value || dtype() == DType::f32,
             "requires_grad: only f32 tensors can have gradients, got " << describe());
  impl().requires_grad = value;
  return *this;
}

// ---- printing ----

std::string Tensor::to_string(int max_elements) const {
  std::ostringstream out;
  out << "tensor " << describe() << " [";
  if (defined()) {
    Tensor host = cpu();
    const int64_t n = numel();
    for (int64_t k = 0; k < n && k < max_elements; ++k) {
      out << (k ? ", " : "");
      if (dtype() == DType::f32) out << std::setprecision(6) << host.f32()[k];
      else if (dtype() == DType::bf16) out << std::setprecision(4) << to_float(host.data<bf16>()[k]);
      else out << host.i32()[k];
    }
    if (n > max_elements) out << ", ... (" << n << " values)";
  }
  out << "]";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  return out << tensor.to_string();
}

// ---- validation ----

void check_defined(const char* op, const char* arg, const Tensor& t) {
  URPE_CHECK(t.defined(), op << ": argument '" << arg << "' is an undefined tensor");
}

void check_dtype(const char* op, const char* arg, const Tensor& t, DType expected) {
  check_defined(op, arg, t);
  URPE_CHECK(t.dtype() == expected, op << ": argument '" << arg << "' must be "
                                       << dtype_name(expected) << ", got " << t.describe());
}

void check_dim(const char* op, const char* arg, const Tensor& t, int min_dims, int max_dims) {
  check_defined(op, arg, t);
  URPE_CHECK(t.dim() >= min_dims && t.dim() <= max_dims,
             op << ": argument '" << arg << "' must have "
                << (min_dims == max_dims ? std::to_string(min_dims)
                                         : std::to_string(min_dims) + " to " + std::to_string(max_dims))
                << " dims, got " << t.describe());
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  URPE_CHECK(a.device() == b.device(), op << ": tensors on different devices: " << a.describe()
                                          << " and " << b.describe());
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  URPE_CHECK(a.shape() == b.shape(), op << ": shapes differ: " << a.describe() << " and "
                                        << b.describe());
}

}  // namespace urpe
