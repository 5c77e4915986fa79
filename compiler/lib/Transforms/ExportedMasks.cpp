//===- ExportedMasks.cpp - An exported decoder's masks made causal --------===//
//
// See ExportedMasks.h. The mask is evaluated, not pattern-matched: each
// exporter and each transformers release builds it from different ops
// (Where over a boolean triangle and the padding row, Expand, GatherND,
// And, Max, LessOrEqual over Range...), and only its value says whether
// it is the causal triangle.
//
//===----------------------------------------------------------------------===//

#include "cleave/Transforms/ExportedMasks.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Evaluator/GraphEvaluator.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave {
namespace {

/// The ops `mask` is computed by, in block order, when they read nothing
/// but constants, frozen parameters with values and the padding input.
std::optional<SmallVector<Operation *>> sliceOf(Value mask) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> stack{mask};
  while (!stack.empty()) {
    Operation *def = stack.pop_back_val().getDefiningOp();
    if (!def || def->getNumRegions())
      return std::nullopt;
    if (!seen.insert(def))
      continue;
    if (auto in = dyn_cast<InputOp>(def)) {
      if (in.getName() != kPaddingMaskInput)
        return std::nullopt;
      continue;
    }
    if (auto p = dyn_cast<ParamOp>(def)) {
      if (!p.getFrozen() || !p.getValueAttr())
        return std::nullopt;
      continue;
    }
    llvm::append_range(stack, def->getOperands());
  }
  SmallVector<Operation *> ops(seen.begin(), seen.end());
  llvm::sort(ops, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return ops;
}

/// The mask's value with the padding input all ones; none when it does
/// not evaluate (an op the evaluator does not run, say).
std::optional<kernels::Tensor> evaluate(Value mask,
                                        ArrayRef<Operation *> slice) {
  MLIRContext *ctx = mask.getContext();
  Location loc = mask.getLoc();
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(scratch->getBody());
  auto fn = func::FuncOp::create(b, loc, "forward",
                                 FunctionType::get(ctx, {}, {mask.getType()}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  IRMapping map;
  GraphEvaluator evaluator;
  for (Operation *op : slice) {
    b.clone(*op, map);
    if (auto in = dyn_cast<InputOp>(op)) {
      ArrayRef<int64_t> dims = in.getType().getShape();
      kernels::Shape shape(dims.begin(), dims.end());
      if (in.getType().getElementType().isInteger(1))
        evaluator.bindings[in.getName().str()] = kernels::MaskTensor(shape, 1);
      else
        evaluator.bindings[in.getName().str()] = kernels::IndexTensor(shape, 1);
    }
  }
  func::ReturnOp::create(b, loc, map.lookup(mask));
  // A mask the evaluator cannot run stays a mask; nothing to report.
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  FailureOr<std::vector<EvalTensor>> out = evaluator.run(fn);
  if (failed(out) || out->size() != 1 ||
      !std::holds_alternative<kernels::Tensor>(out->front()))
    return std::nullopt;
  return std::get<kernels::Tensor>(std::move(out->front()));
}

/// Whether `mask` ([..., Mq, Sk]) is 0 where key j <= i + Sk - Sq and
/// -1e9 or less elsewhere, for every query row i.
bool isCausalTriangle(const kernels::Tensor &mask, int64_t sq, int64_t sk) {
  const kernels::Shape &shape = mask.shape();
  if (shape.size() < 2 || shape.back() != sk)
    return false;
  int64_t mq = shape[shape.size() - 2];
  if (mq != sq)
    return false; // one row for every query is causal only at Sq = 1
  for (int64_t n = 0; n < mask.numElements(); ++n) {
    int64_t j = n % sk, i = (n / sk) % mq;
    float v = mask[n];
    if (j <= i + sk - sq ? v != 0.0f : !(v <= -1e9f))
      return false;
  }
  return true;
}

int64_t dimFromEnd(Value v, int64_t k) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getDimSize(t.getRank() - k);
}

} // namespace

int64_t foldExportedCausalMasks(func::FuncOp f) {
  int64_t folded = 0;
  llvm::SetVector<Operation *> dropped;
  f.walk([&](AttentionOp a) {
    Value mask = a.getMask();
    if (!mask)
      return;
    std::optional<SmallVector<Operation *>> slice = sliceOf(mask);
    if (!slice)
      return;
    std::optional<kernels::Tensor> value = evaluate(mask, *slice);
    if (!value || !isCausalTriangle(*value, dimFromEnd(a.getQuery(), 2),
                                    dimFromEnd(a.getKey(), 2)))
      return;
    a.getMaskMutable().clear();
    a.setCausal(true);
    dropped.insert(slice->begin(), slice->end());
    ++folded;
  });
  // What only the dropped masks read goes with them, latest first.
  SmallVector<Operation *> ops(dropped.begin(), dropped.end());
  llvm::sort(ops, [](Operation *a, Operation *b) {
    return b->isBeforeInBlock(a);
  });
  for (Operation *op : ops)
    if (op->use_empty())
      op->erase();
  return folded;
}

} // namespace cleave
