//===- ElementwiseOps.cpp - Pointwise graph ops on the GPU ----------------===//
//
// The host side of graph.add ... min, the unary activations, dropout,
// activation_grad, where, compare, broadcast_to, runtime.accumulate and
// runtime.scale: the CPU glue's operand order, attributes and shape checks
// (runtime/executor/src/ComputeKernels.cpp, GradKernels.cpp,
// RuntimeKernels.cpp), then one launch on the compute stream.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Ops.h"
#include "OpChecks.h"
#include "kernels/Elementwise.h"

#include "cleave/runtime/executor/OpAttributes.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/Tensor.h"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace cleave::cuda {

namespace k = cleave::kernels;
using executor::OpContext;

namespace {

cudaStream_t stream() { return context().compute; }

/// How `operands` broadcast to `shape`, with the dimensions merged where
/// every operand steps over two neighbours as over one, exactly as the
/// CPU's planBroadcast (runtime/kernels/src/Broadcast.h) merges them.
/// Throws std::invalid_argument when an operand does not broadcast or the
/// merged rank exceeds the kernels' limit.
template <int N>
BroadcastLayout<N> broadcastLayout(const k::Shape &shape,
                                   const std::array<const k::Shape *, N> &ops) {
  size_t rank = shape.size();
  std::array<k::Shape, N> full;
  for (int i = 0; i < N; ++i) {
    const k::Shape &s = *ops[i];
    if (s.size() > rank)
      throw std::invalid_argument("operand " + k::shapeString(s) +
                                  " does not broadcast to " +
                                  k::shapeString(shape));
    k::Shape padded(rank - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    k::Shape strides = k::rowMajorStrides(padded);
    for (size_t d = 0; d < rank; ++d) {
      if (padded[d] != shape[d] && padded[d] != 1)
        throw std::invalid_argument("operand " + k::shapeString(s) +
                                    " does not broadcast to " +
                                    k::shapeString(shape));
      // Broadcast and size-1 dimensions move nothing; zero strides also
      // never block merging.
      if (padded[d] == 1)
        strides[d] = 0;
    }
    full[i] = std::move(strides);
  }

  // From the innermost dimension outwards, dimension d joins the merged
  // dimension inside it when every operand's stride over d is its stride
  // there times that dimension's size.
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> strides;
  for (size_t d = rank; d-- > 0;) {
    if (shape[d] == 1)
      continue;
    bool merge = !dims.empty();
    for (int i = 0; i < N && merge; ++i)
      merge = full[i][d] == strides[i].back() * dims.back();
    if (merge) {
      dims.back() *= shape[d];
      continue;
    }
    dims.push_back(shape[d]);
    for (int i = 0; i < N; ++i)
      strides[i].push_back(full[i][d]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (int i = 0; i < N; ++i)
      strides[i].push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kBroadcastMaxRank))
    throw std::invalid_argument("broadcasting " + k::shapeString(shape) +
                                " needs " + std::to_string(dims.size()) +
                                " dimensions; the CUDA kernels take " +
                                std::to_string(kBroadcastMaxRank));

  BroadcastLayout<N> layout;
  layout.rank = static_cast<int>(dims.size());
  for (int d = 0; d < layout.rank; ++d) {
    // Collected innermost first.
    size_t from = dims.size() - 1 - d;
    layout.dims[d] = dims[from];
    for (int i = 0; i < N; ++i)
      layout.strides[i][d] = strides[i][from];
  }
  return layout;
}

template <k::BinaryOp Op> void binaryKernel(OpContext &c) {
  c.expectArity(2, 1);
  k::ConstTensorRef lhs = c.in(0), rhs = c.in(1);
  k::TensorRef out = c.out(0);
  requireShape(out.shape, k::broadcastShape(lhs.shape, rhs.shape), "result");
  elementwiseBinary(Op, lhs.data, rhs.data, out.data, out.numElements(),
                    broadcastLayout<2>(out.shape, {&lhs.shape, &rhs.shape}),
                    stream());
}

void runUnary(OpContext &c, k::UnaryOp op) {
  c.expectArity(1, 1);
  k::ConstTensorRef in = c.in(0);
  k::TensorRef out = c.out(0);
  requireShape(out.shape, in.shape, "result");
  elementwiseUnary(op, in.data, out.data, in.numElements(), stream());
}

template <k::UnaryOp Op> void unaryKernel(OpContext &c) { runUnary(c, Op); }

void geluKernel(OpContext &c) {
  runUnary(c, c.attrBool("approximate_tanh") ? k::UnaryOp::GeluTanh
                                             : k::UnaryOp::Gelu);
}

void dropoutKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::ConstTensorRef in = c.in(0);
  k::TensorRef out = c.out(0);
  double ratio = c.attrFloat("ratio");
  int64_t seed = c.attrInt("seed", 0);
  if (!(ratio >= 0.0 && ratio < 1.0))
    throw std::invalid_argument("dropout ratio must be in [0, 1), got " +
                                std::to_string(ratio));
  requireShape(out.shape, in.shape, "result");
  // The CPU's decision (kernels::dropoutKeeps): keep when the top 53 bits
  // of the draw, as u = bits * 2^-53, are >= ratio, i.e. bits >=
  // ceil(ratio * 2^53), which is exact.
  uint64_t threshold =
      static_cast<uint64_t>(std::ceil(ratio * 9007199254740992.0));
  float scale = static_cast<float>(1.0 / (1.0 - ratio));
  elementwiseDropout(in.data, out.data, in.numElements(),
                     static_cast<uint64_t>(seed), threshold, scale, stream());
}


/// Operands: the activation's input, then the gradient of its output.
void activationGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  k::UnaryOp op = executor::activationKind(c.attrString("kind"));
  k::ConstTensorRef in = c.in(0), dOut = c.in(1);
  k::TensorRef dIn = c.out(0);
  requireShape(dOut.shape, in.shape, "the output gradient");
  requireShape(dIn.shape, in.shape, "the input gradient");
  elementwiseActivationGrad(op, in.data, dOut.data, dIn.data, in.numElements(),
                            stream());
}

