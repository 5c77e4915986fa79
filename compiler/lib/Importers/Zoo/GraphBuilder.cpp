//===- GraphBuilder.cpp - Convenience layer for building graphs -----------===//

#include "GraphBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
namespace gr = cleave::graph;

namespace cleave::zoo {

GraphBuilder::GraphBuilder(MLIRContext &ctx, StringRef modelName)
    : ctx(ctx), b(&ctx) {
  ctx.loadDialect<gr::GraphDialect, func::FuncDialect>();
  Location top = NameLoc::get(StringAttr::get(&ctx, modelName));
  module = ModuleOp::create(top);
  (*module)->setAttr("cleave.model", b.getStringAttr(modelName));
  (*module)->setAttr("cleave.source", b.getStringAttr("zoo"));
  b.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(b, top, "forward", b.getFunctionType({}, {}));
  b.setInsertionPointToStart(func.addEntryBlock());
}

GraphBuilder::Scope::Scope(GraphBuilder &b, StringRef name) : builder(b) {
  builder.scopes.push_back(name.str());
}
GraphBuilder::Scope::~Scope() { builder.scopes.pop_back(); }

std::string GraphBuilder::qualified(StringRef name) const {
  std::string path = llvm::join(scopes, ".");
  if (name.empty())
    return path;
  return path.empty() ? name.str() : path + "." + name.str();
}

Location GraphBuilder::loc() {
  std::string path = qualified("");
  return NameLoc::get(b.getStringAttr(path.empty() ? "model" : path));
}

ArrayRef<int64_t> GraphBuilder::shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

Value GraphBuilder::input(StringRef name, ArrayRef<int64_t> shape,
                          Type elementType) {
  if (!elementType)
    elementType = b.getF32Type();
  return gr::InputOp::create(b, loc(), RankedTensorType::get(shape, elementType),
                             name);
}

Value GraphBuilder::param(StringRef name, ArrayRef<int64_t> shape) {
  std::string full = qualified(name);
  return gr::ParamOp::create(b, NameLoc::get(b.getStringAttr(full)),
                             RankedTensorType::get(shape, b.getF32Type()),
                             full, /*frozen=*/false, ElementsAttr(),
                             /*aliases=*/ArrayAttr());
}

Value GraphBuilder::frozenParam(StringRef name, ArrayRef<int64_t> shape) {
  std::string full = qualified(name);
  return gr::ParamOp::create(b, NameLoc::get(b.getStringAttr(full)),
                             RankedTensorType::get(shape, b.getF32Type()),
                             full, /*frozen=*/true, ElementsAttr(),
                             /*aliases=*/ArrayAttr());
}

Value GraphBuilder::scalar(double value) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return gr::ConstantOp::create(
      b, loc(), DenseElementsAttr::get(type, static_cast<float>(value)));
}

Value GraphBuilder::matmul(Value a, Value w, bool transposeA, bool transposeB) {
  return gr::MatmulOp::create(b, loc(), a, w, transposeA, transposeB);
}
Value GraphBuilder::add(Value x, Value y) {
  return gr::AddOp::create(b, loc(), x, y);
}
Value GraphBuilder::mul(Value x, Value y) {
  return gr::MulOp::create(b, loc(), x, y);
}
Value GraphBuilder::gelu(Value x, bool tanh) {
  return gr::GeluOp::create(b, loc(), x, tanh);
}
Value GraphBuilder::silu(Value x) { return gr::SiluOp::create(b, loc(), x); }
Value GraphBuilder::relu(Value x) { return gr::ReluOp::create(b, loc(), x); }
Value GraphBuilder::tanh(Value x) { return gr::TanhOp::create(b, loc(), x); }

Value GraphBuilder::softmax(Value x, bool causal) {
  int64_t axis = shapeOf(x).size() - 1;
  return gr::SoftmaxOp::create(b, loc(), x, axis, causal);
}

Value GraphBuilder::layerNorm(Value x, int64_t features, double eps) {
  Value scale = param("weight", {features});
  Value bias = param("bias", {features});
  int64_t axis = shapeOf(x).size() - 1;
  return gr::LayerNormOp::create(b, loc(), x, scale, bias,
                                 b.getI64IntegerAttr(axis),
                                 b.getF64FloatAttr(eps));
}

