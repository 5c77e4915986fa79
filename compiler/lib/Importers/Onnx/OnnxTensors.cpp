//===- OnnxTensors.cpp - Host-side tensors of the ONNX importer -----------===//
//
// ONNX stores tensor data either as little-endian `raw_data` or in a typed
// repeated field whose C++ type depends on the data type (16-bit floats and
// all integers narrower than 32 bits travel in `int32_data`). Both forms are
// read here, with the element count checked against the dims, so that a
// malformed file gives an error instead of reading out of bounds.
//
//===----------------------------------------------------------------------===//

#include "OnnxTensors.h"

#include <cmath>

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using llvm::APFloat;
using llvm::APInt;
using onnx::TensorProto;

namespace cleave::onnx_import {

bool isFloatType(int32_t dtype) {
  return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE ||
         dtype == TensorProto::FLOAT16 || dtype == TensorProto::BFLOAT16;
}

bool isSupportedType(int32_t dtype) {
  switch (dtype) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT64:
  case TensorProto::INT32:
  case TensorProto::INT16:
  case TensorProto::INT8:
  case TensorProto::UINT64:
  case TensorProto::UINT32:
  case TensorProto::UINT16:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return true;
  default:
    return false;
  }
}

StringRef dataTypeName(int32_t dtype) {
  switch (dtype) {
  case TensorProto::FLOAT:
    return "float";
  case TensorProto::DOUBLE:
    return "double";
  case TensorProto::FLOAT16:
    return "float16";
  case TensorProto::BFLOAT16:
    return "bfloat16";
  case TensorProto::INT64:
    return "int64";
  case TensorProto::INT32:
    return "int32";
  case TensorProto::INT16:
    return "int16";
  case TensorProto::INT8:
    return "int8";
  case TensorProto::UINT64:
    return "uint64";
  case TensorProto::UINT32:
    return "uint32";
  case TensorProto::UINT16:
    return "uint16";
  case TensorProto::UINT8:
    return "uint8";
  case TensorProto::BOOL:
    return "bool";
  case TensorProto::STRING:
    return "string";
  default:
    return "unsupported data type";
  }
}

Type getElementType(MLIRContext *ctx, int32_t dtype) {
  if (!isSupportedType(dtype))
    return {};
  // Signed ONNX integers are MLIR's signless ones (what indices and shapes
  // use); unsigned ones are MLIR's unsigned types, so that run-time
  // division, remainders, min, max and comparisons treat them as unsigned.
  switch (dtype) {
  case TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TensorProto::INT64:
    return IntegerType::get(ctx, 64);
  case TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case TensorProto::INT16:
    return IntegerType::get(ctx, 16);
  case TensorProto::INT8:
    return IntegerType::get(ctx, 8);
  case TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  default:
    return {};
  }
}

int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeToString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

HostTensor HostTensor::zeros(int32_t dtype, ArrayRef<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  if (t.isFloat())
    t.floats.assign(t.size(), 0.0);
  else
    t.ints.assign(t.size(), 0);
  return t;
}

HostTensor HostTensor::int64Vector(ArrayRef<int64_t> values) {
  HostTensor t;
  t.dtype = TensorProto::INT64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.ints.assign(values.begin(), values.end());
  return t;
}

//===----------------------------------------------------------------------===//
// Reading TensorProtos
//===----------------------------------------------------------------------===//

static llvm::Error tensorError(const TensorProto &t, const Twine &message) {
  return llvm::createStringError("tensor '" + t.name() + "': " + message);
}

static double halfBitsToDouble(uint16_t bits, bool bfloat) {
  APFloat f(bfloat ? APFloat::BFloat() : APFloat::IEEEhalf(), APInt(16, bits));
  return f.convertToDouble();
}

/// Appends the `n` little-endian elements of type T in `raw`, converted by
/// `convert`, to `out`.
template <typename T, typename OutT, typename Fn>
static bool readRaw(const std::string &raw, int64_t n, std::vector<OutT> &out,
                    Fn convert) {
  if (static_cast<int64_t>(raw.size()) != n * static_cast<int64_t>(sizeof(T)))
    return false;
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out.push_back(convert(v));
  }
  return true;
}

template <typename Field, typename OutT, typename Fn>
static bool readField(const Field &field, int64_t n, std::vector<OutT> &out,
                      Fn convert) {
  if (field.size() != n)
    return false;
  out.reserve(n);
  for (auto v : field)
    out.push_back(convert(v));
  return true;
}

