//===- TensorValues.cpp - Reading the elements of tensor constants --------===//

#include "cleave/Dialect/Graph/IR/TensorValues.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"

#include <cstring>

using namespace mlir;

namespace cleave::graph {

namespace {

/// What an element is, from the tensor's element type.
struct ElementKind {
  enum Class { Float, Integer, Bool } cls;
  // Bits of one element; for floats the semantics too.
  unsigned width = 0;
  bool isUnsigned = false;
  const llvm::fltSemantics *semantics = nullptr;
};

FailureOr<ElementKind> kindOf(ElementsAttr attr, EmitErrorFn emitError) {
  Type e = attr.getElementType();
  if (auto f = dyn_cast<FloatType>(e))
    return ElementKind{ElementKind::Float, f.getWidth(), false,
                       &f.getFloatSemantics()};
  if (e.isInteger(1))
    return ElementKind{ElementKind::Bool, 1};
  if (auto i = dyn_cast<IntegerType>(e); i && i.getWidth() % 8 == 0 &&
                                         i.getWidth() <= 64)
    return ElementKind{ElementKind::Integer, i.getWidth(), i.isUnsigned()};
  return emitError() << "cannot read the elements of a tensor of " << e;
}

/// The packed little-endian elements of a `dense_resource` value, checked
/// against its type (one element of the type's width each, i1 one byte).
FailureOr<ArrayRef<char>> resourceBytes(DenseResourceElementsAttr attr,
                                        const ElementKind &kind,
                                        EmitErrorFn emitError) {
  const AsmResourceBlob *blob = attr.getRawHandle().getBlob();
  if (!blob)
    return emitError() << "the resource '" << attr.getRawHandle().getKey()
                       << "' holding this tensor's values is missing";
  ArrayRef<char> data = blob->getData();
  int64_t bytes = std::max<unsigned>(kind.width, 8) / 8;
  int64_t n = attr.getNumElements();
  if (static_cast<int64_t>(data.size()) != n * bytes)
    return emitError() << "the resource '" << attr.getRawHandle().getKey()
                       << "' holds " << data.size() << " bytes, not the "
                       << n * bytes << " of " << attr.getType();
  return data;
}

/// Calls `f(i, value)` for every element, reading a dense attribute or a
/// resource blob. Float elements are APFloats; integers and bools APInts.
template <typename Fn>
LogicalResult visitElements(ElementsAttr attr, const ElementKind &kind,
                            EmitErrorFn emitError, Fn &&f) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    FailureOr<ArrayRef<char>> data = resourceBytes(resource, kind, emitError);
    if (failed(data))
      return failure();
    int64_t bytes = std::max<unsigned>(kind.width, 8) / 8;
    int64_t n = resource.getNumElements();
    for (int64_t i = 0; i < n; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, data->data() + i * bytes, bytes); // little-endian host
      if (kind.cls == ElementKind::Float)
        f(i, APFloat(*kind.semantics, APInt(kind.width, bits)));
      else
        f(i, APInt(std::max(kind.width, 1u), bits, false, true));
    }
    return success();
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    int64_t i = 0;
    if (kind.cls == ElementKind::Float) {
      for (APFloat v : dense.getValues<APFloat>())
        f(i++, std::move(v));
    } else if (kind.cls == ElementKind::Bool) {
      for (bool v : dense.getValues<bool>())
        f(i++, APInt(1, v));
    } else {
      for (APInt v : dense.getValues<APInt>())
        f(i++, std::move(v));
    }
    return success();
  }
  return emitError() << "cannot read the elements of a " << attr
                     << " attribute (dense or dense_resource values expected)";
}

} // namespace

