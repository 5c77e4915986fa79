//===- OnnxConstantFolding.cpp - Host-side evaluation of ONNX ops ---------===//
//
// Integers are computed in int64 with wrap-around (unsigned arithmetic, so
// overflow is defined), floating-point values in double: the results only
// size shapes and fill small constants, so the extra precision is harmless.
//
//===----------------------------------------------------------------------===//

#include "OnnxConstantFolding.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <cmath>
#include <limits>

using llvm::ArrayRef;
using llvm::Twine;
using onnx::TensorProto;

namespace cleave::onnx_import {

static llvm::Error error(const Twine &message) {
  return llvm::createStringError(message);
}

/// For each element of `out` (row-major), the index of the element of a
/// tensor of shape `in` that numpy broadcasting reads.
static std::vector<int64_t> broadcastIndices(ArrayRef<int64_t> in,
                                             ArrayRef<int64_t> out) {
  size_t rank = out.size();
  size_t offset = rank - in.size();
  // Strides of `in` aligned to `out`, zero on broadcast dimensions.
  Shape strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    strides[offset + i] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  int64_t n = product(out);
  std::vector<int64_t> indices(n);
  Shape counter(rank, 0);
  int64_t source = 0;
  for (int64_t k = 0; k < n; ++k) {
    indices[k] = source;
    for (size_t d = rank; d-- > 0;) {
      source += strides[d];
      if (++counter[d] < out[d])
        break;
      source -= strides[d] * out[d];
      counter[d] = 0;
    }
  }
  return indices;
}

static bool isComparison(HostBinaryOp op) {
  return op == HostBinaryOp::Equal || op == HostBinaryOp::Less ||
         op == HostBinaryOp::Greater || op == HostBinaryOp::LessOrEqual ||
         op == HostBinaryOp::GreaterOrEqual;
}

static bool isLogical(HostBinaryOp op) {
  return op == HostBinaryOp::And || op == HostBinaryOp::Or ||
         op == HostBinaryOp::Xor;
}

template <typename T>
static std::optional<bool> compare(HostBinaryOp op, T a, T b) {
  switch (op) {
  case HostBinaryOp::Equal:
    return a == b;
  case HostBinaryOp::Less:
    return a < b;
  case HostBinaryOp::Greater:
    return a > b;
  case HostBinaryOp::LessOrEqual:
    return a <= b;
  case HostBinaryOp::GreaterOrEqual:
    return a >= b;
  default:
    return std::nullopt;
  }
}

static double floatBinary(HostBinaryOp op, double a, double b) {
  switch (op) {
  case HostBinaryOp::Add:
    return a + b;
  case HostBinaryOp::Sub:
    return a - b;
  case HostBinaryOp::Mul:
    return a * b;
  case HostBinaryOp::Div:
    return a / b;
  case HostBinaryOp::Mod:
  case HostBinaryOp::FMod:
    return std::fmod(a, b);
  case HostBinaryOp::Pow:
    return std::pow(a, b);
  case HostBinaryOp::Max:
    return std::max(a, b);
  default: // Min
    return std::min(a, b);
  }
}

static llvm::Expected<int64_t> intBinary(HostBinaryOp op, int64_t a,
                                         int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
  case HostBinaryOp::Add:
    return static_cast<int64_t>(ua + ub);
  case HostBinaryOp::Sub:
    return static_cast<int64_t>(ua - ub);
  case HostBinaryOp::Mul:
    return static_cast<int64_t>(ua * ub);
  case HostBinaryOp::Div:
    if (b == 0)
      return error("integer division by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      return a;
    return a / b; // truncates towards zero, like ONNX Runtime
  case HostBinaryOp::Mod: {
    if (b == 0)
      return error("integer modulo by zero");
    if (b == -1)
      return 0;
    int64_t r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
  }
  case HostBinaryOp::FMod:
    if (b == 0)
      return error("integer modulo by zero");
    return b == -1 ? 0 : a % b; // truncated: the dividend's sign
  case HostBinaryOp::Pow: {
    if (b < 0)
      return error("integer power with a negative exponent");
    uint64_t r = 1;
    for (int64_t i = 0; i < b && i < 64; ++i)
      r *= ua;
    return static_cast<int64_t>(r);
  }
  case HostBinaryOp::Max:
    return std::max(a, b);
  case HostBinaryOp::Min:
    return std::min(a, b);
  case HostBinaryOp::And:
    return (a != 0) && (b != 0);
  case HostBinaryOp::Or:
    return (a != 0) || (b != 0);
  case HostBinaryOp::Xor:
    return (a != 0) != (b != 0);
  default:
    return *compare(op, a, b);
  }
}

llvm::Expected<HostTensor> foldBinary(HostBinaryOp op, const HostTensor &lhs,
                                      const HostTensor &rhs) {
  if (lhs.isFloat() != rhs.isFloat())
    return error("operand types " + dataTypeName(lhs.dtype) + " and " +
                 dataTypeName(rhs.dtype) + " differ");
  if (isLogical(op) &&
      (lhs.dtype != TensorProto::BOOL || rhs.dtype != TensorProto::BOOL))
    return error("logical operators need bool operands");
  llvm::Expected<Shape> shape = broadcast(lhs.shape, rhs.shape);
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> li = broadcastIndices(lhs.shape, *shape);
  std::vector<int64_t> ri = broadcastIndices(rhs.shape, *shape);

  bool boolResult = isComparison(op) || isLogical(op);
  HostTensor out = HostTensor::zeros(
      boolResult ? static_cast<int32_t>(TensorProto::BOOL) : lhs.dtype, *shape);
  for (size_t k = 0; k < li.size(); ++k) {
    if (lhs.isFloat()) {
      double a = lhs.floats[li[k]], b = rhs.floats[ri[k]];
      if (boolResult)
        out.ints[k] = *compare(op, a, b);
      else
        out.floats[k] = floatBinary(op, a, b);
      continue;
    }
    llvm::Expected<int64_t> v = intBinary(op, lhs.ints[li[k]], rhs.ints[ri[k]]);
    if (!v)
      return v.takeError();
    out.ints[k] = *v;
  }
  return out;
}

llvm::Expected<HostTensor> foldUnary(HostUnaryOp op, const HostTensor &input) {
  HostTensor out = input;
  if (op == HostUnaryOp::Not) {
    if (input.dtype != TensorProto::BOOL)
      return error("Not needs a bool operand");
    for (int64_t &v : out.ints)
      v = !v;
    return out;
  }
  if (!input.isFloat()) {
    for (int64_t &v : out.ints) {
      switch (op) {
      case HostUnaryOp::Neg:
        v = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
        break;
      case HostUnaryOp::Abs:
        v = v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v;
        break;
      case HostUnaryOp::Relu:
        v = std::max<int64_t>(v, 0);
        break;
      case HostUnaryOp::Floor:
      case HostUnaryOp::Ceil:
        break;
      default:
        return error("this operator needs a floating-point operand");
      }
    }
    return out;
  }
  for (double &v : out.floats) {
    switch (op) {
    case HostUnaryOp::Neg:
      v = -v;
      break;
    case HostUnaryOp::Abs:
      v = std::fabs(v);
      break;
    case HostUnaryOp::Relu:
      v = std::max(v, 0.0);
      break;
    case HostUnaryOp::Sqrt:
      v = std::sqrt(v);
      break;
    case HostUnaryOp::Exp:
      v = std::exp(v);
      break;
    case HostUnaryOp::Log:
      v = std::log(v);
      break;
    case HostUnaryOp::Erf:
      v = std::erf(v);
      break;
    case HostUnaryOp::Sigmoid:
      v = 1.0 / (1.0 + std::exp(-v));
      break;
    case HostUnaryOp::Tanh:
      v = std::tanh(v);
      break;
    case HostUnaryOp::Reciprocal:
      v = 1.0 / v;
      break;
    case HostUnaryOp::Floor:
      v = std::floor(v);
      break;
    case HostUnaryOp::Ceil:
      v = std::ceil(v);
      break;
    case HostUnaryOp::Not:
      break;
    }
  }
  return out;
}

llvm::Expected<HostTensor> foldWhere(const HostTensor &cond,
                                     const HostTensor &lhs,
                                     const HostTensor &rhs) {
  if (cond.dtype != TensorProto::BOOL)
    return error("Where needs a bool condition");
  if (lhs.isFloat() != rhs.isFloat())
    return error("Where operands " + dataTypeName(lhs.dtype) + " and " +
                 dataTypeName(rhs.dtype) + " differ");
  llvm::Expected<Shape> partial = broadcast(cond.shape, lhs.shape);
  if (!partial)
    return partial.takeError();
  llvm::Expected<Shape> shape = broadcast(*partial, rhs.shape);
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> ci = broadcastIndices(cond.shape, *shape);
  std::vector<int64_t> li = broadcastIndices(lhs.shape, *shape);
  std::vector<int64_t> ri = broadcastIndices(rhs.shape, *shape);
  HostTensor out = HostTensor::zeros(lhs.dtype, *shape);
  for (size_t k = 0; k < ci.size(); ++k) {
    if (cond.ints[ci[k]])
      out.copyElement(k, lhs, li[k]);
    else
      out.copyElement(k, rhs, ri[k]);
  }
  return out;
}

/// Wraps `v` to the range of integer type `dtype`, as a C cast would.
static int64_t wrapToType(int64_t v, int32_t dtype) {
  switch (dtype) {
  case TensorProto::INT32:
    return static_cast<int32_t>(v);
  case TensorProto::INT16:
    return static_cast<int16_t>(v);
  case TensorProto::INT8:
    return static_cast<int8_t>(v);
  case TensorProto::UINT32:
    return static_cast<uint32_t>(v);
  case TensorProto::UINT16:
    return static_cast<uint16_t>(v);
  case TensorProto::UINT8:
    return static_cast<uint8_t>(v);
  case TensorProto::BOOL:
    return v != 0;
  default:
    return v;
  }
}

llvm::Expected<HostTensor> foldCast(const HostTensor &input, int32_t to,
                                    int64_t *unrepresentable) {
  if (!isSupportedType(to))
    return error("cannot cast to " + dataTypeName(to));
  HostTensor out = HostTensor::zeros(to, input.shape);
  for (int64_t k = 0, n = input.size(); k < n; ++k) {
    if (isFloatType(to)) {
      double v = input.getDouble(k);
      // Round through float so that later host arithmetic sees the value
      // the model would.
      out.floats[k] = to == TensorProto::FLOAT ? static_cast<float>(v) : v;
      continue;
    }
    if (input.isFloat()) {
      double v = input.floats[k];
      if (to == TensorProto::BOOL) {
        out.ints[k] = v != 0.0;
        continue;
      }
      bool wide = to == TensorProto::INT64 || to == TensorProto::UINT64;
      double limit = wide ? 9.2e18 : 2147483647.0;
      if (!std::isfinite(v) || std::fabs(v) > limit) {
        out.ints[k] = wrapToType(wide ? std::numeric_limits<int64_t>::min()
                                      : std::numeric_limits<int32_t>::min(),
                                 to);
        if (unrepresentable)
          ++*unrepresentable;
        continue;
      }
      out.ints[k] = wrapToType(static_cast<int64_t>(v), to);
      continue;
    }
    out.ints[k] = wrapToType(input.ints[k], to);
  }
  return out;
}

llvm::Expected<HostTensor> foldGather(const HostTensor &data,
                                      const HostTensor &indices, int64_t axis) {
  if (indices.isFloat())
    return error("Gather indices must be integers");
  int64_t dim = data.shape[axis];
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  int64_t outer = product(ArrayRef<int64_t>(data.shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
  HostTensor out = HostTensor::zeros(data.dtype, shape);
  int64_t n = indices.size(), k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t index = indices.ints[j];
      if (index < -dim || index >= dim)
        return error("Gather index " + Twine(index) +
                     " is out of range for dimension of size " + Twine(dim));
      if (index < 0)
        index += dim;
      for (int64_t i = 0; i < inner; ++i)
        out.copyElement(k++, data, (o * dim + index) * inner + i);
    }
  }
  return out;
}

HostTensor foldTranspose(const HostTensor &input, ArrayRef<int64_t> perm) {
  size_t rank = perm.size();
  Shape shape, inStrides(rank, 1);
  for (size_t i = rank; i-- > 1;)
    inStrides[i - 1] = inStrides[i] * input.shape[i];
  Shape strides; // input stride of each result dimension
  for (int64_t p : perm) {
    shape.push_back(input.shape[p]);
    strides.push_back(inStrides[p]);
  }
  HostTensor out = HostTensor::zeros(input.dtype, shape);
  Shape counter(rank, 0);
  int64_t source = 0;
  for (int64_t k = 0, n = out.size(); k < n; ++k) {
    out.copyElement(k, input, source);
    for (size_t d = rank; d-- > 0;) {
      source += strides[d];
      if (++counter[d] < shape[d])
        break;
      source -= strides[d] * shape[d];
      counter[d] = 0;
    }
  }
  return out;
}

llvm::Expected<HostTensor> foldConcat(ArrayRef<const HostTensor *> inputs,
                                      int64_t axis) {
  const HostTensor &first = *inputs.front();
  Shape shape = first.shape;
  shape[axis] = 0;
  for (const HostTensor *t : inputs) {
    if (t->shape.size() != first.shape.size() ||
        t->isFloat() != first.isFloat())
      return error("Concat inputs differ in rank or type");
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != axis && t->shape[d] != first.shape[d])
        return error("Concat inputs " + shapeToString(first.shape) + " and " +
                     shapeToString(t->shape) + " differ outside the axis");
    shape[axis] += t->shape[axis];
  }
  HostTensor out = HostTensor::zeros(first.dtype, shape);
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor *t : inputs) {
      int64_t chunk = product(ArrayRef<int64_t>(t->shape).drop_front(axis));
      for (int64_t i = 0; i < chunk; ++i)
        out.copyElement(k++, *t, o * chunk + i);
    }
  }
  return out;
}

