//===- GraphEvaluator.cpp - Run a graph op by op on the CPU kernels -------===//

#include "cleave/Evaluator/GraphEvaluator.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/TensorValues.h"
#include "cleave/runtime/kernels/Attention.h"
#include "cleave/runtime/kernels/Conv.h"
#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/kernels/Elementwise.h"
#include "cleave/runtime/kernels/FlashAttention.h"
#include "cleave/runtime/kernels/Loss.h"
#include "cleave/runtime/kernels/Matmul.h"
#include "cleave/runtime/kernels/Moe.h"
#include "cleave/runtime/kernels/Normalization.h"
#include "cleave/runtime/kernels/Optimizer.h"
#include "cleave/runtime/kernels/PagedAttention.h"
#include "cleave/runtime/kernels/Reduction.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include "IntegerValues.h"

#include <cmath>
#include <optional>
#include <stdexcept>

using namespace mlir;
namespace gr = cleave::graph;
namespace k = cleave::kernels;

namespace cleave {

namespace {

k::Shape shapeOf(Type t) {
  auto ranked = cast<RankedTensorType>(t);
  return k::Shape(ranked.getShape().begin(), ranked.getShape().end());
}

std::vector<int64_t> vec(ArrayRef<int64_t> a) { return {a.begin(), a.end()}; }

Type elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Holds the values of one run and the op-by-op dispatch.
class Run {
public:
  explicit Run(std::map<std::string, EvalTensor> &bindings)
      : bindings(bindings) {}

  LogicalResult execute(Operation *op);
  EvalTensor &get(Value v) { return values.at(v); }
  bool has(Value v) const { return values.count(v); }

private:
  k::Tensor &f(Value v) { return std::get<k::Tensor>(values.at(v)); }
  k::IndexTensor &idx(Value v) {
    return std::get<k::IndexTensor>(values.at(v));
  }
  k::MaskTensor &mask(Value v) { return std::get<k::MaskTensor>(values.at(v)); }
  k::ConstTensorRef fOpt(Value v) {
    return v ? k::ConstTensorRef(f(v).ref()) : k::ConstTensorRef();
  }
  /// A fresh float result buffer of `v`'s type.
  k::Tensor &out(Value v) {
    values[v] = k::Tensor(shapeOf(v.getType()));
    return f(v);
  }

  /// A read-only view of a held tensor.
  template <typename Held>
  static k::View<const typename Held::value_type> cref(const Held &t) {
    return t.ref();
  }

  /// Runs f(input, result) with `input`'s held tensor and a fresh one of
  /// the same kind shaped as `res`, stored as `res`'s value.
  template <typename F> LogicalResult move(Value input, Value res, F f) {
    return std::visit(
        [&](auto &in) -> LogicalResult {
          using Held = std::decay_t<decltype(in)>;
          Held result(shapeOf(res.getType()));
          f(in, result);
          values[res] = std::move(result);
          return success();
        },
        get(input));
  }

  /// Stores compute()'s integer result for `res`; a kernel's error (a zero
  /// divisor) becomes the op's.
  template <typename F> LogicalResult integer(Value res, F compute) {
    try {
      values[res] = compute();
    } catch (const std::invalid_argument &e) {
      return res.getDefiningOp()->emitOpError(e.what());
    }
    return success();
  }

  LogicalResult bindNamed(Operation *op, StringRef name, Value result,
                          ElementsAttr fallback, bool zeroIfMissing);
  /// `op`'s constant `attr` as a tensor; an error at `op` when its values
  /// cannot be read.
  FailureOr<EvalTensor> fromAttr(Operation *op, ElementsAttr attr);

