//===- ComputeKernels.cpp - Forward graph ops on the CPU kernels ----------===//
//
// The same mapping from graph ops to runtime/kernels as the compiler's
// reference evaluator (compiler/lib/Evaluator/GraphEvaluator.cpp), over
// arena views instead of owned tensors. Attribute names are the ODS names
// of GraphOps.td.
//
//===----------------------------------------------------------------------===//

#include "Registry.h"

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"

#include "cleave/runtime/kernels/Attention.h"
#include "cleave/runtime/kernels/Conv.h"
#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/IntegerElementwise.h"
#include "cleave/runtime/kernels/Loss.h"
#include "cleave/runtime/kernels/Matmul.h"
#include "cleave/runtime/kernels/Moe.h"
#include "cleave/runtime/kernels/Normalization.h"
#include "cleave/runtime/kernels/PagedAttention.h"
#include "cleave/runtime/plan/PlanIO.h"
#include "cleave/runtime/kernels/Reduction.h"

#include <cstring>
#include <optional>
#include <stdexcept>

namespace cleave::executor {

namespace k = cleave::kernels;

namespace {

template <k::BinaryOp Op> void binaryKernel(OpContext &c) {
  c.expectArity(2, 1);
  if (c.input(0) && plan::isIntegerDType(c.input(0).dtype)) {
    std::optional<k::IntegerOp> op = k::integerOpOf(Op);
    if (!op)
      throw std::invalid_argument("computes on floats only, got " +
                                  plan::DType_Name(c.input(0).dtype));
    return integerBinaryKernel(c, *op);
  }
  k::binary(Op, c.in(0), c.in(1), c.out(0));
}

template <k::UnaryOp Op> void unaryKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::unary(Op, c.in(0), c.out(0));
}

/// A copy between tensors of the same number of bytes (reshape, and a cast
/// between floats, which the CPU computes in fp32 alike).
void copyKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &in = c.input(0), &out = c.output(0);
  if (!in || !out)
    throw std::invalid_argument("needs an input and an output");
  if (in.numBytes() != out.numBytes())
    throw std::invalid_argument("copies " + std::to_string(in.numBytes()) +
                                " bytes into " +
                                std::to_string(out.numBytes()));
  if (in.data != out.data)
    std::memmove(out.data, in.data, in.numBytes());
}

void castKernel(OpContext &c) {
  c.expectArity(1, 1);
  const TensorView &in = c.input(0), &out = c.output(0);
  if (in.dtype == out.dtype)
    return copyKernel(c);
  // Mixed precision: fp32 master weights to their bf16 (fp16) copies, a
  // 16-bit value to fp32 (the loss's logits, a weight's gradient).
  bool sameSize = in.numElements() == out.numElements();
  if (in.dtype == plan::F32 && out.dtype == plan::BF16 && sameSize)
    return comm::floatsToBf16(static_cast<const float *>(in.data),
                              static_cast<uint16_t *>(out.data),
                              in.numElements());
  if (in.dtype == plan::F32 && out.dtype == plan::F16 && sameSize)
    return comm::floatsToF16(static_cast<const float *>(in.data),
                             static_cast<uint16_t *>(out.data),
                             in.numElements());
  if (in.dtype == plan::BF16 && out.dtype == plan::F32 && sameSize)
    return comm::bf16ToFloats(static_cast<const uint16_t *>(in.data),
                              static_cast<float *>(out.data),
                              in.numElements());
  if (in.dtype == plan::F16 && out.dtype == plan::F32 && sameSize)
    return comm::f16ToFloats(static_cast<const uint16_t *>(in.data),
                             static_cast<float *>(out.data),
                             in.numElements());
  // Everything else (integer ids used as floats, float ids back to
  // indices, between integer widths, to and from bool) element by element.
  convertElements(in, out);
}


void conv2dKernel(OpContext &c) {
  c.expectArity(2, 3, 1);
  k::conv2d(c.in(0), c.in(1), c.inOpt(2), convOptions(c), c.out(0));
}

template <k::ReduceOp Op> void reduceKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::reduce(Op, c.in(0), c.attrInts("axes"), c.attrBool("keepdims"),
            c.out(0));
}

} // namespace

