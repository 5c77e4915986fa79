//===- GraphOps.cpp - Verifiers, type inference and folders ---------------===//
//
// Shape rules are in ShapeInference.cpp; this file wires them to the ops and
// holds the checks that are specific to one op.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "llvm/ADT/StringSet.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace cleave::graph;

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

LogicalResult InputOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  return success();
}

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  if (auto value = getValueAttr()) {
    if (value.getType() != getType())
      return emitOpError("value of type ")
             << value.getType() << " does not match the result type "
             << getType();
  }
  if (auto aliases = getAliasesAttr()) {
    llvm::StringSet<> seen;
    seen.insert(getName());
    for (Attribute a : aliases) {
      StringRef alias = cast<StringAttr>(a).getValue();
      if (alias.empty())
        return emitOpError("has an empty alias");
      if (!seen.insert(alias).second)
        return emitOpError("alias '") << alias << "' repeats a name";
    }
  }
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getValue().getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  return success();
}

LogicalResult CastOp::verify() {
  auto in = cast<ShapedType>(getInput().getType());
  auto out = cast<ShapedType>(getType());
  if (in.getShape() != out.getShape())
    return emitOpError("cannot change the shape from ")
           << in << " to " << out;
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(loc,
                              {adaptor.getCondition().getType(),
                               adaptor.getLhs().getType(),
                               adaptor.getRhs().getType()},
                              types);
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  SmallVector<Type> broadcast;
  if (failed(inferBroadcastResult(
          loc, {adaptor.getLhs().getType(), adaptor.getRhs().getType()},
          broadcast)))
    return failure();
  types.push_back(cast<RankedTensorType>(broadcast[0])
                      .clone(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult ModOp::verify() { return verifyArithmeticOperands(*this); }

LogicalResult BitShiftOp::verify() {
  if (!cast<RankedTensorType>(getLhs().getType())
           .getElementType()
           .isUnsignedInteger())
    return emitOpError("shifts unsigned integers, got ") << getLhs().getType();
  return success();
}

LogicalResult CompareOp::verify() {
  if (!llvm::is_contained({"eq", "ne", "lt", "le", "gt", "ge"},
                          getPredicate()))
    return emitOpError("unknown predicate '")
           << getPredicate() << "' (expected eq, ne, lt, le, gt or ge)";
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  FailureOr<Shape> shape =
      broadcastShapes(getLoc(), {Shape(in.getShape()), Shape(out.getShape())});
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != out.getShape() ||
      in.getElementType() != out.getElementType())
    return emitOpError("cannot broadcast ") << in << " to " << out;
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferMatmulResult(loc, adaptor.getLhs().getType(),
                           adaptor.getRhs().getType(),
                           adaptor.getTransposeLhs(),
                           adaptor.getTransposeRhs(), types);
}

int64_t MatmulOp::getContractionSize() {
  auto lhs = cast<ShapedType>(getLhs().getType());
  return lhs.getDimSize(lhs.getRank() - (getTransposeLhs() ? 2 : 1));
}

double MatmulOp::getFlops() {
  // In double: a product of zoo-sized dimensions can pass int64's range.
  return 2.0 * static_cast<double>(numElements(getType())) *
         static_cast<double>(getContractionSize());
}

//===----------------------------------------------------------------------===//
// Normalisation and attention
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getType().getRank();
  if (failed(verifyAxis(getLoc(), "softmax axis", getAxis(), rank)))
    return failure();
  if (getCausal() && (rank < 2 || getAxis() != rank - 1))
    return emitOpError("causal softmax must run along the last axis of a "
                       "[..., query, key] tensor");
  if (getQueryBlocks() && !getCausal())
    return emitOpError("query_blocks places queries for the causal mask; "
                       "it needs `causal`");
  if (getQueryBlocks() && getQueryBlocks()->empty())
    return emitOpError("query_blocks must name at least one mesh axis");
  if (getZigzag() && !getQueryBlocks())
    return emitOpError("zigzag places the two chunks of a block of queries; "
                       "it needs query_blocks");
  if (getZigzag() && getType().getDimSize(rank - 2) % 2)
    return emitOpError("zigzag splits the queries into two chunks, but there "
                       "are ")
           << getType().getDimSize(rank - 2);
  return success();
}

LogicalResult LayerNormOp::verify() {
  int64_t rank = getType().getRank();
  if (failed(verifyAxis(getLoc(), "layer_norm axis", getAxis(), rank)))
    return failure();
  if (getScale() && failed(verifyNormParam(getLoc(), "scale", getType(),
                                           getAxis(), getScale().getType())))
    return failure();
  if (getBias() && failed(verifyNormParam(getLoc(), "bias", getType(),
                                          getAxis(), getBias().getType())))
    return failure();
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError("epsilon must not be negative");
  return success();
}

LogicalResult RmsNormOp::verify() {
  int64_t rank = getType().getRank();
  if (failed(verifyAxis(getLoc(), "rms_norm axis", getAxis(), rank)))
    return failure();
  if (getScale() && failed(verifyNormParam(getLoc(), "scale", getType(),
                                           getAxis(), getScale().getType())))
    return failure();
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError("epsilon must not be negative");
  return success();
}

LogicalResult BatchNormOp::verify() {
  auto input = cast<RankedTensorType>(getType());
  if (input.getRank() < 2)
    return emitOpError("expects an [N, C, ...] input, got ") << input;
  for (Value v : {getScale(), getBias(), getMean(), getVariance()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != 1 || t.getDimSize(0) != input.getDimSize(1) ||
        t.getElementType() != input.getElementType())
      return emitOpError("per-channel operands must be [")
             << input.getDimSize(1) << "] of " << input.getElementType()
             << ", got " << t;
  }
  return success();
}

LogicalResult RopeOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (type.getRank() != 4)
    return emitOpError("expects [batch, seq, heads, head_dim], got ") << type;
  if (type.getDimSize(3) % 2)
    return emitOpError("head_dim must be even, got ") << type.getDimSize(3);
  if (getTheta().convertToDouble() <= 0)
    return emitOpError("theta must be positive");
  if (getZigzag() && !getPositionBlocks())
    return emitOpError("zigzag places the two chunks of a sequence block; it "
                       "needs position_blocks");
  if (getZigzag() && type.getDimSize(1) % 2)
    return emitOpError("zigzag splits the sequence into two chunks, but it "
                       "has ")
           << type.getDimSize(1) << " positions";
  if (Value positions = getPositions()) {
    auto p = cast<RankedTensorType>(positions.getType());
    if (p.getRank() != 2 || p.getDimSize(0) != type.getDimSize(0) ||
        p.getDimSize(1) != type.getDimSize(1))
      return emitOpError("positions must be [batch, seq] = [")
             << type.getDimSize(0) << ", " << type.getDimSize(1) << "], got "
             << p;
    if (getOffset() != 0 || getPositionBlocks())
      return emitOpError("takes its positions from the positions operand; "
                         "offset and position_blocks do not apply");
  }
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferAttentionResult(loc, adaptor.getQuery().getType(),
                              adaptor.getKey().getType(),
                              adaptor.getValue().getType(), types);
}

