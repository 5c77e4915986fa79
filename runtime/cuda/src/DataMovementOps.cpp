//===- DataMovementOps.cpp - Copies, casts and strided views on the GPU ---===//
//
// Each op describes its source and destination as strided views of one
// logical shape and runs the one strided-copy kernel; plain copies
// (reshape, stop_gradient, copy_to_group) are device-to-device memcpys.
// Shapes are checked with the CPU kernels' shape functions, so that both
// backends refuse the same instructions.
//
//===----------------------------------------------------------------------===//

#include "OpChecks.h"
#include "Ops.h"

#include "Context.h"
#include "kernels/Convert.h"
#include "kernels/DataMovement.h"

#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <stdexcept>

namespace cleave::cuda {

namespace k = cleave::kernels;
using executor::OpContext;
using executor::TensorView;

namespace {

std::vector<int64_t> stridesOf(const k::Shape &shape) {
  return k::rowMajorStrides(shape);
}

/// A copy between tensors of the same number of bytes.
void copyKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &in = c.input(0), &out = c.output(0);
  if (!in || !out)
    throw std::invalid_argument("needs an input and an output");
  if (in.numBytes() != out.numBytes())
    throw std::invalid_argument("copies " + std::to_string(in.numBytes()) +
                                " bytes into " +
                                std::to_string(out.numBytes()));
  if (in.data != out.data && in.numBytes() > 0)
    CLEAVE_CUDA_CHECK(cudaMemcpyAsync(out.data, in.data, in.numBytes(),
                                      cudaMemcpyDeviceToDevice,
                                      context().compute));
}

void castKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &in = c.input(0), &out = c.output(0);
  if (in.dtype == out.dtype)
    return copyKernel(c);
  if (in.numElements() != out.numElements())
    throw std::invalid_argument("casts " + std::to_string(in.numElements()) +
                                " elements into " +
                                std::to_string(out.numElements()));
  if (in.dtype == plan::I64 && out.dtype == plan::F32)
    return castI64ToF32(static_cast<const int64_t *>(in.data),
                        static_cast<float *>(out.data), in.numElements(),
                        context().compute);
  if (in.dtype == plan::F32 && out.dtype == plan::I64)
    return castF32ToI64(static_cast<const float *>(in.data),
                        static_cast<int64_t *>(out.data), in.numElements(),
                        context().compute);
  if (in.dtype == plan::F32 &&
      (out.dtype == plan::BF16 || out.dtype == plan::F16))
    return convertToHalf(static_cast<const float *>(in.data), out.data,
                         in.numElements(), out.dtype == plan::BF16,
                         context().compute);
  if (out.dtype == plan::F32 && (in.dtype == plan::BF16 || in.dtype == plan::F16))
    return convertFromHalf(in.data, static_cast<float *>(out.data),
                           in.numElements(), in.dtype == plan::BF16,
                           context().compute);
  throw std::invalid_argument("the CUDA backend casts between f32 and "
                              "bf16/f16, and between i64 and f32");
}

void transposeKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &in = c.input(0), &out = c.output(0);
  std::vector<int64_t> perm = c.attrInts("permutation");
  expectShape(out.shape, k::transposeShape(in.shape, perm), "the result");
  std::vector<int64_t> inStrides = stridesOf(in.shape);
  StridedView src, dst;
  for (int64_t p : perm)
    src.strides.push_back(inStrides[p]);
  dst.strides = stridesOf(out.shape);
  stridedCopy(in.data, src, out.data, dst, out.shape,
              plan::dtypeBytes(in.dtype), context().compute);
}

/// The view of the elements a slice (starts, strides) of `shape` selects.
StridedView sliceView(const k::Shape &shape, const std::vector<int64_t> &starts,
                      const std::vector<int64_t> &strides) {
  if (starts.size() != shape.size() || strides.size() != shape.size())
    throw std::invalid_argument("slice attributes need one start and stride "
                                "per dimension");
  std::vector<int64_t> base = stridesOf(shape);
  StridedView v;
  for (size_t d = 0; d < shape.size(); ++d) {
    v.strides.push_back(base[d] * strides[d]);
    v.offset += starts[d] * base[d];
  }
  return v;
}

void sliceKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &in = c.input(0), &out = c.output(0);
  std::vector<int64_t> starts = c.attrInts("starts"),
                       limits = c.attrInts("limits"),
                       strides = c.attrInts("strides");
  expectShape(out.shape, k::sliceShape(in.shape, starts, limits, strides),
              "the result");
  StridedView dst;
  dst.strides = stridesOf(out.shape);
  stridedCopy(in.data, sliceView(in.shape, starts, strides), out.data, dst,
              out.shape, plan::dtypeBytes(in.dtype), context().compute);
}

void sliceGradKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &dOut = c.input(0), &dIn = c.output(0);
  std::vector<int64_t> starts = c.attrInts("starts"),
                       strides = c.attrInts("strides");
  if (starts.size() != dIn.shape.size() || strides.size() != dIn.shape.size())
    throw std::invalid_argument("slice_grad needs one start and stride per "
                                "dimension");
  for (size_t d = 0; d < dIn.shape.size(); ++d)
    if (strides[d] <= 0 || starts[d] < 0 ||
        (dOut.shape[d] > 0 &&
         starts[d] + (dOut.shape[d] - 1) * strides[d] >= dIn.shape[d]))
      throw std::invalid_argument("the slice of " +
                                  k::shapeString(dOut.shape) +
                                  " does not fit in " +
                                  k::shapeString(dIn.shape));
  CLEAVE_CUDA_CHECK(
      cudaMemsetAsync(dIn.data, 0, dIn.numBytes(), context().compute));
  StridedView src;
  src.strides = stridesOf(dOut.shape);
  stridedCopy(dOut.data, src, dIn.data, sliceView(dIn.shape, starts, strides),
              dOut.shape, plan::dtypeBytes(dOut.dtype), context().compute);
}

