//===- ShapeInference.cpp - Shape rules of graph ops ----------------------===//

#include "cleave/Dialect/Graph/IR/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace cleave::graph {

int64_t numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return shaped.getNumElements();
}

int64_t tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 0;
  int64_t bits = shaped.getElementType().getIntOrFloatBitWidth();
  return numElements(type) * std::max<int64_t>(1, bits / 8);
}

int64_t sumTensorBytes(ValueRange values) {
  int64_t sum = 0;
  for (Value v : values)
    sum += tensorBytes(v.getType());
  return sum;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

FailureOr<Shape> broadcastShapes(std::optional<Location> loc,
                                 ArrayRef<Shape> shapes) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[offset + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o == 1) {
        o = s[i];
        continue;
      }
      std::string all;
      for (const Shape &t : shapes)
        all += (all.empty() ? "" : ", ") + shapeString(t);
      return emitOptionalError(loc, "shapes ", all, " do not broadcast");
    }
  }
  return out;
}

LogicalResult inferBroadcastResult(std::optional<Location> loc,
                                   ArrayRef<Type> operands,
                                   SmallVectorImpl<Type> &results) {
  SmallVector<Shape> shapes;
  Type elementType;
  for (auto [i, t] : llvm::enumerate(operands)) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked)
      return emitOptionalError(loc, "expected ranked tensor operands");
    shapes.emplace_back(ranked.getShape());
    if (i == 0 && operands.size() == 3)
      continue; // the condition of a select
    if (elementType && elementType != ranked.getElementType())
      return emitOptionalError(loc, "operand element types differ: ",
                               elementType, " vs ", ranked.getElementType());
    elementType = ranked.getElementType();
  }
  FailureOr<Shape> shape = broadcastShapes(loc, shapes);
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, elementType));
  return success();
}

LogicalResult verifyArithmeticOperands(Operation *op) {
  for (Value v : op->getOperands())
    if (cast<RankedTensorType>(v.getType()).getElementType().isInteger(1))
      return op->emitOpError("computes on numbers, not bool: got ")
             << v.getType();
  return success();
}

LogicalResult inferMatmulResult(std::optional<Location> loc, Type lhsType,
                                Type rhsType, bool transposeLhs,
                                bool transposeRhs,
                                SmallVectorImpl<Type> &results) {
  auto lhs = cast<RankedTensorType>(lhsType);
  auto rhs = cast<RankedTensorType>(rhsType);
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "matmul operands must have rank >= 2, got ",
                             lhs.getRank(), " and ", rhs.getRank());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "matmul element types differ: ",
                             lhs.getElementType(), " vs ",
                             rhs.getElementType());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t m = l[l.size() - (transposeLhs ? 1 : 2)];
  int64_t kl = l[l.size() - (transposeLhs ? 2 : 1)];
  int64_t kr = r[r.size() - (transposeRhs ? 1 : 2)];
  int64_t n = r[r.size() - (transposeRhs ? 2 : 1)];
  if (kl != kr)
    return emitOptionalError(loc, "matmul contraction sizes differ: ", kl,
                             " vs ", kr, " (lhs ", shapeString(l), ", rhs ",
                             shapeString(r), ")");
  FailureOr<Shape> batch =
      broadcastShapes(loc, {Shape(l.drop_back(2)), Shape(r.drop_back(2))});
  if (failed(batch))
    return failure();
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  results.push_back(RankedTensorType::get(out, lhs.getElementType()));
  return success();
}

