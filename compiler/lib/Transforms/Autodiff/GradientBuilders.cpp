//===- GradientBuilders.cpp - Helpers shared by derivative rules ----------===//

#include "GradientBuilders.h"

#include "cleave/Transforms/Autodiff.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace cleave::autodiff {

Type elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

Value splat(OpBuilder &b, Location loc, Type type, double value) {
  auto tensor = cast<RankedTensorType>(type);
  Attribute element = b.getFloatAttr(tensor.getElementType(), value);
  return graph::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(tensor, element));
}

Value scalar(OpBuilder &b, Location loc, Type elementType, double value) {
  return splat(b, loc, RankedTensorType::get({}, elementType), value);
}

Value reduceTo(OpBuilder &b, Location loc, Value grad, Type target) {
  if (grad.getType() == target)
    return grad;
  auto g = cast<RankedTensorType>(grad.getType());
  auto t = cast<RankedTensorType>(target);
  int64_t extra = g.getRank() - t.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < g.getRank(); ++i)
    if (i < extra || (t.getDimSize(i - extra) == 1 && g.getDimSize(i) != 1))
      axes.push_back(i);
  Value summed = grad;
  if (!axes.empty())
    summed = graph::ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/true);
  if (summed.getType() == target)
    return summed;
  return graph::ReshapeOp::create(b, loc, target, summed);
}

} // namespace cleave::autodiff

namespace cleave {
void registerAutodiffExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, graph::GraphDialect *) {
    autodiff::attachElementwiseRules(ctx);
    autodiff::attachStructuredRules(ctx);
    autodiff::attachMovementRules(ctx);
    autodiff::attachCollectiveRules(ctx);
  });
}
} // namespace cleave
