//===- IntegerKernels.cpp - Integer arithmetic, where and cast on the CPU -===//
//
// The element type of an integer tensor is its plan dtype (I8 ... U64), so
// the kernels are chosen by the dtype of the operands: the same graph.add
// adds floats or uint8 values. The compiler's verifier makes both operands
// of a binary op the same type; the checks here catch a plan that was not
// made by it.
//
//===----------------------------------------------------------------------===//

#include "Registry.h"

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"
#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/kernels/IntegerElementwise.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <stdexcept>
#include <vector>

namespace cleave::executor {

namespace k = cleave::kernels;

namespace {

/// Calls f with a value of the C++ type of integer dtype `dtype`.
template <typename F> void withIntegerType(plan::DType dtype, F &&f) {
  switch (dtype) {
  case plan::I8:
    return f(int8_t());
  case plan::I16:
    return f(int16_t());
  case plan::I32:
    return f(int32_t());
  case plan::I64:
    return f(int64_t());
  case plan::U8:
    return f(uint8_t());
  case plan::U16:
    return f(uint16_t());
  case plan::U32:
    return f(uint32_t());
  case plan::U64:
    return f(uint64_t());
  default:
    throw std::invalid_argument(plan::DType_Name(dtype) +
                                " is not an integer type");
  }
}

/// Calls f with a value of the C++ type that stores dtype `dtype`: the
/// integers, f32, and bool bytes (uint8_t, 0 or 1).
template <typename F> void withStorageType(plan::DType dtype, F &&f) {
  if (dtype == plan::F32)
    return f(float());
  if (dtype == plan::BOOL)
    return f(uint8_t());
  withIntegerType(dtype, f);
}

template <typename T> k::View<const T> viewOf(const TensorView &v) {
  return {static_cast<const T *>(v.data), v.shape};
}
template <typename T> k::View<T> mutableViewOf(const TensorView &v) {
  return {static_cast<T *>(v.data), v.shape};
}

void requireSameDType(const TensorView &a, const TensorView &b,
                      const char *what) {
  if (a.dtype != b.dtype)
    throw std::invalid_argument(std::string(what) + " mixes " +
                                plan::DType_Name(a.dtype) + " and " +
                                plan::DType_Name(b.dtype));
}

/// Element i of a 16-bit float tensor as a float.
std::vector<float> widened(const TensorView &v) {
  std::vector<float> out(v.numElements());
  auto *src = static_cast<const uint16_t *>(v.data);
  if (v.dtype == plan::BF16)
    comm::bf16ToFloats(src, out.data(), out.size());
  else
    comm::f16ToFloats(src, out.data(), out.size());
  return out;
}

} // namespace

void integerBinaryKernel(OpContext &c, k::IntegerOp op) {
  c.expectArity(2, 1);
  const TensorView &a = c.input(0), &b = c.input(1), &out = c.output(0);
  if (!a || !b || !out)
    throw std::invalid_argument("needs two inputs and an output");
  requireSameDType(a, b, "the operands");
  requireSameDType(a, out, "the operands and the result");
  withIntegerType(a.dtype, [&](auto t) {
    using T = decltype(t);
    k::integerBinary<T>(op, viewOf<T>(a), viewOf<T>(b), mutableViewOf<T>(out));
  });
}

void compareAnyKernel(OpContext &c) {
  c.expectArity(2, 1);
  const TensorView &a = c.input(0), &b = c.input(1), &out = c.output(0);
  if (!a || !b || !out)
    throw std::invalid_argument("needs two inputs and an output");
  if (out.dtype != plan::BOOL)
    throw std::invalid_argument("output is not a bool tensor");
  requireSameDType(a, b, "the operands");
  k::ComparePredicate p = k::comparePredicate(c.attrString("predicate"));
  withStorageType(a.dtype, [&](auto t) {
    using T = decltype(t);
    k::compareValues<T>(p, viewOf<T>(a), viewOf<T>(b),
                        mutableViewOf<uint8_t>(out));
  });
}

void whereAnyKernel(OpContext &c) {
  c.expectArity(3, 1);
  const TensorView &a = c.input(1), &b = c.input(2), &out = c.output(0);
  if (!a || !b || !out)
    throw std::invalid_argument("needs a condition, two values and an output");
  requireSameDType(a, b, "the values");
  requireSameDType(a, out, "the values and the result");
  withStorageType(a.dtype, [&](auto t) {
    using T = decltype(t);
    k::whereValues<T>(c.mask(0), viewOf<T>(a), viewOf<T>(b),
                      mutableViewOf<T>(out));
  });
}

namespace {

/// Calls f with the unsigned type of the width of dtype `dtype`'s
/// elements: what moves them (gather, transpose, slice, concat, split)
/// whatever they are.
template <typename F> void withElementWidth(plan::DType dtype, F &&f) {
  switch (plan::dtypeBytes(dtype)) {
  case 1:
    return f(uint8_t());
  case 2:
    return f(uint16_t());
  case 4:
    return f(uint32_t());
  default:
    return f(uint64_t());
  }
}

} // namespace

void moveAnyKernel(OpContext &c, const std::string &op) {
  const TensorView &in = c.input(0);
  if (!in)
    throw std::invalid_argument("needs an input");
  for (const TensorView &out : c.outputs)
    if (out)
      requireSameDType(in, out, "the input and the results");
  withElementWidth(in.dtype, [&](auto t) {
    using T = decltype(t);
    if (op == "graph.gather") {
      c.expectArity(2, 1);
      k::gatherValues<T>(viewOf<T>(in), c.index(1),
                         c.attrAxis("axis", in.shape.size()),
                         mutableViewOf<T>(c.output(0)));
    } else if (op == "graph.transpose") {
      c.expectArity(1, 1);
      k::transposeValues<T>(viewOf<T>(in), c.attrInts("permutation"),
                            mutableViewOf<T>(c.output(0)));
    } else if (op == "graph.slice") {
      c.expectArity(1, 1);
      k::sliceValues<T>(viewOf<T>(in), c.attrInts("starts"),
                        c.attrInts("limits"), c.attrInts("strides"),
                        mutableViewOf<T>(c.output(0)));
    } else if (op == "graph.concat") {
      if (c.outputs.size() != 1)
        throw std::invalid_argument("needs one output");
      std::vector<k::View<const T>> ins;
      for (const TensorView &v : c.inputs) {
        requireSameDType(in, v, "the inputs");
        ins.push_back(viewOf<T>(v));
      }
      k::concatValues<T>(ins, c.attrAxis("axis", c.output(0).shape.size()),
                         mutableViewOf<T>(c.output(0)));
    } else { // graph.split
      if (c.inputs.size() != 1)
        throw std::invalid_argument("needs one input");
      std::vector<k::View<T>> outs;
      for (const TensorView &v : c.outputs)
        outs.push_back(mutableViewOf<T>(v));
      k::splitValues<T>(viewOf<T>(in), c.attrAxis("axis", in.shape.size()),
                        outs);
    }
  });
}

void convertElements(const TensorView &in, const TensorView &out) {
  if (in.numElements() != out.numElements())
    throw std::invalid_argument("casts " + std::to_string(in.numElements()) +
                                " elements into " +
                                std::to_string(out.numElements()));
  int64_t n = in.numElements();
  // 16-bit floats are read through fp32 (their values are all exact there).
  std::vector<float> wide;
  TensorView source = in;
  if (in.dtype == plan::BF16 || in.dtype == plan::F16) {
    wide = widened(in);
    source.data = wide.data();
    source.dtype = plan::F32;
  }
  if (out.dtype == plan::BF16 || out.dtype == plan::F16) {
    std::vector<float> narrow(n);
    TensorView f32 = out;
    f32.data = narrow.data();
    f32.dtype = plan::F32;
    convertElements(source, f32);
    auto *dst = static_cast<uint16_t *>(out.data);
    if (out.dtype == plan::BF16)
      comm::floatsToBf16(narrow.data(), dst, n);
    else
      comm::floatsToF16(narrow.data(), dst, n);
    return;
  }
  withStorageType(source.dtype, [&](auto from) {
    using From = decltype(from);
    const From *src = static_cast<const From *>(source.data);
    if (out.dtype == plan::BOOL) {
      auto *dst = static_cast<uint8_t *>(out.data);
      for (int64_t i = 0; i < n; ++i)
        dst[i] = src[i] != From(0) ? 1 : 0;
      return;
    }
    withStorageType(out.dtype, [&](auto to) {
      using To = decltype(to);
      To *dst = static_cast<To *>(out.data);
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<To>(src[i]);
    });
  });
}

} // namespace cleave::executor
