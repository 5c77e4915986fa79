//===- PipelineSplit.cpp - cleave-pipeline-split --------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Analysis/LayerNumbering.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace cleave {
#define GEN_PASS_DEF_PIPELINESPLIT
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

struct StageAssignment {
  /// Layer per op (-1: before the first layer).
  llvm::DenseMap<Operation *, int64_t> layer;
  /// Ops repeated in every stage that reads them.
  llvm::DenseSet<Operation *> repeated;
  int64_t numLayers = 0;
};

StageAssignment assignLayers(func::FuncOp forward, bool blocks) {
  StageAssignment a;
  cleave::BlockNumbering numbering;
  if (blocks)
    numbering = cleave::numberResidualBlocks(forward.front());
  for (Operation &op : forward.front().without_terminator()) {
    int64_t layer = -1;
    if (blocks) {
      // The structure says where every op is; only sources are repeated.
      layer = numbering.layer.lookup(&op);
      a.layer[&op] = layer;
      if (isa<InputOp, ConstantOp, ParamOp>(op))
        a.repeated.insert(&op);
      continue;
    }
    if (auto param = dyn_cast<ParamOp>(op))
      layer = cleave::layerOfParamName(param.getName());
    bool fromRepeated = true;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      layer = std::max(layer, a.layer.lookup(def));
      fromRepeated &= a.repeated.contains(def);
    }
    a.layer[&op] = layer;
    // Sources, and what is computed from them before any layer (an
    // embedding table gathered over tensor-parallel ranks for a tied head),
    // are repeated in the stages that read them.
    if (isa<InputOp, ConstantOp, ParamOp>(op) || (layer < 0 && fromRepeated))
      a.repeated.insert(&op);
    a.numLayers = std::max(a.numLayers, layer + 1);
  }
  if (blocks)
    a.numLayers = numbering.numBlocks;
  return a;
}

struct PipelineSplitPass
    : public cleave::impl::PipelineSplitBase<PipelineSplitPass> {
  using PipelineSplitBase::PipelineSplitBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<GraphDialect, func::FuncDialect>();
  }

  void runOnOperation() override;
};

void PipelineSplitPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    module.emitError("expected a func.func @forward holding the model");
    return signalPassFailure();
  }
  if (stages < 1) {
    module.emitError("pipeline stages must be positive, got ")
        << static_cast<int64_t>(stages);
    return signalPassFailure();
  }
  if (!forward.getBody().hasOneBlock() || forward.getNumArguments() != 0) {
    forward.emitError("pipeline splitting needs a single-block @forward "
                      "without arguments (inputs as graph.input)");
    return signalPassFailure();
  }
  StageAssignment a = assignLayers(forward, residualBlocks);
  int64_t n = stages, layers = std::max<int64_t>(a.numLayers, 1);
  if (n > layers) {
    if (residualBlocks)
      forward.emitError("cannot cut ")
          << a.numLayers << " residual block(s) into " << n
          << " pipeline stages";
    else
      forward.emitError("cannot cut ")
          << a.numLayers << " layer(s) into " << n
          << " pipeline stages (parameters named like 'h.<layer>.' mark "
             "layers)";
    return signalPassFailure();
  }
  // Stage s holds layers / n layers, the spare ones going to the last
  // stages (the cost model's even split, cost::evenLayerSplit), or the
  // counts asked for.
  std::vector<int64_t> first(n + 1, 0);
  for (int64_t s = 0; s < n; ++s)
    first[s + 1] = first[s] + layers / n + (s >= n - layers % n ? 1 : 0);
  if (!layersPerStage.empty()) {
    int64_t sum = 0;
    bool positive = true;
    for (int64_t count : layersPerStage) {
      sum += count;
      positive &= count > 0;
    }
    if (int64_t(layersPerStage.size()) != n || !positive ||
        sum != a.numLayers) {
      forward.emitError("layers-per-stage needs ")
          << n << " positive counts summing to the model's " << a.numLayers
          << " layer(s), got " << layersPerStage.size() << " summing to "
          << sum;
      return signalPassFailure();
    }
    for (int64_t s = 0; s < n; ++s)
      first[s + 1] = first[s] + layersPerStage[s];
  }
  auto firstLayer = [&](int64_t s) { return first[s]; };
  auto stageOf = [&](Operation *op) -> int64_t {
    int64_t layer = std::max<int64_t>(a.layer.lookup(op), 0);
    int64_t s = 0;
    while (s + 1 < n && firstLayer(s + 1) <= layer)
      ++s;
    return s;
  };

  Block &body = forward.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // Values each stage sends to the next, in producer order.
  std::vector<SmallVector<Value>> sent(n);
  llvm::DenseMap<Value, int64_t> tagOf;
  for (Operation &op : body) {
    bool isReturn = &op == ret.getOperation();
    if (!isReturn && a.repeated.contains(&op))
      continue;
    int64_t consumer = isReturn ? n - 1 : stageOf(&op);
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || a.repeated.contains(def))
        continue;
      int64_t producer = stageOf(def);
      if (producer == consumer)
        continue;
      if (producer != consumer - 1) {
        op.emitOpError("reads a value from pipeline stage ")
            << producer << " in stage " << consumer
            << "; only the previous stage's values can be received";
        return signalPassFailure();
      }
      if (!tagOf.count(v)) {
        tagOf[v] = sent[producer].size();
        sent[producer].push_back(v);
      }
    }
  }

  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  for (int64_t s = 0; s < n; ++s) {
    bool last = s == n - 1;
    auto type = b.getFunctionType(
        {}, last ? forward.getResultTypes() : ArrayRef<Type>());
    auto func = func::FuncOp::create(b, forward.getLoc(),
                                     ("stage" + Twine(s)).str(), type);
    func->setAttr("cleave.stage", b.getI64IntegerAttr(s));
    func->setAttr("cleave.first_layer", b.getI64IntegerAttr(firstLayer(s)));
    func->setAttr("cleave.num_layers",
                  b.getI64IntegerAttr(firstLayer(s + 1) - firstLayer(s)));
    b.setInsertionPointAfter(func);
    OpBuilder inner = OpBuilder::atBlockBegin(func.addEntryBlock());
    IRMapping map;
    if (s > 0)
      for (Value v : sent[s - 1])
        map.map(v, RecvOp::create(inner, v.getLoc(), v.getType(),
                                  inner.getStringAttr("pp"),
                                  inner.getI64IntegerAttr(-1),
                                  inner.getI64IntegerAttr(tagOf[v])));
    // Repeated ops are cloned on first use, with what they read.
    std::function<void(Operation *)> cloneRepeated = [&](Operation *op) {
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && !map.contains(v) && a.repeated.contains(def))
          cloneRepeated(def);
      inner.clone(*op, map);
    };
    for (Operation &op : body) {
      bool isReturn = &op == ret.getOperation();
      if ((!isReturn && a.repeated.contains(&op)) ||
          (isReturn ? !last : stageOf(&op) != s))
        continue;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp();
            def && !map.contains(v) && a.repeated.contains(def))
          cloneRepeated(def);
      inner.clone(op, map);
    }
    if (!last) {
      for (Value v : sent[s])
        SendOp::create(inner, v.getLoc(), map.lookup(v),
                       inner.getStringAttr("pp"), inner.getI64IntegerAttr(1),
                       inner.getI64IntegerAttr(tagOf[v]));
      func::ReturnOp::create(inner, forward.getLoc());
    }
  }
}

} // namespace