LogicalResult inferAttentionResult(std::optional<Location> loc, Type queryType,
                                   Type keyType, Type valueType,
                                   SmallVectorImpl<Type> &results) {
  auto q = cast<RankedTensorType>(queryType);
  auto k = cast<RankedTensorType>(keyType);
  auto v = cast<RankedTensorType>(valueType);
  if (q.getRank() < 3 || k.getRank() != q.getRank() ||
      v.getRank() != q.getRank())
    return emitOptionalError(
        loc, "attention expects query, key and value of one rank >= 3 "
             "([batch..., seq, dim]), got ",
        q, ", ", k, ", ", v);
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return emitOptionalError(loc, "attention element types differ: ", q, ", ",
                             k, ", ", v);
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  int64_t rank = q.getRank();
  if (qs.back() != ks.back())
    return emitOptionalError(loc, "attention query and key head sizes differ: ",
                             shapeString(qs), " vs ", shapeString(ks));
  if (ks != vs)
    return emitOptionalError(loc, "attention key and value shapes differ: ",
                             shapeString(ks), " vs ", shapeString(vs));
  // Key batch dimensions equal the query's, then possibly a run of 1s
  // (grouped-query heads sharing one key head).
  bool broadcasting = false;
  for (int64_t d = 0; d < rank - 2; ++d) {
    if (ks[d] == qs[d] && !(broadcasting && qs[d] != 1))
      continue;
    if (ks[d] == 1) {
      broadcasting = true;
      continue;
    }
    return emitOptionalError(
        loc, "attention key batch dimensions must equal the query's or be a "
             "trailing run of 1s (grouped-query heads), got query ",
        shapeString(qs), " and key ", shapeString(ks));
  }
  Shape out(qs.begin(), qs.end());
  out.back() = vs.back();
  results.push_back(RankedTensorType::get(out, q.getElementType()));
  // The log-sum-exp stays fp32 under 16-bit storage: the backward
  // exponentiates scores against it, and a bf16 lse (8 bits of mantissa)
  // would put percent errors on every probability.
  results.push_back(RankedTensorType::get(
      qs.drop_back(), Float32Type::get(q.getContext())));
  return success();
}

LogicalResult verifyAttentionAttributes(std::optional<Location> loc,
                                        bool causal, ArrayAttr queryBlocks,
                                        bool zigzag, Type query,
                                        double scale) {
  if (queryBlocks && !causal)
    return emitOptionalError(loc, "query_blocks places queries for the "
                                  "causal mask; it needs `causal`");
  if (queryBlocks && queryBlocks.empty())
    return emitOptionalError(loc,
                             "query_blocks must name at least one mesh axis");
  if (zigzag && !queryBlocks)
    return emitOptionalError(loc, "zigzag places the two chunks of a block of "
                                  "queries; it needs query_blocks");
  if (auto q = dyn_cast<RankedTensorType>(query);
      zigzag && q && q.getRank() >= 2 && q.getDimSize(q.getRank() - 2) % 2)
    return emitOptionalError(loc, "zigzag splits the queries into two chunks, "
                                  "but there are ",
                             q.getDimSize(q.getRank() - 2));
  if (!(scale > 0))
    return emitOptionalError(loc, "scale must be positive, got ", scale);
  return success();
}

LogicalResult verifyAttentionMask(std::optional<Location> loc, Type queryType,
                                  Type keyType, Type maskType) {
  auto q = cast<RankedTensorType>(queryType);
  auto k = cast<RankedTensorType>(keyType);
  auto m = cast<RankedTensorType>(maskType);
  ArrayRef<int64_t> qs = q.getShape(), ms = m.getShape();
  int64_t rank = q.getRank();
  auto fail = [&](StringRef why) {
    return emitOptionalError(loc, "attention mask ", shapeString(ms), " ", why,
                             " (query ", shapeString(qs), ", keys ",
                             k.getDimSize(k.getRank() - 2), ")");
  };
  if (m.getElementType() != q.getElementType())
    return emitOptionalError(loc, "attention mask element type ",
                             m.getElementType(), " differs from the query's ",
                             q.getElementType());
  if (m.getRank() != rank)
    return fail("must have the query's rank");
  if (ms[rank - 1] != k.getDimSize(k.getRank() - 2))
    return fail("must have one column per key");
  if (ms[rank - 2] != qs[rank - 2] && ms[rank - 2] != 1)
    return fail("must have one row per query, or one row for all");
  // The query's dimensions the mask keeps (not 1 where the query is not):
  // one contiguous run, dimensions of size 1 in the query aside.
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < rank - 2; ++d) {
    if (ms[d] != qs[d] && ms[d] != 1)
      return fail("must broadcast to the query's batch dimensions");
    if (qs[d] == 1 || ms[d] == 1)
      continue;
    if (first < 0)
      first = d;
    last = d;
  }
  for (int64_t d = first; first >= 0 && d <= last; ++d)
    if (ms[d] != qs[d])
      return fail("must keep one contiguous run of the query's batch "
                  "dimensions");
  return success();
}