FailureOr<std::vector<float>> readFloatElements(ElementsAttr attr,
                                                EmitErrorFn emitError) {
  FailureOr<ElementKind> kind = kindOf(attr, emitError);
  if (failed(kind))
    return failure();
  std::vector<float> out(attr.getNumElements());
  auto put = [&](int64_t i, auto v) {
    if constexpr (std::is_same_v<decltype(v), APFloat>) {
      bool lost;
      v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      out[i] = v.convertToFloat();
    } else {
      out[i] = kind->isUnsigned || kind->cls == ElementKind::Bool
                   ? static_cast<float>(v.getZExtValue())
                   : static_cast<float>(v.getSExtValue());
    }
  };
  // The common case in one pass without APFloat: fp32 weights in a blob.
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
      resource && kind->cls == ElementKind::Float && kind->width == 32 &&
      kind->semantics == &APFloat::IEEEsingle()) {
    FailureOr<ArrayRef<char>> data = resourceBytes(resource, *kind, emitError);
    if (failed(data))
      return failure();
    std::memcpy(out.data(), data->data(), data->size());
    return out;
  }
  if (failed(visitElements(attr, *kind, emitError, put)))
    return failure();
  return out;
}

FailureOr<std::vector<int64_t>> readIntegerElements(ElementsAttr attr,
                                                    EmitErrorFn emitError) {
  FailureOr<ElementKind> kind = kindOf(attr, emitError);
  if (failed(kind))
    return failure();
  if (kind->cls == ElementKind::Float)
    return emitError() << "integer elements expected, not " << attr.getType();
  std::vector<int64_t> out(attr.getNumElements());
  auto put = [&](int64_t i, auto v) {
    if constexpr (std::is_same_v<decltype(v), APInt>)
      out[i] = kind->isUnsigned || kind->cls == ElementKind::Bool
                   ? static_cast<int64_t>(v.getZExtValue())
                   : v.getSExtValue();
  };
  if (failed(visitElements(attr, *kind, emitError, put)))
    return failure();
  return out;
}

FailureOr<std::string> readElementBytes(ElementsAttr attr,
                                        ElementStorage storage,
                                        EmitErrorFn emitError) {
  bool floatStorage = storage == ElementStorage::F32 ||
                      storage == ElementStorage::BF16 ||
                      storage == ElementStorage::F16;
  bool isFloat = isa<FloatType>(attr.getElementType());
  if (floatStorage != isFloat)
    return emitError() << "a tensor of " << attr.getType() << " cannot be stored as "
                       << (floatStorage ? "floats" : "integers");
  std::string out;
  if (storage == ElementStorage::F32) {
    FailureOr<std::vector<float>> values = readFloatElements(attr, emitError);
    if (failed(values))
      return failure();
    out.assign(reinterpret_cast<const char *>(values->data()),
               values->size() * sizeof(float));
    return out;
  }
  if (floatStorage) {
    FailureOr<ElementKind> kind = kindOf(attr, emitError);
    if (failed(kind))
      return failure();
    const llvm::fltSemantics &semantics = storage == ElementStorage::BF16
                                              ? APFloat::BFloat()
                                              : APFloat::IEEEhalf();
    out.resize(attr.getNumElements() * 2);
    auto put = [&](int64_t i, auto v) {
      if constexpr (std::is_same_v<decltype(v), APFloat>) {
        bool lost;
        v.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
        uint16_t h = static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    };
    if (failed(visitElements(attr, *kind, emitError, put)))
      return failure();
    return out;
  }
  FailureOr<std::vector<int64_t>> values = readIntegerElements(attr, emitError);
  if (failed(values))
    return failure();
  int64_t width = 1;
  switch (storage) {
  case ElementStorage::Int16:
    width = 2;
    break;
  case ElementStorage::Int32:
    width = 4;
    break;
  case ElementStorage::Int64:
    width = 8;
    break;
  default:
    break;
  }
  out.resize(values->size() * width);
  for (size_t i = 0; i < values->size(); ++i) {
    uint64_t bits = static_cast<uint64_t>((*values)[i]);
    for (int64_t b = 0; b < width; ++b)
      out[i * width + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return out;
}

} // namespace cleave::graph