llvm::Expected<HostTensor> readTensor(const TensorProto &t) {
  if (t.data_location() == TensorProto::EXTERNAL)
    return tensorError(t, "its data is in an external file, which the "
                          "importer does not read");
  HostTensor r;
  r.dtype = t.data_type();
  for (int64_t d : t.dims()) {
    if (d < 0)
      return tensorError(t, "negative dimension " + Twine(d));
    r.shape.push_back(d);
  }
  int64_t n = r.size();
  bool raw = t.has_raw_data();
  const std::string &bytes = t.raw_data();
  auto same = [](auto v) { return v; };
  bool ok = false;
  switch (r.dtype) {
  case TensorProto::FLOAT: {
    auto cvt = [](float v) { return static_cast<double>(v); };
    ok = raw ? readRaw<float>(bytes, n, r.floats, cvt)
             : readField(t.float_data(), n, r.floats, cvt);
    break;
  }
  case TensorProto::DOUBLE:
    ok = raw ? readRaw<double>(bytes, n, r.floats, same)
             : readField(t.double_data(), n, r.floats, same);
    break;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16: {
    bool bf = r.dtype == TensorProto::BFLOAT16;
    auto cvt = [bf](auto bits) {
      return halfBitsToDouble(static_cast<uint16_t>(bits), bf);
    };
    ok = raw ? readRaw<uint16_t>(bytes, n, r.floats, cvt)
             : readField(t.int32_data(), n, r.floats, cvt);
    break;
  }
  case TensorProto::INT64:
    ok = raw ? readRaw<int64_t>(bytes, n, r.ints, same)
             : readField(t.int64_data(), n, r.ints, same);
    break;
  case TensorProto::UINT64:
  case TensorProto::UINT32: {
    auto cvt = [](auto v) { return static_cast<int64_t>(v); };
    ok = raw ? (r.dtype == TensorProto::UINT64
                    ? readRaw<uint64_t>(bytes, n, r.ints, cvt)
                    : readRaw<uint32_t>(bytes, n, r.ints, cvt))
             : readField(t.uint64_data(), n, r.ints, cvt);
    break;
  }
  case TensorProto::INT32:
  case TensorProto::INT16:
  case TensorProto::INT8:
  case TensorProto::UINT16:
  case TensorProto::UINT8:
  case TensorProto::BOOL: {
    auto cvt = [](auto v) { return static_cast<int64_t>(v); };
    if (!raw) {
      ok = readField(t.int32_data(), n, r.ints, cvt);
      break;
    }
    switch (r.dtype) {
    case TensorProto::INT32:
      ok = readRaw<int32_t>(bytes, n, r.ints, cvt);
      break;
    case TensorProto::INT16:
      ok = readRaw<int16_t>(bytes, n, r.ints, cvt);
      break;
    case TensorProto::INT8:
      ok = readRaw<int8_t>(bytes, n, r.ints, cvt);
      break;
    case TensorProto::UINT16:
      ok = readRaw<uint16_t>(bytes, n, r.ints, cvt);
      break;
    default: // UINT8, BOOL: one byte each
      ok = readRaw<uint8_t>(bytes, n, r.ints, cvt);
      break;
    }
    if (ok && r.dtype == TensorProto::BOOL)
      for (int64_t &v : r.ints)
        v = v != 0;
    break;
  }
  default:
    return tensorError(t, "data type " + dataTypeName(r.dtype) +
                              " is not supported");
  }
  if (!ok)
    return tensorError(t, "its data does not hold the " + Twine(n) +
                              " elements of its dims " +
                              shapeToString(r.shape));
  return r;
}