Value GraphBuilder::rmsNorm(Value x, int64_t features, double eps) {
  Value scale = param("weight", {features});
  int64_t axis = shapeOf(x).size() - 1;
  return gr::RmsNormOp::create(b, loc(), x.getType(), x, scale,
                               b.getI64IntegerAttr(axis),
                               b.getF64FloatAttr(eps));
}

Value GraphBuilder::batchNorm(Value x, int64_t channels, double eps) {
  Value scale = param("weight", {channels});
  Value bias = param("bias", {channels});
  Value mean = frozenParam("running_mean", {channels});
  Value var = frozenParam("running_var", {channels});
  return gr::BatchNormOp::create(b, loc(), x.getType(), x, scale, bias, mean,
                                 var, b.getF64FloatAttr(eps),
                                 /*training=*/b.getUnitAttr());
}

Value GraphBuilder::rope(Value x, double theta) {
  return gr::RopeOp::create(b, loc(), x.getType(), x, /*positions=*/Value(),
                            b.getF64FloatAttr(theta),
                            b.getI64IntegerAttr(0), /*inverse=*/UnitAttr(),
                            /*position_blocks=*/ArrayAttr(),
                            /*zigzag=*/UnitAttr());
}

Value GraphBuilder::dropout(Value x, double ratio) {
  if (ratio <= 0)
    return x;
  return gr::DropoutOp::create(b, loc(), x, b.getF64FloatAttr(ratio),
                               b.getI64IntegerAttr(0));
}

Value GraphBuilder::gather(Value table, Value indices) {
  return gr::GatherOp::create(b, loc(), table, indices, 0);
}

Value GraphBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(x.getType()).getElementType());
  return gr::ReshapeOp::create(b, loc(), type, x);
}

Value GraphBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return gr::TransposeOp::create(b, loc(), x, perm);
}

Value GraphBuilder::slice(Value x, int64_t axis, int64_t start, int64_t limit) {
  ArrayRef<int64_t> shape = shapeOf(x);
  SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
      strides(shape.size(), 1);
  starts[axis] = start;
  limits[axis] = limit;
  return gr::SliceOp::create(b, loc(), x, starts, limits, strides);
}

Value GraphBuilder::concat(ValueRange xs, int64_t axis) {
  return gr::ConcatOp::create(b, loc(), xs, axis);
}

Value GraphBuilder::conv2d(Value x, int64_t outChannels, int64_t kernel,
                           int64_t stride, int64_t pad, bool bias) {
  int64_t inChannels = shapeOf(x)[1];
  Value w = param("weight", {outChannels, inChannels, kernel, kernel});
  Value bv = bias ? param("bias", {outChannels}) : Value();
  return gr::Conv2dOp::create(
      b, loc(), x, w, bv, b.getDenseI64ArrayAttr({stride, stride}),
      b.getDenseI64ArrayAttr({pad, pad, pad, pad}),
      b.getDenseI64ArrayAttr({1, 1}), b.getI64IntegerAttr(1));
}

Value GraphBuilder::maxPool(Value x, int64_t kernel, int64_t stride,
                            int64_t pad) {
  return gr::MaxPool2dOp::create(b, loc(), x,
                                 b.getDenseI64ArrayAttr({kernel, kernel}),
                                 b.getDenseI64ArrayAttr({stride, stride}),
                                 b.getDenseI64ArrayAttr({pad, pad, pad, pad}));
}

Value GraphBuilder::globalAvgPool(Value x) {
  return gr::GlobalAvgPoolOp::create(b, loc(), x);
}

Value GraphBuilder::crossEntropy(Value logits, Value labels) {
  return gr::CrossEntropyOp::create(b, loc(), logits, labels,
                                    b.getI64IntegerAttr(-100));
}

Value GraphBuilder::linear(Value x, int64_t in, int64_t out, bool bias) {
  Value y = matmul(x, param("weight", {in, out}));
  return bias ? add(y, param("bias", {out})) : y;
}

void GraphBuilder::finish(ValueRange results) {
  func::ReturnOp::create(b, loc(), results);
  func.setFunctionType(b.getFunctionType({}, TypeRange(results)));
}

} // namespace cleave::zoo
