//===- IntegerValues.cpp - The evaluator's integer arithmetic -------------===//

#include "IntegerValues.h"

#include <stdexcept>

namespace k = cleave::kernels;

namespace cleave::evaluator {
namespace {

/// Calls f with a value of the C++ type of `type`.
template <typename F> auto withType(mlir::IntegerType type, F &&f) {
  bool u = type.isUnsigned();
  switch (type.getWidth()) {
  case 8:
    return u ? f(uint8_t()) : f(int8_t());
  case 16:
    return u ? f(uint16_t()) : f(int16_t());
  case 32:
    return u ? f(uint32_t()) : f(int32_t());
  case 64:
    return u ? f(uint64_t()) : f(int64_t());
  default:
    throw std::invalid_argument("the evaluator computes on integers of 8, "
                                "16, 32 or 64 bits");
  }
}

template <typename T> k::BasicTensor<T> narrowed(const k::IndexTensor &t) {
  k::BasicTensor<T> out(t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    out[i] = static_cast<T>(t[i]);
  return out;
}

template <typename T> k::IndexTensor held(const k::BasicTensor<T> &t) {
  k::IndexTensor out(t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    out[i] = static_cast<int64_t>(t[i]);
  return out;
}

} // namespace

k::IndexTensor integerBinary(k::IntegerOp op, mlir::IntegerType type,
                             const k::IndexTensor &lhs,
                             const k::IndexTensor &rhs) {
  return withType(type, [&](auto t) {
    using T = decltype(t);
    k::BasicTensor<T> a = narrowed<T>(lhs), b = narrowed<T>(rhs);
    k::BasicTensor<T> out(k::broadcastShape(lhs.shape(), rhs.shape()));
    k::integerBinary<T>(op, a.ref(), b.ref(), out.ref());
    return held(out);
  });
}

k::MaskTensor integerCompare(k::ComparePredicate predicate,
                             mlir::IntegerType type,
                             const k::IndexTensor &lhs,
                             const k::IndexTensor &rhs) {
  return withType(type, [&](auto t) {
    using T = decltype(t);
    k::BasicTensor<T> a = narrowed<T>(lhs), b = narrowed<T>(rhs);
    k::MaskTensor out(k::broadcastShape(lhs.shape(), rhs.shape()));
    k::compareValues<T>(predicate, a.ref(), b.ref(), out.ref());
    return out;
  });
}

k::IndexTensor wrapTo(mlir::IntegerType type, const k::IndexTensor &values) {
  return withType(type, [&](auto t) {
    using T = decltype(t);
    return held(narrowed<T>(values));
  });
}

EvalTensor castHeld(const EvalTensor &in, mlir::Type from, mlir::Type to) {
  // Element i of the input as a double: exact for every held integer but a
  // uint64 above 2^53, as the runtime's conversion through its type is.
  auto fromInt = mlir::dyn_cast<mlir::IntegerType>(from);
  bool unsignedSource = fromInt && fromInt.isUnsigned() && !from.isInteger(1);
  auto element = [&](int64_t i) -> double {
    if (const auto *t = std::get_if<k::Tensor>(&in))
      return (*t)[i];
    if (const auto *t = std::get_if<k::IndexTensor>(&in))
      return unsignedSource ? static_cast<double>(static_cast<uint64_t>((*t)[i]))
                            : static_cast<double>((*t)[i]);
    return std::get<k::MaskTensor>(in)[i];
  };
  k::Shape shape = std::visit([](const auto &t) { return t.shape(); }, in);
  int64_t n = k::numElements(shape);
  if (auto toFloat = mlir::dyn_cast<mlir::FloatType>(to)) {
    // Rounded to the target's precision (bf16, fp16) as its storage
    // would, then held in fp32 like every float here.
    k::Tensor out(shape);
    for (int64_t i = 0; i < n; ++i) {
      llvm::APFloat v(element(i));
      bool lost;
      v.convert(toFloat.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      out[i] = v.convertToFloat();
    }
    return out;
  }
  if (to.isInteger(1)) {
    k::MaskTensor out(shape);
    for (int64_t i = 0; i < n; ++i)
      out[i] = element(i) != 0.0 ? 1 : 0;
    return out;
  }
  auto toInt = mlir::cast<mlir::IntegerType>(to);
  if (const auto *t = std::get_if<k::IndexTensor>(&in))
    return wrapTo(toInt, *t);
  k::IndexTensor truncated(shape);
  for (int64_t i = 0; i < n; ++i)
    truncated[i] = static_cast<int64_t>(element(i));
  return wrapTo(toInt, truncated);
}

int64_t heldValue(mlir::IntegerType type, const llvm::APInt &value) {
  return type.isUnsigned() ? static_cast<int64_t>(value.getZExtValue())
                           : value.getSExtValue();
}

} // namespace cleave::evaluator