double attentionScores(int64_t queries, int64_t keys, bool causal) {
  double q = static_cast<double>(queries), k = static_cast<double>(keys);
  if (!causal)
    return q * k;
  // Query i sees min(keys, i + shift + 1) keys, shift = keys - queries, so
  // the last query sees all of them: sum over i of max(0, i + shift + 1).
  int64_t shift = keys - queries;
  if (shift >= 0)
    return (static_cast<double>(shift + 1) + k) * q / 2;
  return k * (k + 1) / 2;
}

double attentionFlops(Type queryType, Type keyType, bool causal,
                      bool backward) {
  auto q = cast<RankedTensorType>(queryType);
  auto k = cast<RankedTensorType>(keyType);
  int64_t rank = q.getRank();
  double batch = 1;
  for (int64_t d = 0; d < rank - 2; ++d)
    batch *= static_cast<double>(q.getDimSize(d));
  double scores =
      attentionScores(q.getDimSize(rank - 2), k.getDimSize(rank - 2), causal);
  double dim = static_cast<double>(q.getDimSize(rank - 1));
  return batch * scores * (backward ? 10 * dim + 6 : 4 * dim + 5);
}

LogicalResult verifyAxis(std::optional<Location> loc, StringRef what,
                         int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, what, " ", axis,
                             " is out of range for rank ", rank);
  return success();
}

LogicalResult inferReduceResult(std::optional<Location> loc, Type inputType,
                                ArrayRef<int64_t> axes, bool keepdims,
                                SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(inputType);
  llvm::SmallVector<bool> reduced(input.getRank(), false);
  for (int64_t axis : axes) {
    if (failed(verifyAxis(loc, "reduction axis", axis, input.getRank())))
      return failure();
    if (reduced[axis])
      return emitOptionalError(loc, "reduction axis ", axis, " is repeated");
    reduced[axis] = true;
  }
  Shape out;
  for (int64_t i = 0; i < input.getRank(); ++i) {
    if (!reduced[i])
      out.push_back(input.getDimSize(i));
    else if (keepdims)
      out.push_back(1);
  }
  results.push_back(RankedTensorType::get(out, input.getElementType()));
  return success();
}

static LogicalResult verifyWindowAttrs(std::optional<Location> loc,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> padding,
                                       ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || dilations.size() != 2 || padding.size() != 4)
    return emitOptionalError(
        loc, "expected 2 strides, 2 dilations and 4 paddings, got ",
        strides.size(), ", ", dilations.size(), " and ", padding.size());
  if (llvm::any_of(strides, [](int64_t s) { return s <= 0; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d <= 0; }))
    return emitOptionalError(loc, "strides and dilations must be positive");
  if (llvm::any_of(padding, [](int64_t p) { return p < 0; }))
    return emitOptionalError(loc, "padding must not be negative");
  return success();
}

/// Output size of one spatial dimension of a window op.
static int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t padLo, int64_t padHi, int64_t dilation) {
  int64_t effective = dilation * (kernel - 1) + 1;
  int64_t span = in + padLo + padHi - effective;
  return span < 0 ? 0 : span / stride + 1;
}

