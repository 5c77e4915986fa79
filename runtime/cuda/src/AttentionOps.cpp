//===- AttentionOps.cpp - Attention, softmax and rope on the GPU ----------===//
//
// The host half of the attention family: operands, attributes and shape
// checks as runtime/executor/src/ComputeKernels.cpp and GradKernels.cpp
// have them (and the CPU kernels check), then a launch on the compute
// stream. A softmax along the last axis runs as contiguous rows; along any
// other axis as strided columns.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "OpChecks.h"
#include "Ops.h"
#include "kernels/Attention.h"
#include "kernels/FlashAttention.h"
#include "kernels/PagedAttention.h"
#include "cleave/runtime/kernels/FlashAttention.h"

#include <stdexcept>
#include <string>

namespace cleave::cuda {
namespace {

using executor::OpContext;
using kernels::Shape;

void checkAxis(const char *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    fail(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
}

void checkSameShape(const char *op, const char *what, const Shape &shape,
                    const Shape &expected) {
  if (shape != expected)
    fail(op, std::string(what) + " must be " + kernels::shapeString(expected) +
                 ", got " + kernels::shapeString(shape));
}

int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

void softmaxKernel(OpContext &c) {
  c.expectArity(1, 1);
  kernels::ConstTensorRef in = c.in(0);
  kernels::TensorRef out = c.out(0);
  int64_t rank = in.rank(), axis = c.attrAxis("axis", rank);
  bool causal = c.attrBool("causal");
  checkAxis("softmax", axis, rank);
  checkSameShape("softmax", "result", out.shape, in.shape);
  if (causal && (rank < 2 || axis != rank - 1))
    fail("softmax", "causal softmax must run along the last axis of a [..., "
                    "query, key] tensor");
  int64_t n = in.shape[axis];
  int64_t outer = product(in.shape, 0, axis);
  int64_t inner = product(in.shape, axis + 1, in.shape.size());
  int64_t queries = rank >= 2 ? in.shape[rank - 2] : 1;
  if (c.has("query_blocks") && rank < 2)
    fail("softmax", "query_blocks needs a [..., query, key] tensor");
  kernels::RowOffsets shift = c.causalShift(queries, n);
  cudaStream_t stream = context().compute;
  if (inner != 1) {
    launchSoftmaxStrided(in.data, out.data, outer, n, inner, stream);
    return;
  }
  launchSoftmaxRows(in.data, out.data, outer, n, causal, queries, shift,
                    stream);
}

void softmaxGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  kernels::ConstTensorRef y = c.in(0), dy = c.in(1);
  kernels::TensorRef dx = c.out(0);
  int64_t rank = y.rank(), axis = c.attrAxis("axis", rank);
  checkAxis("softmax_grad", axis, rank);
  checkSameShape("softmax_grad", "dOut", dy.shape, y.shape);
  checkSameShape("softmax_grad", "dIn", dx.shape, y.shape);
  int64_t n = y.shape[axis];
  int64_t outer = product(y.shape, 0, axis);
  int64_t inner = product(y.shape, axis + 1, y.shape.size());
  cudaStream_t stream = context().compute;
  if (inner != 1)
    launchSoftmaxGradStrided(y.data, dy.data, dx.data, outer, n, inner, stream);
  else
    launchSoftmaxGradRows(y.data, dy.data, dx.data, outer, n, stream);
}

void ropeKernel(OpContext &c) {
  c.expectArity(1, 2, 1);
  kernels::ConstTensorRef in = c.in(0);
  kernels::TensorRef out = c.out(0);
  double theta = c.attrFloat("theta");
  bool inverse = c.attrBool("inverse");
  const char *op = inverse ? "rope (inverse)" : "rope";
  if (in.rank() != 4)
    fail(op, "expects [batch, seq, heads, head_dim], got " +
                 kernels::shapeString(in.shape));
  if (in.shape[3] % 2 != 0)
    fail(op, "head_dim must be even");
  if (!(theta > 0))
    fail(op, "theta must be positive");
  checkSameShape(op, "result", out.shape, in.shape);
  if (c.inputs.size() == 2 && c.input(1)) { // each token at its own position
    kernels::IndexRef positions = c.index(1);
    checkSameShape(op, "positions", positions.shape, {in.shape[0], in.shape[1]});
    launchRopeAt(in.data, out.data, positions.data, in.shape[0], in.shape[1],
                 in.shape[2], in.shape[3], theta, inverse, context().compute);
    return;
  }
  // This device's block of the sequence (dimension 1), if it is split.
  kernels::RowOffsets positions =
      c.sequenceBlock("position_blocks", in.shape[1])
          .shifted(c.attrInt("offset", 0));
  Scratch table(ropeWorkspaceBytes(in.shape[1], in.shape[3]));
  launchRope(in.data, out.data, in.shape[0], in.shape[1], in.shape[2],
             in.shape[3], theta, positions, inverse, table.data(),
             context().compute);
}

/// graph.cache_write: rows [N, kv_heads, dim] into the cache [blocks,
/// block_size, kv_heads, dim] at `slots`, in place (its output is the
/// cache's own tensor; copied first where it is not).
void cacheWriteKernel(OpContext &c) {
  c.expectArity(3, 1);
  kernels::ConstTensorRef rows = c.in(0), cache = c.in(1);
  kernels::IndexRef slots = c.index(2);
  kernels::TensorRef out = c.out(0);
  if (cache.rank() != 4 || rows.rank() != 3 || rows.shape[1] != cache.shape[2] ||
      rows.shape[2] != cache.shape[3] || slots.rank() != 1 ||
      slots.shape[0] != rows.shape[0])
    fail("cache_write", "rows " + kernels::shapeString(rows.shape) +
                            " and slots " + kernels::shapeString(slots.shape) +
                            " do not fit cache " +
                            kernels::shapeString(cache.shape));
  checkSameShape("cache_write", "result", out.shape, cache.shape);
  cudaStream_t stream = context().compute;
  if (out.data != cache.data)
    CLEAVE_CUDA_CHECK(cudaMemcpyAsync(out.data, cache.data,
                                      cache.numElements() * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream));
  launchCacheWrite(rows.data, slots.data, rows.shape[0],
                   rows.shape[1] * rows.shape[2],
                   cache.shape[0] * cache.shape[1], out.data, stream);
}

/// graph.paged_attention (the CPU kernel's semantics, PagedAttention.h):
/// the host checks the shapes; the lengths and block ids, on the device,
/// are the generation scheduler's.
void pagedAttentionKernel(OpContext &c) {
  c.expectArity(5, 1);
  kernels::ConstTensorRef q = c.in(0), k = c.in(1), v = c.in(2);
  kernels::IndexRef table = c.index(3), lengths = c.index(4);
  kernels::TensorRef out = c.out(0);
  if (q.rank() != 4 || k.rank() != 4 || k.shape != v.shape ||
      q.shape[3] != k.shape[3] || q.shape[1] % k.shape[2] != 0 ||
      table.rank() != 2 || table.shape[0] != q.shape[0] ||
      lengths.rank() != 1 || lengths.shape[0] != q.shape[0])
    fail("paged_attention",
         "query " + kernels::shapeString(q.shape) + ", block table " +
             kernels::shapeString(table.shape) + " and lengths " +
             kernels::shapeString(lengths.shape) + " do not fit cache " +
             kernels::shapeString(k.shape));
  if (q.shape[3] > 256)
    fail("paged_attention", "head_dim " + std::to_string(q.shape[3]) +
                                " is beyond the kernel's 256");
  checkSameShape("paged_attention", "result", out.shape, q.shape);
  launchPagedAttention(q.data, k.data, v.data, table.data, lengths.data,
                       q.shape[0], q.shape[1], q.shape[2], q.shape[3],
                       k.shape[2], k.shape[1], table.shape[1],
                       static_cast<float>(c.attrFloat("scale")), out.data,
                       context().compute);
}

/// The kernels' shape of an attention or its gradient: batch dimensions
/// flattened into heads (kernels::attentionShapes), the causal shift
/// placed for a block of queries (`query_blocks`).
FlashAttentionShape attentionShape(OpContext &c, const char *op,
                                   const Shape &query, const Shape &key,
                                   const Shape &value, size_t maskOperand) {
  kernels::AttentionShapes s;
  try {
    s = kernels::attentionShapes(query, key);
  } catch (const std::invalid_argument &e) {
    fail(op, e.what());
  }
  checkSameShape(op, "value", value, key);
  FlashAttentionShape shape;
  shape.heads = s.query[1];
  shape.kvHeads = s.key[1];
  shape.queries = s.query[2];
  shape.keys = s.key[2];
  shape.dim = s.query[3];
  if (shape.dim > kFlashAttentionMaxDim)
    fail(op, "head size " + std::to_string(shape.dim) + " is over the " +
                 std::to_string(kFlashAttentionMaxDim) +
                 " the kernel holds in registers");
  if (shape.kvHeads <= 0 || shape.heads % shape.kvHeads)
    fail(op, "key heads do not divide the query heads");
  shape.scale = static_cast<float>(c.attrFloat("scale"));
  shape.causal = c.attrBool("causal");
  shape.shift = c.causalShift(shape.queries, shape.keys);
  if (c.inputs.size() > maskOperand) {
    kernels::ConstTensorRef mask = c.in(maskOperand);
    kernels::AttentionMask m;
    try {
      m = kernels::attentionMask(mask.data, mask.shape, query, shape.keys);
    } catch (const std::invalid_argument &e) {
      fail(op, e.what());
    }
    shape.mask = m.data;
    shape.maskDiv = m.div;
    shape.maskMod = m.mod;
    shape.maskPlane = m.plane;
    shape.maskRowStride = m.rowStride;
  }
  return shape;
}

void attentionKernel(OpContext &c) {
  c.expectArity(3, 4, 2);
  kernels::ConstTensorRef q = c.in(0), k = c.in(1), v = c.in(2);
  kernels::TensorRef out = c.out(0), lse = c.out(1);
  FlashAttentionShape shape =
      attentionShape(c, "attention", q.shape, k.shape, v.shape, 3);
  checkSameShape("attention", "out", out.shape, q.shape);
  checkSameShape("attention", "lse", lse.shape,
                 Shape(q.shape.begin(), q.shape.end() - 1));
  launchFlashAttention(q.data, k.data, v.data, out.data, lse.data, shape,
                       context().compute);
}

void attentionGradKernel(OpContext &c) {
  c.expectArity(6, 7, 3);
  kernels::ConstTensorRef q = c.in(0), k = c.in(1), v = c.in(2);
  kernels::ConstTensorRef out = c.in(3), lse = c.in(4), dOut = c.in(5);
  FlashAttentionShape shape =
      attentionShape(c, "attention_grad", q.shape, k.shape, v.shape, 6);
  checkSameShape("attention_grad", "out", out.shape, q.shape);
  checkSameShape("attention_grad", "grad", dOut.shape, q.shape);
  checkSameShape("attention_grad", "lse", lse.shape,
                 Shape(q.shape.begin(), q.shape.end() - 1));
  kernels::TensorRef dq = c.outOpt(0), dk = c.outOpt(1), dv = c.outOpt(2);
  if (dq)
    checkSameShape("attention_grad", "query_grad", dq.shape, q.shape);
  if (dk)
    checkSameShape("attention_grad", "key_grad", dk.shape, k.shape);
  if (dv)
    checkSameShape("attention_grad", "value_grad", dv.shape, k.shape);
  Scratch delta(flashAttentionBackwardWorkspaceBytes(shape));
  launchFlashAttentionBackward(q.data, k.data, v.data, out.data, lse.data,
                               dOut.data, dq.data, dk.data, dv.data, shape,
                               delta.data(), context().compute);
}

} // namespace

void registerAttentionOps(Registry &r) {
  r["graph.attention"] = attentionKernel;
  r["graph.attention_grad"] = attentionGradKernel;
  r["graph.softmax"] = softmaxKernel;
  r["graph.softmax_grad"] = softmaxGradKernel;
  r["graph.rope"] = ropeKernel;
  r["graph.cache_write"] = cacheWriteKernel;
  r["graph.paged_attention"] = pagedAttentionKernel;
}

} // namespace cleave::cuda