LogicalResult AttentionOp::verify() {
  if (getMask() && failed(verifyAttentionMask(getLoc(), getQuery().getType(),
                                              getKey().getType(),
                                              getMask().getType())))
    return failure();
  return verifyAttentionAttributes(
      getLoc(), getCausal(), getQueryBlocks().value_or(ArrayAttr()),
      getZigzag(), getQuery().getType(), getScale().convertToDouble());
}

double AttentionOp::getFlops() {
  return attentionFlops(getQuery().getType(), getKey().getType(), getCausal(),
                        /*backward=*/false);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferGatherResult(loc, adaptor.getData().getType(),
                           adaptor.getIndices().getType(), adaptor.getAxis(),
                           types);
}

LogicalResult ReshapeOp::verify() {
  if (numElements(getInput().getType()) != numElements(getType()))
    return emitOpError("cannot reshape ")
           << getInput().getType() << " (" << numElements(getInput().getType())
           << " elements) to " << getType() << " (" << numElements(getType())
           << " elements)";
  if (getElementTypeOrSelf(getInput().getType()) !=
      getElementTypeOrSelf(getType()))
    return emitOpError("cannot change the element type");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) -> reshape(x).
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferTransposeResult(loc, adaptor.getInput().getType(),
                              adaptor.getPermutation(), types);
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferSliceResult(loc, adaptor.getInput().getType(),
                          adaptor.getStarts(), adaptor.getLimits(),
                          adaptor.getStrides(), types);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferConcatResult(loc, adaptor.getInputs().getTypes(),
                           adaptor.getAxis(), types);
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferSplitResult(loc, adaptor.getInput().getType(), adaptor.getAxis(),
                          adaptor.getSizes(), types);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Type bias = adaptor.getBias() ? adaptor.getBias().getType() : Type();
  return inferConv2dResult(loc, adaptor.getInput().getType(),
                           adaptor.getFilter().getType(), bias,
                           adaptor.getStrides(), adaptor.getPadding(),
                           adaptor.getDilations(), adaptor.getGroups(), types);
}