LogicalResult inferPool2dResult(std::optional<Location> loc, Type inputType,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> padding,
                                SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(inputType);
  if (input.getRank() != 4)
    return emitOptionalError(loc, "pooling expects an NCHW input, got rank ",
                             input.getRank());
  if (kernel.size() != 2 || llvm::any_of(kernel, [](int64_t k) { return k <= 0; }))
    return emitOptionalError(loc, "pooling expects 2 positive kernel sizes");
  if (failed(verifyWindowAttrs(loc, strides, padding, {1, 1})))
    return failure();
  int64_t h = windowOutput(input.getDimSize(2), kernel[0], strides[0],
                           padding[0], padding[2], 1);
  int64_t w = windowOutput(input.getDimSize(3), kernel[1], strides[1],
                           padding[1], padding[3], 1);
  if (h <= 0 || w <= 0)
    return emitOptionalError(loc, "pooling window is larger than the input");
  results.push_back(RankedTensorType::get(
      {input.getDimSize(0), input.getDimSize(1), h, w},
      input.getElementType()));
  return success();
}

LogicalResult inferConv2dResult(std::optional<Location> loc, Type inputType,
                                Type filterType, Type biasType,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> padding,
                                ArrayRef<int64_t> dilations, int64_t groups,
                                SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(inputType);
  auto filter = cast<RankedTensorType>(filterType);
  if (input.getRank() != 4 || filter.getRank() != 4)
    return emitOptionalError(loc, "conv2d expects NCHW input and OIHW filter, "
                                  "got ranks ",
                             input.getRank(), " and ", filter.getRank());
  if (failed(verifyWindowAttrs(loc, strides, padding, dilations)))
    return failure();
  if (groups <= 0 || input.getDimSize(1) % groups ||
      filter.getDimSize(0) % groups)
    return emitOptionalError(loc, "groups = ", groups,
                             " must divide input channels ",
                             input.getDimSize(1), " and output channels ",
                             filter.getDimSize(0));
  if (input.getDimSize(1) / groups != filter.getDimSize(1))
    return emitOptionalError(loc, "filter expects ", filter.getDimSize(1),
                             " input channels per group, input has ",
                             input.getDimSize(1) / groups);
  if (biasType) {
    auto bias = cast<RankedTensorType>(biasType);
    if (bias.getRank() != 1 || bias.getDimSize(0) != filter.getDimSize(0))
      return emitOptionalError(loc, "bias must be [", filter.getDimSize(0),
                               "], got ", bias);
  }
  int64_t h = windowOutput(input.getDimSize(2), filter.getDimSize(2),
                           strides[0], padding[0], padding[2], dilations[0]);
  int64_t w = windowOutput(input.getDimSize(3), filter.getDimSize(3),
                           strides[1], padding[1], padding[3], dilations[1]);
  if (h <= 0 || w <= 0)
    return emitOptionalError(loc, "conv2d window is larger than the input");
  results.push_back(RankedTensorType::get(
      {input.getDimSize(0), filter.getDimSize(0), h, w},
      input.getElementType()));
  return success();
}

LogicalResult inferGatherResult(std::optional<Location> loc, Type dataType,
                                Type indicesType, int64_t axis,
                                SmallVectorImpl<Type> &results) {
  auto data = cast<RankedTensorType>(dataType);
  auto indices = cast<RankedTensorType>(indicesType);
  if (failed(verifyAxis(loc, "gather axis", axis, data.getRank())))
    return failure();
  Shape out(data.getShape().take_front(axis));
  llvm::append_range(out, indices.getShape());
  llvm::append_range(out, data.getShape().drop_front(axis + 1));
  results.push_back(RankedTensorType::get(out, data.getElementType()));
  return success();
}

LogicalResult inferTransposeResult(std::optional<Location> loc,
                                   Type inputType, ArrayRef<int64_t> perm,
                                   SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(inputType);
  if ((int64_t)perm.size() != input.getRank())
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries for rank ", input.getRank());
  llvm::SmallVector<bool> seen(perm.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return emitOptionalError(loc, "invalid permutation ", shapeString(perm));
    seen[p] = true;
    out.push_back(input.getDimSize(p));
  }
  results.push_back(RankedTensorType::get(out, input.getElementType()));
  return success();
}

