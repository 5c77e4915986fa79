//===- MixedPrecision.cpp - 16-bit storage, fp32 masters and loss ---------===//
//
// One walk in program order: sources are cast to the 16-bit type (bf16 or
// f16) where read, each op then sees its operands' new types and takes
// 16-bit results when it computes on 16-bit values only. The few fp32 islands (the loss, attention's
// log-sum-exp) are decided by the op, so the rule needs no list of ops
// beyond them.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace cleave {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

RankedTensorType floatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType()) ? t : RankedTensorType();
}

bool isF32(Value v) {
  auto t = floatTensor(v);
  return t && t.getElementType().isF32();
}

bool isHalf(Value v) {
  auto t = floatTensor(v);
  return t && (t.getElementType().isBF16() || t.getElementType().isF16());
}

struct MixedPrecisionPass
    : public cleave::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  Value castTo(OpBuilder &b, Location loc, Value v, Type element) {
    ++numCasts;
    return CastOp::create(b, loc, floatTensor(v).clone(element), v);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    OpBuilder b(func.getContext());
    if (storage != "bf16" && storage != "f16") {
      func.emitError("cleave-mixed-precision: storage '")
          << storage << "' (expected bf16 or f16)";
      return signalPassFailure();
    }
    Type half = storage == "bf16" ? Type(b.getBF16Type()) : b.getF16Type();
    Type f32 = b.getF32Type();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      // Sources: read through a 16-bit copy (the source itself stays fp32).
      if (isa<ParamOp, InputOp, ConstantOp>(op)) {
        Value v = op->getResult(0);
        if (!isF32(v) || v.use_empty())
          continue;
        b.setInsertionPointAfter(op);
        Value copy = castTo(b, op->getLoc(), v, half);
        v.replaceAllUsesExcept(copy, copy.getDefiningOp());
        continue;
      }
      if (isa<CastOp>(op))
        continue;
      b.setInsertionPoint(op);
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // The signature stays: 16-bit results are returned as fp32.
        for (OpOperand &operand : ret->getOpOperands())
          if (isHalf(operand.get()))
            operand.set(castTo(b, ret.getLoc(), operand.get(), f32));
        continue;
      }
      // The loss in fp32, from logits cast up.
      bool fp32Island = isa<CrossEntropyOp>(op);
      bool anyHalf = false, anyF32 = false;
      for (Value operand : op->getOperands()) {
        anyHalf |= isHalf(operand);
        anyF32 |= isF32(operand);
      }
      // A key/value cache stays in 16 bits: the rows written into it and
      // the queries read against it come down to its type (an fp32 copy
      // of a cache would be the whole cache, every step). Rows arrive in
      // fp32 where rotary angles are computed in fp32 from the positions,
      // as exported decoders compute them.
      if (isa<CacheWriteOp, PagedAttentionOp>(op) && anyHalf && anyF32) {
        for (OpOperand &operand : op->getOpOperands())
          if (isF32(operand.get()))
            operand.set(castTo(b, op->getLoc(), operand.get(), half));
        for (OpResult result : op->getResults())
          if (isF32(result)) {
            result.setType(floatTensor(result).clone(half));
            ++numNarrowed;
          }
        continue;
      }
      if (fp32Island || (anyHalf && anyF32)) {
        for (OpOperand &operand : op->getOpOperands())
          if (isHalf(operand.get()))
            operand.set(castTo(b, op->getLoc(), operand.get(), f32));
        continue;
      }
      if (!anyHalf)
        continue;
      for (OpResult result : op->getResults()) {
        if (!isF32(result))
          continue;
        // The log-sum-exp stays fp32 (graph.attention's type rule).
        if (auto attention = dyn_cast<AttentionOp>(op);
            attention && result == attention.getLse())
          continue;
        result.setType(floatTensor(result).clone(half));
        ++numNarrowed;
      }
    }
  }
};

} // namespace