double Conv2dOp::getFlops() {
  auto filter = cast<ShapedType>(getFilter().getType());
  double perOutput = 2.0 * filter.getDimSize(1) * filter.getDimSize(2) *
                     filter.getDimSize(3);
  return static_cast<double>(numElements(getType())) *
         (perOutput + (getBias() ? 1 : 0));
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() != 4)
    return emitOptionalError(loc, "global_avg_pool expects an NCHW input, "
                                  "got rank ",
                             input.getRank());
  types.push_back(RankedTensorType::get(
      {input.getDimSize(0), input.getDimSize(1), 1, 1},
      input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto logits = cast<RankedTensorType>(adaptor.getLogits().getType());
  auto labels = cast<RankedTensorType>(adaptor.getLabels().getType());
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != labels.getShape())
    return emitOptionalError(loc, "labels ", labels,
                             " must have the shape of logits ", logits,
                             " without its class dimension");
  types.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoeGateOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto logits = cast<RankedTensorType>(adaptor.getLogits().getType());
  int64_t k = adaptor.getTopK();
  if (logits.getRank() != 2)
    return emitOptionalError(loc, "router logits must be [tokens, experts], "
                                  "got ",
                             logits);
  if (k < 1 || k > logits.getDimSize(1))
    return emitOptionalError(loc, "top_k = ", k, " must be in [1, ",
                             logits.getDimSize(1), "]");
  types.push_back(RankedTensorType::get({logits.getDimSize(0), k},
                                        logits.getElementType()));
  types.push_back(RankedTensorType::get({logits.getDimSize(0), k},
                                        IntegerType::get(ctx, 64)));
  return success();
}

/// Checks that `indices` is [tokens, k] for an activation [tokens, hidden].
static LogicalResult verifyRouting(std::optional<Location> loc,
                                   RankedTensorType tokens,
                                   RankedTensorType indices) {
  if (tokens.getRank() != 2 || indices.getRank() != 2 ||
      indices.getDimSize(0) != tokens.getDimSize(0))
    return emitOptionalError(loc, "expected tokens [T, H] and routing "
                                  "[T, k], got ",
                             tokens, " and ", indices);
  return success();
}

LogicalResult MoeDispatchOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  if (failed(verifyRouting(loc, input, indices)))
    return failure();
  if (adaptor.getNumExperts() < 1 || adaptor.getCapacity() < 1)
    return emitOptionalError(loc, "experts and capacity must be positive");
  types.push_back(RankedTensorType::get(
      {adaptor.getNumExperts(), adaptor.getCapacity(), input.getDimSize(1)},
      input.getElementType()));
  return success();
}

LogicalResult MoeCombineOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weights = cast<RankedTensorType>(adaptor.getWeights().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  if (input.getRank() != 3)
    return emitOptionalError(loc, "expert outputs must be [experts, capacity, "
                                  "H], got ",
                             input);
  if (weights.getShape() != indices.getShape() || weights.getRank() != 2)
    return emitOptionalError(loc, "weights ", weights, " and indices ",
                             indices, " must both be [T, k]");
  types.push_back(RankedTensorType::get(
      {weights.getDimSize(0), input.getDimSize(2)}, input.getElementType()));
  return success();
}

#define GET_OP_CLASSES
#include "cleave/Dialect/Graph/IR/GraphOps.cpp.inc"