RankedTensorType getTensorType(MLIRContext *ctx, const TensorProto &tensor) {
  Type element = getElementType(ctx, tensor.data_type());
  Shape shape(tensor.dims().begin(), tensor.dims().end());
  if (!element || llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return {};
  return RankedTensorType::get(shape, element);
}

RankedTensorType getTensorType(MLIRContext *ctx, const HostTensor &tensor) {
  Type element = getElementType(ctx, tensor.dtype);
  if (!element)
    return {};
  return RankedTensorType::get(tensor.shape, element);
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// Appends the bytes of `field`'s elements, converted to T.
template <typename T, typename Field>
static void appendBytes(const Field &field, std::string &out) {
  out.reserve(field.size() * sizeof(T));
  for (auto v : field) {
    T t = static_cast<T>(v);
    out.append(reinterpret_cast<const char *>(&t), sizeof(T));
  }
}

bool holdsMaskFill(const TensorProto &tensor) {
  if (tensor.data_type() != TensorProto::FLOAT ||
      tensor.data_location() == TensorProto::EXTERNAL)
    return false;
  auto fill = [](float v) { return !std::isfinite(v) || std::fabs(v) >= 1e30f; };
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    for (size_t i = 0; i + sizeof(float) <= raw.size(); i += sizeof(float)) {
      float v;
      std::memcpy(&v, raw.data() + i, sizeof(float));
      if (fill(v))
        return true;
    }
    return false;
  }
  return llvm::any_of(tensor.float_data(), fill);
}

/// The blob of the context's resource named `name` (or a name MLIR made
/// unique from it: name_1, name_2, ...) that holds exactly `data`.
static std::optional<DenseResourceElementsHandle>
findEqualResource(MLIRContext *ctx, StringRef name, ArrayRef<char> data) {
  auto &blobs = DenseResourceElementsHandle::getManagerInterface(ctx);
  DialectResourceBlobManager &manager = blobs.getBlobManager();
  for (int suffix = 0; suffix < 64; ++suffix) {
    std::string key =
        suffix == 0 ? name.str() : (name + "_" + Twine(suffix)).str();
    DialectResourceBlobManager::BlobEntry *entry = manager.lookup(key);
    if (!entry)
      return std::nullopt;
    const AsmResourceBlob *blob = entry->getBlob();
    if (blob && blob->getData().size() == data.size() &&
        std::memcmp(blob->getData().data(), data.data(), data.size()) == 0)
      return DenseResourceElementsHandle(
          entry, cast<BuiltinDialect>(blobs.getDialect()));
  }
  return std::nullopt;
}

llvm::Expected<ElementsAttr> readParameterValue(const TensorProto &tensor,
                                                RankedTensorType type,
                                                std::shared_ptr<const void> owner) {
  if (tensor.data_location() == TensorProto::EXTERNAL)
    return tensorError(tensor, "its data is in an external file");
  int32_t dtype = tensor.data_type();
  if (!isFloatType(dtype)) {
    llvm::Expected<HostTensor> host = readTensor(tensor);
    if (!host)
      return host.takeError();
    return cast<ElementsAttr>(toDenseAttr(type.getContext(), *host));
  }

  // MLIR's dense storage of f16/bf16/f32/f64 is the little-endian bytes
  // that ONNX keeps in raw_data, so those bytes are used as they are.
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t n = type.getNumElements();
  std::string converted;
  const std::string *bytes = &tensor.raw_data();
  if (!tensor.has_raw_data()) {
    switch (dtype) {
    case TensorProto::FLOAT:
      appendBytes<float>(tensor.float_data(), converted);
      break;
    case TensorProto::DOUBLE:
      appendBytes<double>(tensor.double_data(), converted);
      break;
    default: // FLOAT16, BFLOAT16: bit patterns in int32_data
      appendBytes<uint16_t>(tensor.int32_data(), converted);
      break;
    }
    bytes = &converted;
  }
  if (static_cast<int64_t>(bytes->size()) != n * elementBytes)
    return tensorError(tensor, "its data does not hold the " + Twine(n) +
                                   " elements of its dims " +
                                   shapeToString(type.getShape()));
  ArrayRef<char> data(bytes->data(), bytes->size());
  if (static_cast<int64_t>(bytes->size()) > kResourceThresholdBytes) {
    MLIRContext *ctx = type.getContext();
    if (std::optional<DenseResourceElementsHandle> same =
            findEqualResource(ctx, tensor.name(), data))
      return cast<ElementsAttr>(DenseResourceElementsAttr::get(type, *same));
    // The parsed model's bytes become the blob (malloc aligns them for
    // any scalar) where `owner` can keep them alive; else they are copied.
    bool alias = owner && bytes == &tensor.raw_data() &&
                 reinterpret_cast<uintptr_t>(data.data()) % alignof(double) == 0;
    AsmResourceBlob blob =
        alias ? AsmResourceBlob(
                    data, alignof(double),
                    [owner](void *, size_t, size_t) mutable { owner.reset(); },
                    /*dataIsMutable=*/false)
              : HeapAsmResourceBlob::allocateAndCopyWithAlign(data,
                                                               alignof(double));
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, tensor.name(), std::move(blob)));
  }
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, data));
}

DenseElementsAttr toDenseAttr(MLIRContext *ctx, const HostTensor &tensor) {
  RankedTensorType type = getTensorType(ctx, tensor);
  assert(type && "host tensors hold only supported types");
  int64_t n = tensor.size();
  bool splat = n > 1;
  for (int64_t i = 1; i < n && splat; ++i)
    splat = tensor.isFloat() ? tensor.floats[i] == tensor.floats[0]
                             : tensor.ints[i] == tensor.ints[0];
  int64_t count = splat ? 1 : n;

  Type element = type.getElementType();
  if (element.isInteger(1)) {
    SmallVector<bool> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(tensor.ints[i] != 0);
    return DenseElementsAttr::get(type, values);
  }
  if (auto intType = dyn_cast<IntegerType>(element)) {
    SmallVector<APInt> values;
    for (int64_t i = 0; i < count; ++i)
      values.emplace_back(intType.getWidth(),
                          static_cast<uint64_t>(tensor.ints[i]),
                          /*isSigned=*/true, /*implicitTrunc=*/true);
    return DenseElementsAttr::get(type, values);
  }
  const llvm::fltSemantics &semantics =
      cast<FloatType>(element).getFloatSemantics();
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < count; ++i) {
    APFloat f(tensor.floats[i]);
    bool losesInfo = false;
    f.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
    values.push_back(f);
  }
  return DenseElementsAttr::get(type, values);
}

} // namespace cleave::onnx_import
