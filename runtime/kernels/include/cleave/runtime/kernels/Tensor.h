//===- Tensor.h - Tensor views and owning tensors of the kernels -*- C++
//-*-===//
//
// Every kernel reads and writes dense row-major tensors through small
// non-owning views, so that the graph evaluator (which owns its buffers in
// `Tensor`s) and the runtime (which owns arena memory) call the same code.
// Kernels never allocate their outputs: the caller passes views of the right
// shape (the `*Shape` helpers next to each kernel compute them).
//
// Conventions shared by all kernels:
// - Shapes are checked; a mismatch throws std::invalid_argument, because a
//   wrong shape here is a bug in the caller that must not corrupt memory.
// - Gradient outputs are overwritten, never accumulated into, and a view
//   with a null `data` means "not wanted" (the kernel skips that gradient).
//   Optional inputs (a norm's scale or bias, a conv's bias) are likewise
//   absent when their `data` is null.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_TENSOR_H
#define CLEAVE_RUNTIME_KERNELS_TENSOR_H

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace cleave::kernels {

using Shape = std::vector<int64_t>;

/// Product of the dimensions (1 for a scalar).
int64_t numElements(const Shape &shape);

/// Row-major strides of `shape` in elements.
Shape rowMajorStrides(const Shape &shape);

/// The numpy broadcast of two shapes; throws if they do not broadcast.
Shape broadcastShape(const Shape &a, const Shape &b);

/// A non-owning view of a dense row-major tensor of `T`.
template <typename T> struct View {
  T *data = nullptr;
  Shape shape;

  View() = default;
  View(T *data, Shape shape) : data(data), shape(std::move(shape)) {}
  /// A view of mutable data also views it read-only.
  template <typename U,
            typename = std::enable_if_t<std::is_same_v<const U, T> &&
                                        !std::is_same_v<U, T>>>
  View(const View<U> &other) : data(other.data), shape(other.shape) {}

  int64_t numElements() const { return kernels::numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  explicit operator bool() const { return data != nullptr; }
};

using TensorRef = View<float>;
using ConstTensorRef = View<const float>;
using IndexRef = View<const int64_t>;
/// An index tensor a kernel writes (moe_gate's expert indices).
using MutableIndexRef = View<int64_t>;
/// A boolean tensor, one byte per element (0 is false).
using MaskRef = View<const uint8_t>;

/// An owning dense tensor, for tests, the graph evaluator and other callers
/// that do not manage their own memory.
template <typename T> class BasicTensor {
public:
  using value_type = T;
  BasicTensor() = default;
  explicit BasicTensor(Shape shape, T fill = T())
      : shape_(std::move(shape)), data_(kernels::numElements(shape_), fill) {}
  BasicTensor(Shape shape, std::vector<T> values)
      : shape_(std::move(shape)), data_(std::move(values)) {
    checkSize();
  }
  BasicTensor(Shape shape, std::initializer_list<T> values)
      : shape_(std::move(shape)), data_(values) {
    checkSize();
  }

  const Shape &shape() const { return shape_; }
  int64_t numElements() const { return static_cast<int64_t>(data_.size()); }
  T *data() { return data_.data(); }
  const T *data() const { return data_.data(); }
  std::vector<T> &values() { return data_; }
  const std::vector<T> &values() const { return data_; }
  T &operator[](int64_t i) { return data_[i]; }
  const T &operator[](int64_t i) const { return data_[i]; }

  View<T> ref() { return {data_.data(), shape_}; }
  View<const T> ref() const { return {data_.data(), shape_}; }
  operator View<T>() { return ref(); }
  operator View<const T>() const { return ref(); }

private:
  void checkSize() const;

  Shape shape_;
  std::vector<T> data_;
};

using Tensor = BasicTensor<float>;
using IndexTensor = BasicTensor<int64_t>;
using MaskTensor = BasicTensor<uint8_t>;

/// Throws std::invalid_argument with `message`; out of line so that the
/// checks in hot kernels stay small.
[[noreturn]] void throwInvalid(const std::string &message);

/// "[2, 3, 4]", for messages.
std::string shapeString(const Shape &shape);

template <typename T> void BasicTensor<T>::checkSize() const {
  if (static_cast<int64_t>(data_.size()) != kernels::numElements(shape_))
    throwInvalid("tensor values do not match the number of elements");
}

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_TENSOR_H