/// The view of the block [offset, offset + block.shape[axis]) along `axis`
/// of a tensor of `whole` shape.
StridedView blockView(const k::Shape &whole, int64_t axis, int64_t offset) {
  StridedView v;
  v.strides = stridesOf(whole);
  v.offset = offset * v.strides[axis];
  return v;
}

void concatKernel(OpContext &c) {
  if (c.outputs.size() != 1)
    throw std::invalid_argument("needs one output");
  const TensorView &out = c.output(0);
  int64_t axis = c.attrAxis("axis", static_cast<int64_t>(out.shape.size()));
  std::vector<k::Shape> shapes;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    shapes.push_back(c.input(i).shape);
  expectShape(out.shape, k::concatShape(shapes, axis), "the result");
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const TensorView &in = c.input(i);
    if (!in)
      throw std::invalid_argument("input " + std::to_string(i) +
                                  " is required but absent");
    StridedView src;
    src.strides = stridesOf(in.shape);
    stridedCopy(in.data, src, out.data, blockView(out.shape, axis, offset),
                in.shape, plan::dtypeBytes(in.dtype), context().compute);
    offset += in.shape[axis];
  }
}

void splitKernel(OpContext &c) {
  if (c.inputs.size() != 1)
    throw std::invalid_argument("needs one input");
  const TensorView &in = c.input(0);
  int64_t axis = c.attrAxis("axis", static_cast<int64_t>(in.shape.size()));
  int64_t total = 0;
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    const TensorView &out = c.output(o);
    k::Shape expected = in.shape;
    expected[axis] = out.shape.size() == in.shape.size() ? out.shape[axis] : -1;
    expectShape(out.shape, expected, "a result");
    total += out.shape[axis];
  }
  if (total != in.shape[axis])
    throw std::invalid_argument("the results' sizes along the axis add up to " +
                                std::to_string(total) + ", not " +
                                std::to_string(in.shape[axis]));
  int64_t offset = 0;
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    const TensorView &out = c.output(o);
    if (out) {
      StridedView dst;
      dst.strides = stridesOf(out.shape);
      stridedCopy(in.data, blockView(in.shape, axis, offset), out.data, dst,
                  out.shape, plan::dtypeBytes(in.dtype), context().compute);
    }
    offset += out.shape[axis];
  }
}

/// This rank's block along `dim` of a tensor the group holds in full.
void shardSliceKernel(OpContext &c) {
  c.expectArity(1, 1);
  comm::Axes axes = c.attrStrings("axes");
  if (c.has("group_size") && c.attrInt("group_size") != c.comm.groupSize(axes))
    throw std::invalid_argument("group_size is " +
                                std::to_string(c.attrInt("group_size")) +
                                " but the mesh group has " +
                                std::to_string(c.comm.groupSize(axes)) +
                                " ranks");
  const TensorView &in = c.input(0), &out = c.output(0);
  int64_t n = c.comm.groupSize(axes), g = c.comm.mesh().groupRank(axes);
  int64_t dim = c.attrInt("dim");
  if (in.dtype != out.dtype || dim < 0 ||
      dim >= static_cast<int64_t>(in.shape.size()) ||
      out.shape.size() != in.shape.size() ||
      in.shape[dim] != out.shape[dim] * n ||
      in.numElements() != out.numElements() * n)
    throw std::invalid_argument("the output is not block " + std::to_string(g) +
                                " of " + std::to_string(n) + " of the input");
  if (c.attrBool("zigzag")) {
    // Chunks g and 2n - 1 - g of the 2n the dimension is cut into.
    if (out.shape[dim] % 2)
      throw std::invalid_argument("zigzag: block " + std::to_string(g) +
                                  " has an odd length along dim " +
                                  std::to_string(dim));
    int64_t chunk = out.shape[dim] / 2;
    k::Shape half = out.shape;
    half[dim] = chunk;
    int64_t from[2] = {g * chunk, (2 * n - 1 - g) * chunk};
    for (int part = 0; part < 2; ++part)
      stridedCopy(in.data, blockView(in.shape, dim, from[part]), out.data,
                  blockView(out.shape, dim, part * chunk), half,
                  plan::dtypeBytes(in.dtype), context().compute);
    return;
  }
  StridedView dst;
  dst.strides = stridesOf(out.shape);
  stridedCopy(in.data, blockView(in.shape, dim, g * out.shape[dim]), out.data,
              dst, out.shape, plan::dtypeBytes(in.dtype), context().compute);
}

} // namespace

void registerDataMovementOps(Registry &r) {
  r["graph.reshape"] = copyKernel;
  r["graph.stop_gradient"] = copyKernel;
  r["graph.copy_to_group"] = copyKernel;
  r["runtime.copy"] = copyKernel;
  r["graph.cast"] = castKernel;
  r["graph.transpose"] = transposeKernel;
  r["graph.slice"] = sliceKernel;
  r["graph.slice_grad"] = sliceGradKernel;
  r["graph.concat"] = concatKernel;
  r["graph.split"] = splitKernel;
  r["graph.shard_slice"] = shardSliceKernel;
  r["comm.shard_slice"] = shardSliceKernel;
}

} // namespace cleave::cuda