void registerComputeKernels(Registry &r) {
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
  r["graph.gelu"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::unary(c.attrBool("approximate_tanh") ? U::GeluTanh : U::Gelu, c.in(0),
             c.out(0));
  };
  r["graph.dropout"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::dropout(c.in(0), c.attrFloat("ratio"), c.attrInt("seed", 0), c.out(0));
  };
  r["graph.cast"] = castKernel;
  r["graph.stop_gradient"] = copyKernel;
  r["graph.reshape"] = copyKernel;
  r["graph.where"] = whereAnyKernel;
  r["graph.compare"] = compareAnyKernel;
  r["graph.bit_shift"] = [](OpContext &c) {
    integerBinaryKernel(c, c.attrBool("right") ? k::IntegerOp::ShiftRight
                                               : k::IntegerOp::ShiftLeft);
  };
  r["graph.mod"] = [](OpContext &c) {
    integerBinaryKernel(c, c.attrBool("fmod") ? k::IntegerOp::FMod
                                              : k::IntegerOp::Mod);
  };
  r["graph.broadcast_to"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::Tensor zeros(c.output(0).shape);
    k::binary(B::Add, c.in(0), zeros, c.out(0));
  };
  r["graph.matmul"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::matmul(c.in(0), c.in(1), c.attrBool("transpose_lhs"),
              c.attrBool("transpose_rhs"), c.out(0));
  };
  r["graph.softmax"] = [](OpContext &c) {
    c.expectArity(1, 1);
    std::optional<k::RowOffsets> shift;
    if (c.has("query_blocks")) {
      const TensorView &in = c.input(0);
      shift = c.causalShift(in.shape[in.shape.size() - 2], in.shape.back());
    }
    k::softmax(c.in(0), c.attrAxis("axis", c.in(0).rank()),
               c.attrBool("causal"), c.out(0), shift);
  };
  r["graph.attention"] = [](OpContext &c) {
    c.expectArity(3, 4, 2);
    k::ConstTensorRef q = c.in(0), key = c.in(1), v = c.in(2);
    k::AttentionShapes shapes = k::attentionShapes(q.shape, key.shape);
    k::FlashAttentionOptions o = attentionOptions(c, shapes, 3);
    k::flashAttention({q.data, shapes.query}, {key.data, shapes.key},
                      {v.data, shapes.key}, o, {c.out(0).data, shapes.query},
                      {c.out(1).data, shapes.lse});
  };
  r["graph.cache_write"] = [](OpContext &c) {
    c.expectArity(3, 1);
    // The lowering writes the cache in place (its result is the cache's
    // own tensor); a copy first where it is not.
    k::TensorRef cache = c.out(0);
    if (cache.data != c.in(1).data)
      std::copy(c.in(1).data, c.in(1).data + c.in(1).numElements(),
                cache.data);
    k::cacheWrite(c.in(0), c.index(2), cache);
  };
  r["graph.paged_attention"] = [](OpContext &c) {
    c.expectArity(5, 1);
    k::pagedAttention(c.in(0), c.in(1), c.in(2), c.index(3), c.index(4),
                      static_cast<float>(c.attrFloat("scale")), c.out(0));
  };
  r["graph.layer_norm"] = [](OpContext &c) {
    c.expectArity(1, 3, 1);
    k::layerNorm(c.in(0), c.inOpt(1), c.inOpt(2),
                 c.attrAxis("axis", c.in(0).rank()),
                 c.attrFloat("epsilon"), c.out(0));
  };
  r["graph.rms_norm"] = [](OpContext &c) {
    c.expectArity(1, 2, 1);
    k::rmsNorm(c.in(0), c.inOpt(1), c.attrAxis("axis", c.in(0).rank()),
               c.attrFloat("epsilon"), c.out(0));
  };
  r["graph.batch_norm"] = [](OpContext &c) {
    c.expectArity(5, 1);
    k::batchNorm(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4),
                 c.attrFloat("epsilon"), c.attrBool("training"), c.out(0));
  };
  r["graph.rope"] = [](OpContext &c) {
    c.expectArity(1, 2, 1);
    double theta = c.attrFloat("theta");
    if (c.inputs.size() == 2 && c.input(1)) { // each token at its own position
      k::ropeAt(c.in(0), theta, c.index(1), c.attrBool("inverse"), c.out(0));
      return;
    }
    // This device's block of the sequence (dimension 1), if it is split.
    k::RowOffsets offset = c.sequenceBlock("position_blocks",
                                           c.input(0).shape[1])
                               .shifted(c.attrInt("offset", 0));
    if (c.attrBool("inverse"))
      k::ropeBackward(c.in(0), theta, offset, c.out(0));
    else
      k::rope(c.in(0), theta, offset, c.out(0));
  };
  r["graph.gather"] = [](OpContext &c) {
    if (c.input(0) && c.input(0).dtype != plan::F32)
      return moveAnyKernel(c, "graph.gather");
    c.expectArity(2, 1);
    k::gather(c.in(0), c.index(1), c.attrAxis("axis", c.in(0).rank()),
              c.out(0));
  };
  r["graph.transpose"] = [](OpContext &c) {
    if (c.input(0) && c.input(0).dtype != plan::F32)
      return moveAnyKernel(c, "graph.transpose");
    c.expectArity(1, 1);
    k::transpose(c.in(0), c.attrInts("permutation"), c.out(0));
  };
  r["graph.slice"] = [](OpContext &c) {
    if (c.input(0) && c.input(0).dtype != plan::F32)
      return moveAnyKernel(c, "graph.slice");
    c.expectArity(1, 1);
    k::slice(c.in(0), c.attrInts("starts"), c.attrInts("limits"),
             c.attrInts("strides"), c.out(0));
  };
  r["graph.concat"] = [](OpContext &c) {
    if (c.input(0) && c.input(0).dtype != plan::F32)
      return moveAnyKernel(c, "graph.concat");
    if (c.outputs.size() != 1)
      throw std::invalid_argument("needs one output");
    std::vector<k::ConstTensorRef> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      ins.push_back(c.in(i));
    k::concat(ins, c.attrAxis("axis", c.out(0).rank()), c.out(0));
  };
  r["graph.split"] = [](OpContext &c) {
    if (c.input(0) && c.input(0).dtype != plan::F32)
      return moveAnyKernel(c, "graph.split");
    if (c.inputs.size() != 1)
      throw std::invalid_argument("needs one input");
    std::vector<k::TensorRef> outs;
    for (size_t i = 0; i < c.outputs.size(); ++i)
      outs.push_back(c.out(i));
    k::split(c.in(0), c.attrAxis("axis", c.in(0).rank()), outs);
  };
  r["graph.reduce_sum"] = reduceKernel<k::ReduceOp::Sum>;
  r["graph.reduce_mean"] = reduceKernel<k::ReduceOp::Mean>;
  r["graph.reduce_max"] = reduceKernel<k::ReduceOp::Max>;
  r["graph.conv2d"] = conv2dKernel;
  r["graph.max_pool2d"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::maxPool2d(c.in(0), poolOptions(c), c.out(0));
  };
  r["graph.avg_pool2d"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::avgPool2d(c.in(0), poolOptions(c), c.out(0));
  };
  r["graph.global_avg_pool"] = [](OpContext &c) {
    c.expectArity(1, 1);
    k::globalAvgPool(c.in(0), c.out(0));
  };
  r["graph.cross_entropy"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::crossEntropy(c.in(0), c.index(1), c.attrInt("ignore_index", -100),
                    c.out(0));
  };
  r["graph.moe_gate"] = [](OpContext &c) {
    c.expectArity(1, 2);
    k::moeGate(c.in(0), c.attrInt("top_k"), c.attrBool("renormalize"),
               c.out(0), c.outIndex(1));
  };
  r["graph.moe_dispatch"] = [](OpContext &c) {
    c.expectArity(2, 1);
    k::moeDispatch(c.in(0), c.index(1), c.attrInt("num_experts"),
                   c.attrInt("capacity"), c.out(0));
  };
  r["graph.moe_combine"] = [](OpContext &c) {
    c.expectArity(3, 1);
    k::moeCombine(c.in(0), c.in(1), c.index(2), c.out(0));
  };
}



} // namespace cleave::executor
