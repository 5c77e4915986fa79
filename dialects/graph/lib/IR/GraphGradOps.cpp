//===- GraphGradOps.cpp - Verifiers of backward and optimizer ops ---------===//
//
// Backward ops mirror a forward op, so each is checked by running the
// forward op's shape rule and comparing: one definition of every shape.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"

using namespace mlir;
using namespace cleave::graph;

/// Emits an error unless `forward` (the forward op's inferred result) is
/// `expected`.
static LogicalResult expectForward(Operation *op, LogicalResult inferred,
                                   const SmallVectorImpl<Type> &forward,
                                   Type expected, StringRef what) {
  // `forward` is read only here, after `inferred` has filled it.
  if (failed(inferred))
    return failure();
  if (forward.empty() || forward.front() != expected)
    return op->emitOpError() << what << " has type " << expected
                             << " but the forward op gives "
                             << (forward.empty() ? Type() : forward.front());
  return success();
}

LogicalResult ActivationGradOp::verify() {
  if (!llvm::is_contained({"relu", "gelu", "gelu_tanh", "silu", "sigmoid",
                           "tanh", "erf"},
                          getKind()))
    return emitOpError("unknown activation '") << getKind() << "'";
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(getLoc(), "softmax axis", getAxis(),
                    cast<RankedTensorType>(getType()).getRank());
}

/// Shared by the layer- and RMS-norm gradients: dx like the input, then one
/// parameter gradient of shape input.shape[axis:] per `numParams`.
static LogicalResult inferNormGrad(std::optional<Location> loc, Type input,
                                   Type grad, Value scale, int64_t axis,
                                   int numParams,
                                   SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(input);
  if (failed(verifyAxis(loc, "normalisation axis", axis, in.getRank())))
    return failure();
  if (grad != input)
    return emitOptionalError(loc, "gradient ", grad,
                             " must have the input's type ", input);
  auto param = RankedTensorType::get(in.getShape().drop_front(axis),
                                     in.getElementType());
  if (scale && failed(verifyNormParam(loc, "scale", input, axis,
                                      scale.getType())))
    return failure();
  types.push_back(input);
  for (int i = 0; i < numParams; ++i)
    types.push_back(param);
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferNormGrad(loc, adaptor.getInput().getType(),
                       adaptor.getGrad().getType(), adaptor.getScale(),
                       adaptor.getAxis(), 2, types);
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferNormGrad(loc, adaptor.getInput().getType(),
                       adaptor.getGrad().getType(), adaptor.getScale(),
                       adaptor.getAxis(), 1, types);
}

LogicalResult BatchNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  if (in.getRank() < 2 || adaptor.getGrad().getType() != in)
    return emitOptionalError(loc, "batch_norm_grad expects input and "
                                  "gradient of one [N, C, ...] type");
  auto channel =
      RankedTensorType::get({in.getDimSize(1)}, in.getElementType());
  for (Value v : {adaptor.getScale(), adaptor.getMean(),
                  adaptor.getVariance()})
    if (v.getType() != channel)
      return emitOptionalError(loc, "per-channel operands must be ", channel,
                               ", got ", v.getType());
  types.append({in, channel, channel});
  return success();
}

LogicalResult GatherGradOp::verify() {
  SmallVector<Type> forward;
  return expectForward(*this,
                       inferGatherResult(getLoc(), getType(),
                                         getIndices().getType(), getAxis(),
                                         forward),
                       forward, getGrad().getType(), "gradient");
}

LogicalResult SliceGradOp::verify() {
  auto grad = cast<RankedTensorType>(getGrad().getType());
  if ((int64_t)getStarts().size() != grad.getRank() ||
      (int64_t)getStrides().size() != grad.getRank())
    return emitOpError("needs one start and stride per dimension");
  SmallVector<int64_t> limits;
  for (int64_t i = 0; i < grad.getRank(); ++i)
    limits.push_back(getStarts()[i] +
                     (grad.getDimSize(i) - 1) * getStrides()[i] + 1);
  SmallVector<Type> forward;
  return expectForward(*this,
                       inferSliceResult(getLoc(), getType(), getStarts(),
                                        limits, getStrides(), forward),
                       forward, grad, "gradient");
}