void whereKernel(OpContext &c) {
  c.expectArity(3, 1);
  k::MaskRef condition = c.mask(0);
  k::ConstTensorRef lhs = c.in(1), rhs = c.in(2);
  k::TensorRef out = c.out(0);
  requireShape(out.shape,
               k::broadcastShape(condition.shape,
                                 k::broadcastShape(lhs.shape, rhs.shape)),
               "result");
  elementwiseWhere(
      condition.data, lhs.data, rhs.data, out.data, out.numElements(),
      broadcastLayout<3>(out.shape, {&condition.shape, &lhs.shape, &rhs.shape}),
      stream());
}

ComparePredicate comparePredicate(const std::string &p) {
  if (p == "eq")
    return ComparePredicate::Eq;
  if (p == "ne")
    return ComparePredicate::Ne;
  if (p == "lt")
    return ComparePredicate::Lt;
  if (p == "le")
    return ComparePredicate::Le;
  if (p == "gt")
    return ComparePredicate::Gt;
  if (p == "ge")
    return ComparePredicate::Ge;
  throw std::invalid_argument("unknown compare predicate '" + p + "'");
}

void compareKernel(OpContext &c) {
  c.expectArity(2, 1);
  const executor::TensorView &out = c.output(0);
  if (!out)
    throw std::invalid_argument("needs an output");
  if (out.dtype != plan::BOOL)
    throw std::invalid_argument("output is not a bool tensor");
  k::ConstTensorRef lhs = c.in(0), rhs = c.in(1);
  ComparePredicate predicate = comparePredicate(c.attrString("predicate"));
  requireShape(out.shape, k::broadcastShape(lhs.shape, rhs.shape), "result");
  elementwiseCompare(predicate, lhs.data, rhs.data,
                     static_cast<uint8_t *>(out.data), out.numElements(),
                     broadcastLayout<2>(out.shape, {&lhs.shape, &rhs.shape}),
                     stream());
}

void broadcastToKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::ConstTensorRef in = c.in(0);
  k::TensorRef out = c.out(0);
  // The CPU adds zeros of the result's shape: the result must be the
  // broadcast of the two.
  requireShape(out.shape, k::broadcastShape(in.shape, out.shape), "result");
  elementwiseBroadcast(in.data, out.data, out.numElements(),
                       broadcastLayout<1>(out.shape, {&in.shape}), stream());
}

void accumulateKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::ConstTensorRef in = c.in(0);
  k::TensorRef out = c.out(0);
  if (in.numElements() != out.numElements())
    throw std::invalid_argument(
        "accumulates " + std::to_string(in.numElements()) + " elements into " +
        std::to_string(out.numElements()));
  elementwiseAccumulate(in.data, out.data, out.numElements(), stream());
}

void scaleKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::ConstTensorRef in = c.in(0);
  k::TensorRef out = c.out(0);
  if (in.numElements() != out.numElements())
    throw std::invalid_argument("scales " + std::to_string(in.numElements()) +
                                " elements into " +
                                std::to_string(out.numElements()));
  float factor = static_cast<float>(c.attrFloat("factor"));
  elementwiseScale(in.data, out.data, out.numElements(), factor, stream());
}

} // namespace

void registerElementwiseOps(Registry &r) {
  using B = k::BinaryOp;
  using U = k::UnaryOp;
  r["graph.add"] = binaryKernel<B::Add>;
  r["graph.sub"] = binaryKernel<B::Sub>;
  r["graph.mul"] = binaryKernel<B::Mul>;
  r["graph.div"] = binaryKernel<B::Div>;
  r["graph.pow"] = binaryKernel<B::Pow>;
  r["graph.max"] = binaryKernel<B::Max>;
  r["graph.min"] = binaryKernel<B::Min>;
  r["graph.neg"] = unaryKernel<U::Neg>;
  r["graph.exp"] = unaryKernel<U::Exp>;
  r["graph.log"] = unaryKernel<U::Log>;
  r["graph.sqrt"] = unaryKernel<U::Sqrt>;
  r["graph.rsqrt"] = unaryKernel<U::Rsqrt>;
  r["graph.relu"] = unaryKernel<U::Relu>;
  r["graph.tanh"] = unaryKernel<U::Tanh>;
  r["graph.erf"] = unaryKernel<U::Erf>;
  r["graph.sin"] = unaryKernel<U::Sin>;
  r["graph.cos"] = unaryKernel<U::Cos>;
  r["graph.atan"] = unaryKernel<U::Atan>;
  r["graph.floor"] = unaryKernel<U::Floor>;
  r["graph.sigmoid"] = unaryKernel<U::Sigmoid>;
  r["graph.silu"] = unaryKernel<U::Silu>;
  r["graph.gelu"] = geluKernel;
  r["graph.dropout"] = dropoutKernel;
  r["graph.activation_grad"] = activationGradKernel;
  r["graph.where"] = whereKernel;
  r["graph.compare"] = compareKernel;
  r["graph.broadcast_to"] = broadcastToKernel;
  r["runtime.accumulate"] = accumulateKernel;
  r["runtime.scale"] = scaleKernel;
}

} // namespace cleave::cuda