  std::map<std::string, EvalTensor> &bindings;
  llvm::DenseMap<Value, EvalTensor> values;
};

/// The kernel options of a whole (unpartitioned) attention or its
/// gradient; `mask` is its additive mask's values (or null).
template <typename AttentionLike>
k::FlashAttentionOptions attentionOptions(AttentionLike op,
                                          const k::Tensor *mask) {
  k::FlashAttentionOptions o;
  o.scale = static_cast<float>(op.getScale().convertToDouble());
  o.causal = op.getCausal();
  if (mask)
    o.mask = k::attentionMask(
        mask->data(), mask->shape(), shapeOf(op.getQuery().getType()),
        cast<RankedTensorType>(op.getKey().getType()).getShape().end()[-2]);
  return o;
}

FailureOr<EvalTensor> Run::fromAttr(Operation *op, ElementsAttr attr) {
  auto type = cast<RankedTensorType>(attr.getType());
  k::Shape shape = shapeOf(type);
  Type et = type.getElementType();
  auto emitError = [&] { return op->emitOpError(); };
  if (isa<IntegerType>(et)) {
    FailureOr<std::vector<int64_t>> ints = gr::readIntegerElements(attr, emitError);
    if (failed(ints))
      return failure();
    if (et.isInteger(1)) {
      k::MaskTensor t(shape);
      for (size_t i = 0; i < ints->size(); ++i)
        t[i] = (*ints)[i] != 0;
      return EvalTensor(std::move(t));
    }
    k::IndexTensor t(shape);
    for (size_t i = 0; i < ints->size(); ++i)
      t[i] = (*ints)[i];
    return EvalTensor(std::move(t));
  }
  FailureOr<std::vector<float>> floats = gr::readFloatElements(attr, emitError);
  if (failed(floats))
    return failure();
  k::Tensor t(shape);
  for (size_t i = 0; i < floats->size(); ++i)
    t[i] = (*floats)[i];
  return EvalTensor(std::move(t));
}

LogicalResult Run::bindNamed(Operation *op, StringRef name, Value result,
                             ElementsAttr fallback, bool zeroIfMissing) {
  auto it = bindings.find(name.str());
  if (it != bindings.end()) {
    bool shapeOk = std::visit(
        [&](const auto &t) { return t.shape() == shapeOf(result.getType()); },
        it->second);
    if (!shapeOk)
      return op->emitOpError("binding of '")
             << name << "' has the wrong shape for " << result.getType();
    values[result] = it->second;
    return success();
  }
  if (fallback) {
    FailureOr<EvalTensor> value = fromAttr(op, fallback);
    if (failed(value))
      return failure();
    values[result] = std::move(*value);
    return success();
  }
  if (zeroIfMissing) {
    out(result);
    return success();
  }
  return op->emitOpError("no value bound for '") << name << "'";
}

k::UnaryOp unaryKind(StringRef kind) {
  return llvm::StringSwitch<k::UnaryOp>(kind)
      .Case("relu", k::UnaryOp::Relu)
      .Case("gelu", k::UnaryOp::Gelu)
      .Case("gelu_tanh", k::UnaryOp::GeluTanh)
      .Case("silu", k::UnaryOp::Silu)
      .Case("sigmoid", k::UnaryOp::Sigmoid)
      .Case("tanh", k::UnaryOp::Tanh)
      .Default(k::UnaryOp::Erf);
}

k::Conv2dOptions convOptions(ArrayRef<int64_t> strides,
                             ArrayRef<int64_t> padding,
                             ArrayRef<int64_t> dilations, int64_t groups) {
  k::Conv2dOptions o;
  o.strides = {strides[0], strides[1]};
  o.padding = {padding[0], padding[1], padding[2], padding[3]};
  o.dilations = {dilations[0], dilations[1]};
  o.groups = groups;
  return o;
}

k::Pool2dOptions poolOptions(ArrayRef<int64_t> kernel,
                             ArrayRef<int64_t> strides,
                             ArrayRef<int64_t> padding) {
  k::Pool2dOptions o;
  o.kernel = {kernel[0], kernel[1]};
  o.strides = {strides[0], strides[1]};
  o.padding = {padding[0], padding[1], padding[2], padding[3]};
  return o;
}

LogicalResult Run::execute(Operation *op) {
  using k::BinaryOp;
  using k::UnaryOp;
  auto unary = [&](Value in, Value res, UnaryOp kind) {
    k::unary(kind, f(in), out(res));
    return success();
  };
  auto binary = [&](Value l, Value r, Value res, BinaryOp kind) -> LogicalResult {
    if (auto type = dyn_cast<IntegerType>(elementTypeOf(res))) {
      std::optional<k::IntegerOp> op = k::integerOpOf(kind);
      if (!op)
        return res.getDefiningOp()->emitOpError("computes on floats only");
      return integer(res, [&] {
        return evaluator::integerBinary(*op, type, idx(l), idx(r));
      });
    }
    k::binary(kind, f(l), f(r), out(res));
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // Sources.
      .Case([&](gr::InputOp o) {
        return bindNamed(op, o.getName(), o, {}, false);
      })
      .Case([&](gr::ParamOp o) {
        return bindNamed(op, o.getName(), o, o.getValueAttr(), false);
      })
      .Case([&](gr::OptimizerStateOp o) {
        return bindNamed(op, o.getName(), o, {}, true);
      })
      .Case([&](gr::ConstantOp o) {
        FailureOr<EvalTensor> value = fromAttr(op, o.getValue());
        if (failed(value))
          return failure();
        values[o] = std::move(*value);
        return success();
      })
      // Elementwise.
      .Case([&](gr::AddOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Add); })
      .Case([&](gr::SubOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Sub); })
      .Case([&](gr::MulOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Mul); })
      .Case([&](gr::DivOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Div); })
      .Case([&](gr::PowOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Pow); })
      .Case([&](gr::MaxOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Max); })
      .Case([&](gr::MinOp o) { return binary(o.getLhs(), o.getRhs(), o, BinaryOp::Min); })
      .Case([&](gr::ModOp o) -> LogicalResult {
        auto type = cast<IntegerType>(elementTypeOf(o.getResult()));
        return integer(o, [&] {
          return evaluator::integerBinary(o.getFmod() ? k::IntegerOp::FMod
                                                      : k::IntegerOp::Mod,
                                          type, idx(o.getLhs()),
                                          idx(o.getRhs()));
        });
      })
      .Case([&](gr::BitShiftOp o) -> LogicalResult {
        auto type = cast<IntegerType>(elementTypeOf(o.getResult()));
        return integer(o, [&] {
          return evaluator::integerBinary(o.getRight()
                                              ? k::IntegerOp::ShiftRight
                                              : k::IntegerOp::ShiftLeft,
                                          type, idx(o.getLhs()),
                                          idx(o.getRhs()));
        });
      })
      .Case([&](gr::NegOp o) { return unary(o.getInput(), o, UnaryOp::Neg); })
      .Case([&](gr::StopGradientOp o) {
        k::Tensor copy = f(o.getInput());
        values[o.getResult()] = std::move(copy);
        return success();
      })
      .Case([&](gr::ExpOp o) { return unary(o.getInput(), o, UnaryOp::Exp); })
      .Case([&](gr::LogOp o) { return unary(o.getInput(), o, UnaryOp::Log); })
      .Case([&](gr::SinOp o) { return unary(o.getInput(), o, UnaryOp::Sin); })
      .Case([&](gr::CosOp o) { return unary(o.getInput(), o, UnaryOp::Cos); })
      .Case([&](gr::AtanOp o) { return unary(o.getInput(), o, UnaryOp::Atan); })
      .Case(
          [&](gr::FloorOp o) { return unary(o.getInput(), o, UnaryOp::Floor); })
      .Case([&](gr::SqrtOp o) { return unary(o.getInput(), o, UnaryOp::Sqrt); })
      .Case([&](gr::RsqrtOp o) { return unary(o.getInput(), o, UnaryOp::Rsqrt); })
      .Case([&](gr::ReluOp o) { return unary(o.getInput(), o, UnaryOp::Relu); })
      .Case([&](gr::TanhOp o) { return unary(o.getInput(), o, UnaryOp::Tanh); })
      .Case([&](gr::ErfOp o) { return unary(o.getInput(), o, UnaryOp::Erf); })
      .Case([&](gr::SigmoidOp o) { return unary(o.getInput(), o, UnaryOp::Sigmoid); })
      .Case([&](gr::SiluOp o) { return unary(o.getInput(), o, UnaryOp::Silu); })
      .Case([&](gr::GeluOp o) {
        return unary(o.getInput(), o,
                     o.getApproximateTanh() ? UnaryOp::GeluTanh : UnaryOp::Gelu);
      })
      .Case([&](gr::DropoutOp o) {
        k::dropout(f(o.getInput()), o.getRatio().convertToDouble(), o.getSeed(),
                   out(o));
        return success();
      })
      .Case([&](gr::CastOp o) -> LogicalResult {
        if (!has(o.getInput()))
          return o.emitOpError("has no evaluated input");
        values[o] = evaluator::castHeld(get(o.getInput()),
                                        elementTypeOf(o.getInput()),
                                        elementTypeOf(o.getResult()));
        return success();
      })
      .Case([&](gr::WhereOp o) -> LogicalResult {
        k::MaskRef c = mask(o.getCondition());
        if (std::holds_alternative<k::Tensor>(get(o.getLhs()))) {
          k::where(c, f(o.getLhs()), f(o.getRhs()), out(o));
          return success();
        }
        // Integers and bools select their held values alike.
        return std::visit(
            [&](const auto &a) -> LogicalResult {
              using Held = std::decay_t<decltype(a)>;
              const auto *b = std::get_if<Held>(&get(o.getRhs()));
              if (!b)
                return o.emitOpError("selects between values of two kinds");
              Held result(shapeOf(o.getType()));
              k::whereValues(c, a.ref(), b->ref(), result.ref());
              values[o] = std::move(result);
              return success();
            },
            get(o.getLhs()));
      })
      .Case([&](gr::CompareOp o) -> LogicalResult {
        k::ComparePredicate p = k::comparePredicate(o.getPredicate().str());
        if (auto type = dyn_cast<IntegerType>(
                cast<RankedTensorType>(o.getLhs().getType()).getElementType()))
          return integer(o, [&] {
            return evaluator::integerCompare(p, type, idx(o.getLhs()),
                                             idx(o.getRhs()));
          });
        k::MaskTensor m(shapeOf(o.getType()));
        k::compare(p, f(o.getLhs()), f(o.getRhs()), m);
        values[o] = std::move(m);
        return success();
      })
      .Case([&](gr::BroadcastToOp o) {
        k::Tensor zeros(shapeOf(o.getType()));
        k::binary(BinaryOp::Add, f(o.getInput()), zeros, out(o));
        return success();
      })
      // Linear algebra, normalisation, attention.
      .Case([&](gr::MatmulOp o) {
        k::matmul(f(o.getLhs()), f(o.getRhs()), o.getTransposeLhs(),
                  o.getTransposeRhs(), out(o));
        return success();
      })
      .Case([&](gr::SoftmaxOp o) -> LogicalResult {
        if (o.getQueryBlocks())
          return o.emitOpError("is one device's block of a partitioned "
                               "softmax; the evaluator runs whole graphs");
        k::softmax(f(o.getInput()), o.getAxis(), o.getCausal(), out(o));
        return success();
      })
      .Case([&](gr::AttentionOp o) -> LogicalResult {
        if (o.getQueryBlocks())
          return o.emitOpError("is one device's block of a partitioned "
                               "attention; the evaluator runs whole graphs");
        // Results are made aside and stored last: storing one may move the
        // map's entries that the operand views point into.
        k::Tensor &q = f(o.getQuery()), &key = f(o.getKey());
        k::AttentionShapes s = k::attentionShapes(q.shape(), key.shape());
        k::Tensor result(shapeOf(o.getOut().getType()));
        k::Tensor lse(shapeOf(o.getLse().getType()));
        k::flashAttention({q.data(), s.query}, {key.data(), s.key},
                          {f(o.getValue()).data(), s.key},
                          attentionOptions(o, o.getMask() ? &f(o.getMask())
                                                          : nullptr),
                          {result.data(), s.query},
                          {lse.data(), s.lse});
        values[o.getOut()] = std::move(result);
        values[o.getLse()] = std::move(lse);
        return success();
      })
      .Case([&](gr::CacheWriteOp o) {
        // The op is functional here: the result is a copy of the cache
        // with the rows written (a program writes them in place).
        k::Tensor cache = f(o.getCache());
        k::cacheWrite(f(o.getRows()).ref(), idx(o.getSlots()).ref(),
                      cache.ref());
        values[o.getResult()] = std::move(cache);
        return success();
      })
      .Case([&](gr::PagedAttentionOp o) {
        k::Tensor result(shapeOf(o.getType()));
        k::pagedAttention(f(o.getQuery()).ref(), f(o.getKeyCache()).ref(),
                          f(o.getValueCache()).ref(),
                          idx(o.getBlockTable()).ref(),
                          idx(o.getLengths()).ref(),
                          static_cast<float>(o.getScale().convertToDouble()),
                          result.ref());
        values[o.getOut()] = std::move(result);
        return success();
      })
      .Case([&](gr::LayerNormOp o) {
        k::layerNorm(f(o.getInput()), fOpt(o.getScale()), fOpt(o.getBias()),
                     o.getAxis(), o.getEpsilon().convertToDouble(), out(o));
        return success();
      })
      .Case([&](gr::RmsNormOp o) {
        k::rmsNorm(f(o.getInput()), fOpt(o.getScale()), o.getAxis(),
                   o.getEpsilon().convertToDouble(), out(o));
        return success();
      })
      .Case([&](gr::BatchNormOp o) {
        k::batchNorm(f(o.getInput()), f(o.getScale()), f(o.getBias()),
                     f(o.getMean()), f(o.getVariance()),
                     o.getEpsilon().convertToDouble(), o.getTraining(), out(o));
        return success();
      })
      .Case([&](gr::RopeOp o) -> LogicalResult {
        if (o.getPositionBlocks())
          return o.emitOpError("is one device's block of a partitioned "
                               "rope; the evaluator runs whole graphs");
        if (o.getPositions()) {
          k::ropeAt(f(o.getInput()).ref(), o.getTheta().convertToDouble(),
                    idx(o.getPositions()).ref(), o.getInverse(),
                    out(o).ref());
          return success();
        }
        if (o.getInverse())
          k::ropeBackward(f(o.getInput()), o.getTheta().convertToDouble(),
                          o.getOffset(), out(o));
        else
          k::rope(f(o.getInput()), o.getTheta().convertToDouble(),
                  o.getOffset(), out(o));
        return success();
      })
      // Data movement.
      // Data movement: floats, and integers and bools held as int64 and
      // bytes, moved alike.
      .Case([&](gr::GatherOp o) {
        return move(o.getData(), o, [&](auto &data, auto &result) {
          k::gatherValues(cref(data), idx(o.getIndices()).ref(), o.getAxis(),
                          result.ref());
        });
      })
      .Case([&](gr::ReshapeOp o) {
        EvalTensor v = get(o.getInput());
        std::visit(
            [&](auto &t) {
              using T = std::decay_t<decltype(t)>;
              values[o] = T(shapeOf(o.getType()), std::move(t.values()));
            },
            v);
        return success();
      })
      .Case([&](gr::TransposeOp o) {
        return move(o.getInput(), o, [&](auto &in, auto &result) {
          k::transposeValues(cref(in), vec(o.getPermutation()), result.ref());
        });
      })
      .Case([&](gr::SliceOp o) {
        return move(o.getInput(), o, [&](auto &in, auto &result) {
          k::sliceValues(cref(in), vec(o.getStarts()), vec(o.getLimits()),
                         vec(o.getStrides()), result.ref());
        });
      })
      .Case([&](gr::ConcatOp o) {
        return move(o.getInputs().front(), o, [&](auto &first, auto &result) {
          using Held = std::decay_t<decltype(first)>;
          using T = typename Held::value_type;
          std::vector<k::View<const T>> ins;
          for (Value v : o.getInputs())
            ins.push_back(cref(std::get<Held>(get(v))));
          k::concatValues(ins, o.getAxis(), result.ref());
        });
      })
      .Case([&](gr::SplitOp o) -> LogicalResult {
        return std::visit(
            [&](auto &in) -> LogicalResult {
              using Held = std::decay_t<decltype(in)>;
              using T = typename Held::value_type;
              std::vector<Held> results;
              std::vector<k::View<T>> outs;
              for (Value r : o.getResults())
                results.emplace_back(shapeOf(r.getType()));
              for (Held &r : results)
                outs.push_back(r.ref());
              k::splitValues(cref(in), o.getAxis(), outs);
              for (auto [r, value] : llvm::zip(o.getResults(), results))
                values[r] = std::move(value);
              return success();
            },
            get(o.getInput()));
      })
      .Case([&](gr::ReduceSumOp o) {
        k::reduce(k::ReduceOp::Sum, f(o.getInput()), vec(o.getAxes()),
                  o.getKeepdims(), out(o));
        return success();
      })
      .Case([&](gr::ReduceMeanOp o) {
        k::reduce(k::ReduceOp::Mean, f(o.getInput()), vec(o.getAxes()),
                  o.getKeepdims(), out(o));
        return success();
      })
      .Case([&](gr::ReduceMaxOp o) {
        k::reduce(k::ReduceOp::Max, f(o.getInput()), vec(o.getAxes()),
                  o.getKeepdims(), out(o));
        return success();
      })
      // Convolution and pooling.
      .Case([&](gr::Conv2dOp o) {
        k::conv2d(f(o.getInput()), f(o.getFilter()), fOpt(o.getBias()),
                  convOptions(o.getStrides(), o.getPadding(), o.getDilations(),
                              o.getGroups()),
                  out(o));
        return success();
      })
      .Case([&](gr::MaxPool2dOp o) {
        k::maxPool2d(f(o.getInput()),
                     poolOptions(o.getKernel(), o.getStrides(), o.getPadding()),
                     out(o));
        return success();
      })
      .Case([&](gr::AvgPool2dOp o) {
        k::avgPool2d(f(o.getInput()),
                     poolOptions(o.getKernel(), o.getStrides(), o.getPadding()),
                     out(o));
        return success();
      })
      .Case([&](gr::GlobalAvgPoolOp o) {
        k::globalAvgPool(f(o.getInput()), out(o));
        return success();
      })
      // Loss and mixture of experts.
      .Case([&](gr::CrossEntropyOp o) {
        k::crossEntropy(f(o.getLogits()), idx(o.getLabels()),
                        o.getIgnoreIndex(), out(o));
        return success();
      })
      .Case([&](gr::MoeGateOp o) {
        k::IndexTensor indices(shapeOf(o.getIndices().getType()));
        k::moeGate(f(o.getLogits()), o.getTopK(), o.getRenormalize(),
                   out(o.getWeights()), indices.ref());
        values[o.getIndices()] = std::move(indices);
        return success();
      })
      .Case([&](gr::MoeDispatchOp o) {
        k::moeDispatch(f(o.getInput()), idx(o.getIndices()), o.getNumExperts(),
                       o.getCapacity(), out(o));
        return success();
      })
      .Case([&](gr::MoeCombineOp o) {
        k::moeCombine(f(o.getInput()), f(o.getWeights()), idx(o.getIndices()),
                      out(o));
        return success();
      })
      // Backward ops.
      .Case([&](gr::ActivationGradOp o) {
        k::unaryBackward(unaryKind(o.getKind()), f(o.getInput()),
                         f(o.getGrad()), out(o));
        return success();
      })
      .Case([&](gr::SoftmaxGradOp o) {
        k::softmaxBackward(f(o.getOutput()), f(o.getGrad()), o.getAxis(),
                           out(o));
        return success();
      })
      .Case([&](gr::LayerNormGradOp o) {
        k::layerNormBackward(f(o.getInput()), fOpt(o.getScale()), o.getAxis(),
                             o.getEpsilon().convertToDouble(), f(o.getGrad()),
                             out(o.getInputGrad()), out(o.getScaleGrad()),
                             out(o.getBiasGrad()));
        return success();
      })
      .Case([&](gr::RmsNormGradOp o) {
        k::rmsNormBackward(f(o.getInput()), fOpt(o.getScale()), o.getAxis(),
                           o.getEpsilon().convertToDouble(), f(o.getGrad()),
                           out(o.getInputGrad()), out(o.getScaleGrad()));
        return success();
      })
      .Case([&](gr::BatchNormGradOp o) {
        k::batchNormBackward(f(o.getInput()), f(o.getScale()), f(o.getMean()),
                             f(o.getVariance()),
                             o.getEpsilon().convertToDouble(), o.getTraining(),
                             f(o.getGrad()), out(o.getInputGrad()),
                             out(o.getScaleGrad()), out(o.getBiasGrad()), {},
                             {});
        return success();
      })
      .Case([&](gr::GatherGradOp o) {
        k::gatherBackward(idx(o.getIndices()), o.getAxis(), f(o.getGrad()),
                          out(o));
        return success();
      })
      .Case([&](gr::SliceGradOp o) {
        auto grad = cast<RankedTensorType>(o.getGrad().getType());
        std::vector<int64_t> limits;
        for (int64_t i = 0; i < grad.getRank(); ++i)
          limits.push_back(o.getStarts()[i] +
                           (grad.getDimSize(i) - 1) * o.getStrides()[i] + 1);
        k::sliceBackward(f(o.getGrad()), vec(o.getStarts()), limits,
                         vec(o.getStrides()), out(o));
        return success();
      })
      .Case([&](gr::ReduceMaxGradOp o) {
        k::reduceBackward(k::ReduceOp::Max, f(o.getInput()), vec(o.getAxes()),
                          o.getKeepdims(), f(o.getGrad()), out(o));
        return success();
      })
      .Case([&](gr::Conv2dInputGradOp o) {
        auto opts = convOptions(o.getStrides(), o.getPadding(),
                                o.getDilations(), o.getGroups());
        // The input's values do not enter its own gradient.
        k::Tensor input(shapeOf(o.getType()));
        k::conv2dBackward(input, f(o.getFilter()), opts, f(o.getGrad()),
                          out(o), {}, {});
        return success();
      })
      .Case([&](gr::Conv2dFilterGradOp o) {
        auto opts = convOptions(o.getStrides(), o.getPadding(),
                                o.getDilations(), o.getGroups());
        k::Tensor filter(shapeOf(o.getType()));
        k::conv2dBackward(f(o.getInput()), filter, opts, f(o.getGrad()), {},
                          out(o), {});
        return success();
      })
      .Case([&](gr::Pool2dGradOp o) {
        auto opts = poolOptions(o.getKernel(), o.getStrides(), o.getPadding());
        if (o.getKind() == "max")
          k::maxPool2dBackward(f(o.getInput()), opts, f(o.getGrad()), out(o));
        else
          k::avgPool2dBackward(f(o.getGrad()), opts, out(o));
        return success();
      })
      .Case([&](gr::CrossEntropyGradOp o) {
        k::crossEntropyBackward(f(o.getLogits()), idx(o.getLabels()),
                                o.getIgnoreIndex(), f(o.getGrad()), out(o));
        return success();
      })
      .Case([&](gr::MoeGateGradOp o) {
        // The kernel needs the chosen experts: recompute them.
        auto grad = cast<RankedTensorType>(o.getGrad().getType());
        k::Tensor weights(shapeOf(grad));
        k::IndexTensor indices(shapeOf(grad));
        k::moeGate(f(o.getLogits()), o.getTopK(), o.getRenormalize(), weights,
                   indices.ref());
        k::moeGateBackward(f(o.getLogits()), indices, o.getRenormalize(),
                           f(o.getGrad()), out(o));
        return success();
      })
      .Case([&](gr::AttentionGradOp o) -> LogicalResult {
        if (o.getQueryBlocks())
          return o.emitOpError("is one device's block of a partitioned "
                               "attention; the evaluator runs whole graphs");
        k::Tensor &q = f(o.getQuery()), &key = f(o.getKey());
        k::AttentionShapes s = k::attentionShapes(q.shape(), key.shape());
        k::Tensor dq(q.shape()), dk(key.shape()), dv(key.shape());
        k::flashAttentionBackward(
            {q.data(), s.query}, {key.data(), s.key},
            {f(o.getValue()).data(), s.key}, {f(o.getOut()).data(), s.query},
            {f(o.getLse()).data(), s.lse}, {f(o.getGrad()).data(), s.query},
            attentionOptions(o, o.getMask() ? &f(o.getMask()) : nullptr),
            {dq.data(), s.query}, {dk.data(), s.key},
            {dv.data(), s.key});
        values[o.getQueryGrad()] = std::move(dq);
        values[o.getKeyGrad()] = std::move(dk);
        values[o.getValueGrad()] = std::move(dv);
        return success();
      })
      .Case([&](gr::MoeCombineGradOp o) {
        k::moeCombineBackward(f(o.getInput()), f(o.getWeights()),
                              idx(o.getIndices()), f(o.getGrad()),
                              out(o.getInputGrad()), out(o.getWeightsGrad()));
        return success();
      })
      // Optimizers: copy the old values, update the copies in place.
      .Case([&](gr::SgdUpdateOp o) {
        k::Tensor &p = out(o.getNewParam());
        p = f(o.getParam());
        k::Tensor &m = out(o.getNewMomentum());
        m = f(o.getMomentum());
        k::SgdOptions opts;
        opts.learningRate = o.getLr().convertToDouble();
        opts.momentum = o.getMu().convertToDouble();
        opts.weightDecay = o.getWeightDecay().convertToDouble();
        k::sgdStep(p, f(o.getGrad()), m, opts);
        return success();
      })
      .Case([&](gr::AdamwUpdateOp o) {
        k::Tensor &p = out(o.getNewParam());
        p = f(o.getParam());
        k::Tensor &m = out(o.getNewExpAvg());
        m = f(o.getExpAvg());
        k::Tensor &v = out(o.getNewExpAvgSq());
        v = f(o.getExpAvgSq());
        k::AdamWOptions opts;
        opts.learningRate = o.getLr().convertToDouble();
        opts.beta1 = o.getBeta1().convertToDouble();
        opts.beta2 = o.getBeta2().convertToDouble();
        opts.epsilon = o.getEps().convertToDouble();
        opts.weightDecay = o.getWeightDecay().convertToDouble();
        int64_t step = std::lround(f(o.getStep())[0]);
        k::adamwStep(p, f(o.getGrad()), m, v, step, opts);
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("is not supported by the graph evaluator");
      });
}

} // namespace

FailureOr<std::vector<EvalTensor>> GraphEvaluator::run(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("the evaluator runs single-block functions");
  Run run(bindings);
  for (Operation &op : func.front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<EvalTensor> results;
      for (Value v : ret.getOperands())
        results.push_back(run.get(v));
      return results;
    }
    try {
      if (failed(run.execute(&op)))
        return failure();
    } catch (const std::exception &e) {
      return op.emitOpError("kernel failed: ") << e.what();
    }
  }
  return func.emitError("function has no return");
}

} // namespace cleave