LogicalResult ReduceMaxGradOp::verify() {
  SmallVector<Type> forward;
  return expectForward(*this,
                       inferReduceResult(getLoc(), getInput().getType(),
                                         getAxes(), getKeepdims(), forward),
                       forward, getGrad().getType(), "gradient");
}

LogicalResult Conv2dInputGradOp::verify() {
  SmallVector<Type> forward;
  return expectForward(*this,
                       inferConv2dResult(getLoc(), getType(),
                                         getFilter().getType(), Type(),
                                         getStrides(), getPadding(),
                                         getDilations(), getGroups(), forward),
                       forward, getGrad().getType(), "gradient");
}

double Conv2dInputGradOp::getFlops() {
  auto filter = cast<ShapedType>(getFilter().getType());
  return 2.0 * static_cast<double>(numElements(getGrad().getType())) *
         filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
}

LogicalResult Conv2dFilterGradOp::verify() {
  SmallVector<Type> forward;
  return expectForward(*this,
                       inferConv2dResult(getLoc(), getInput().getType(),
                                         getType(), Type(), getStrides(),
                                         getPadding(), getDilations(),
                                         getGroups(), forward),
                       forward, getGrad().getType(), "gradient");
}

double Conv2dFilterGradOp::getFlops() {
  auto filter = cast<ShapedType>(getType());
  return 2.0 * static_cast<double>(numElements(getGrad().getType())) *
         filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3);
}

LogicalResult Pool2dGradOp::verify() {
  if (getKind() != "max" && getKind() != "avg")
    return emitOpError("kind must be max or avg, got '") << getKind() << "'";
  SmallVector<Type> forward;
  return expectForward(*this,
                       inferPool2dResult(getLoc(), getInput().getType(),
                                         getKernel(), getStrides(),
                                         getPadding(), forward),
                       forward, getGrad().getType(), "gradient");
}

LogicalResult MoeCombineGradOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  SmallVector<Type> forward;
  if (failed(MoeCombineOp::inferReturnTypes(
          nullptr, loc,
          MoeCombineOp::Adaptor({adaptor.getInput(), adaptor.getWeights(),
                                 adaptor.getIndices()}),
          forward)))
    return failure();
  if (forward.front() != adaptor.getGrad().getType())
    return emitOptionalError(loc, "gradient ", adaptor.getGrad().getType(),
                             " must have the combined type ", forward.front());
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getWeights().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Fused attention
//===----------------------------------------------------------------------===//

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  SmallVector<Type> forward;
  if (failed(inferAttentionResult(loc, adaptor.getQuery().getType(),
                                  adaptor.getKey().getType(),
                                  adaptor.getValue().getType(), forward)))
    return failure();
  if (adaptor.getOut().getType() != forward[0] ||
      adaptor.getGrad().getType() != forward[0])
    return emitOptionalError(loc, "attention_grad: out and grad must be ",
                             forward[0], ", got ", adaptor.getOut().getType(),
                             " and ", adaptor.getGrad().getType());
  if (adaptor.getLse().getType() != forward[1])
    return emitOptionalError(loc, "attention_grad: lse must be ", forward[1],
                             ", got ", adaptor.getLse().getType());
  types.push_back(adaptor.getQuery().getType());
  types.push_back(adaptor.getKey().getType());
  types.push_back(adaptor.getValue().getType());
  return success();
}

LogicalResult AttentionGradOp::verify() {
  if (getMask() && failed(verifyAttentionMask(getLoc(), getQuery().getType(),
                                              getKey().getType(),
                                              getMask().getType())))
    return failure();
  return verifyAttentionAttributes(
      getLoc(), getCausal(), getQueryBlocks().value_or(ArrayAttr()),
      getZigzag(), getQuery().getType(), getScale().convertToDouble());
}

double AttentionGradOp::getFlops() {
  return attentionFlops(getQuery().getType(), getKey().getType(), getCausal(),
                        /*backward=*/true);
}
