// Tensor: a contiguous, row-major block of f32 or i32 values, up to 4-D, on one device, with
// shared storage. There are no strides: transposes and permutes are ops that copy. A tensor also
// carries its autograd state (requires_grad, accumulated grad, the node that produced it).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/rng.h"

namespace urpe {

namespace autograd { struct Node; }

using Shape = std::vector<int64_t>;
constexpr int kMaxDims = 4;

std::string shape_str(const Shape& shape);  // "(2, 3, 4)"
// Element count; throws urpe::Error when the product overflows int64.
int64_t shape_numel(const Shape& shape);
// The largest tensor urpe will try to allocate (4 EiB): far beyond any machine, and small enough
// that the allocators' size-class rounding cannot wrap around.
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 62;
// Bytes of a tensor of `shape` (element count × element size); throws urpe::Error naming the
// shape when that exceeds kMaxTensorBytes, so no caller ever sees a wrapped byte count.
size_t tensor_bytes(const Shape& shape, DType dtype);

// Raw memory on one device; freed through that device's allocator.
struct Storage {
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t bytes = 0;
  Device device;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;              // accumulated by backward() on leaves
  std::shared_ptr<autograd::Node> grad_fn;       // the op that produced this tensor, if recorded
  std::string name;                              // optional (parameters), used in messages
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (e.g. an optional argument left out)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, const Device& device = {});
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, const Device& device = {});
  static Tensor ones(const Shape& shape, const Device& device = {});
  static Tensor full(const Shape& shape, float value, const Device& device = {});
  static Tensor arange(int64_t n, DType dtype = DType::i32, const Device& device = {});
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            const Device& device = {});
  static Tensor from_vector(const std::vector<int32_t>& values, const Shape& shape,
                            const Device& device = {});
  // Seeded draws: element k comes from Philox(rng.seed, start + k), whatever the device.
  static Tensor uniform(const Shape& shape, float low, float high, Rng& rng,
                        const Device& device = {});
  static Tensor normal(const Shape& shape, float mean, float stddev, Rng& rng,
                       const Device& device = {});

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int dim() const { return static_cast<int>(impl().shape.size()); }
  int64_t size(int axis) const;  // negative axes count from the end
  int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  const Device& device() const { return impl().storage->device; }
  const std::string& name() const { return impl().name; }
  Tensor& set_name(const std::string& name);
  // "f32 (2, 3) on cpu" (+ the name when set): what error messages show for a tensor.
  std::string describe() const;

  // ---- data access (pointer on the tensor's device) ----
  template <typename T> T* data() const {
    URPE_CHECK(dtype() == dtype_of<T>(), "tensor " << describe() << " accessed as "
                                                   << dtype_name(dtype_of<T>()));
    return static_cast<T*>(impl().storage->data);
  }
  float* f32() const { return data<float>(); }
  int32_t* i32() const { return data<int32_t>(); }

  // ---- copies and views ----
  Tensor to(const Device& device) const;  // copy to another device (self when already there)
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor clone() const;                   // deep copy, no autograd history
  Tensor detach() const;                  // same storage, no autograd history
  // Same storage, new shape (no autograd: use ops::reshape inside differentiable code).
  Tensor view(const Shape& shape) const;
  void copy_from(const Tensor& source) const;  // same shape and dtype, any devices
  void fill(float value) const;           // f32 or i32 (value converted)
  float item() const;                     // a one-element tensor's value
  std::vector<float> to_vector_f32() const;
  std::vector<int32_t> to_vector_i32() const;

  // ---- autograd ----
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& set_requires_grad(bool value);
  Tensor grad() const { return Tensor(impl().grad); }  // undefined until a backward reaches it
  void zero_grad() const { impl().grad.reset(); }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  // Reverse-mode pass from this tensor. A scalar gets gradient 1; otherwise pass `gradient`
  // (same shape). Defined in autograd/backward.cpp.
  void backward(const Tensor& gradient = Tensor()) const;

  std::string to_string(int max_elements = 16) const;  // shape, dtype, device and values
  TensorImpl& impl() const {
    URPE_CHECK(impl_ != nullptr, "use of an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Validation helpers used by every op's public function: throw urpe::Error naming op and tensor.
void check_defined(const char* op, const char* arg, const Tensor& t);
void check_dtype(const char* op, const char* arg, const Tensor& t, DType expected);
void check_dim(const char* op, const char* arg, const Tensor& t, int min_dims, int max_dims);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);

}  // namespace urpe