LogicalResult inferSliceResult(std::optional<Location> loc, Type inputType,
                               ArrayRef<int64_t> starts,
                               ArrayRef<int64_t> limits,
                               ArrayRef<int64_t> strides,
                               SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(inputType);
  int64_t rank = input.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)limits.size() != rank ||
      (int64_t)strides.size() != rank)
    return emitOptionalError(loc, "slice needs one start, limit and stride "
                                  "per dimension (rank ",
                             rank, ")");
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t size = input.getDimSize(i);
    if (strides[i] <= 0)
      return emitOptionalError(loc, "slice stride must be positive in "
                                    "dimension ",
                               i);
    if (starts[i] < 0 || starts[i] > limits[i] || limits[i] > size)
      return emitOptionalError(loc, "slice [", starts[i], ", ", limits[i],
                               ") is out of bounds for dimension ", i,
                               " of size ", size);
    out.push_back((limits[i] - starts[i] + strides[i] - 1) / strides[i]);
  }
  results.push_back(RankedTensorType::get(out, input.getElementType()));
  return success();
}

LogicalResult inferConcatResult(std::optional<Location> loc, TypeRange inputs,
                                int64_t axis, SmallVectorImpl<Type> &results) {
  if (inputs.empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = cast<RankedTensorType>(inputs.front());
  if (failed(verifyAxis(loc, "concat axis", axis, first.getRank())))
    return failure();
  Shape out(first.getShape());
  for (Type t : inputs.drop_front()) {
    auto ranked = cast<RankedTensorType>(t);
    if (ranked.getRank() != first.getRank() ||
        ranked.getElementType() != first.getElementType())
      return emitOptionalError(loc, "concat inputs differ in rank or element "
                                    "type: ",
                               first, " vs ", ranked);
    for (int64_t i = 0; i < first.getRank(); ++i) {
      if (i == axis)
        continue;
      if (ranked.getDimSize(i) != first.getDimSize(i))
        return emitOptionalError(loc, "concat inputs differ in dimension ", i,
                                 ": ", first, " vs ", ranked);
    }
    out[axis] += ranked.getDimSize(axis);
  }
  results.push_back(RankedTensorType::get(out, first.getElementType()));
  return success();
}

LogicalResult inferSplitResult(std::optional<Location> loc, Type inputType,
                               int64_t axis, ArrayRef<int64_t> sizes,
                               SmallVectorImpl<Type> &results) {
  auto input = cast<RankedTensorType>(inputType);
  if (failed(verifyAxis(loc, "split axis", axis, input.getRank())))
    return failure();
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitOptionalError(loc, "split sizes must not be negative");
    total += s;
  }
  if (sizes.empty() || total != input.getDimSize(axis))
    return emitOptionalError(loc, "split sizes ", shapeString(sizes),
                             " do not add up to dimension ", axis,
                             " of size ", input.getDimSize(axis));
  for (int64_t s : sizes) {
    Shape out(input.getShape());
    out[axis] = s;
    results.push_back(RankedTensorType::get(out, input.getElementType()));
  }
  return success();
}

LogicalResult verifyNormParam(std::optional<Location> loc, StringRef what,
                              Type inputType, int64_t axis, Type paramType) {
  auto input = cast<RankedTensorType>(inputType);
  auto param = cast<RankedTensorType>(paramType);
  ArrayRef<int64_t> expected = input.getShape().drop_front(axis);
  if (param.getShape() != expected ||
      param.getElementType() != input.getElementType())
    return emitOptionalError(loc, what, " must be ",
                             RankedTensorType::get(expected,
                                                   input.getElementType()),
                             ", got ", param);
  return success();
}

} // namespace cleave::graph