HostTensor foldSlice(const HostTensor &input, const SliceSpec &spec) {
  size_t rank = input.shape.size();
  Shape inStrides(rank, 1);
  for (size_t i = rank; i-- > 1;)
    inStrides[i - 1] = inStrides[i] * input.shape[i];
  HostTensor out = HostTensor::zeros(input.dtype, spec.sizes);
  if (out.size() == 0)
    return out;
  int64_t source = 0;
  for (size_t d = 0; d < rank; ++d)
    source += spec.starts[d] * inStrides[d];
  Shape counter(rank, 0);
  for (int64_t k = 0, n = out.size(); k < n; ++k) {
    out.copyElement(k, input, source);
    for (size_t d = rank; d-- > 0;) {
      source += spec.steps[d] * inStrides[d];
      if (++counter[d] < spec.sizes[d])
        break;
      source -= spec.steps[d] * inStrides[d] * spec.sizes[d];
      counter[d] = 0;
    }
  }
  return out;
}

llvm::Expected<HostTensor> foldExpand(const HostTensor &input,
                                      ArrayRef<int64_t> target) {
  llvm::Expected<Shape> shape = broadcast(input.shape, target);
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> indices = broadcastIndices(input.shape, *shape);
  HostTensor out = HostTensor::zeros(input.dtype, *shape);
  for (size_t k = 0; k < indices.size(); ++k)
    out.copyElement(k, input, indices[k]);
  return out;
}

llvm::Expected<HostTensor> foldRange(const HostTensor &start,
                                     const HostTensor &limit,
                                     const HostTensor &delta) {
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
    return error("Range needs scalar start, limit and delta");
  double s = start.getDouble(0), l = limit.getDouble(0), d = delta.getDouble(0);
  if (d == 0)
    return error("Range delta must not be 0");
  double count = std::ceil((l - s) / d);
  if (!(count <= static_cast<double>(kMaxHostElements)))
    return error("Range of " + std::to_string(count) +
                 " elements is too large");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  HostTensor out = HostTensor::zeros(start.dtype, {n});
  for (int64_t k = 0; k < n; ++k) {
    if (out.isFloat())
      out.floats[k] = s + k * d;
    else
      out.ints[k] = start.ints[0] + k * delta.ints[0];
  }
  return out;
}

} // namespace cleave::onnx_import
