//===- ShardingStrategies.cpp - Sharding rules of graph ops --------------===//
//
// The strategies each graph op offers on a 1-D mesh of n devices, as
// external models of ShardingStrategyOpInterface. A dimension is offered
// only when n > 1 divides it. Every op also offers the replicated strategy
// (added first by the adapter, and refined by a rule that needs to, as the
// matmul's sets its GEMM), so a search always has a feasible choice.
//
//===----------------------------------------------------------------------===//

#include "cleave/Search/ShardingStrategy.h"

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;

#include "cleave/Search/ShardingStrategyInterface.cpp.inc"

namespace cleave::search {

cost::DType costDType(Type elementType) {
  if (elementType.isBF16())
    return cost::DType::Bf16;
  if (elementType.isF16())
    return cost::DType::Fp16;
  return cost::DType::Fp32;
}

ShardingStrategy replicatedStrategy(Operation *op) {
  ShardingStrategy s;
  s.name = "replicated";
  s.operands.assign(op->getNumOperands(), kReplicated);
  s.results.assign(op->getNumResults(), kReplicated);
  return s;
}

namespace {

RankedTensorType tensorType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

int64_t rankOf(Value v) {
  auto t = tensorType(v);
  return t ? t.getRank() : 0;
}

/// Whether `dim` of `v` can be split evenly over `n` devices.
bool splittable(Value v, int64_t dim, int64_t n) {
  auto t = tensorType(v);
  return n > 1 && t && dim >= 0 && dim < t.getRank() &&
         t.getDimSize(dim) >= n && t.getDimSize(dim) % n == 0;
}

std::string splitName(llvm::StringRef prefix, int64_t dim) {
  return (prefix + llvm::Twine(dim)).str();
}

/// A strategy whose every operand and result starts replicated.
ShardingStrategy blank(Operation *op, std::string name, double share) {
  ShardingStrategy s = replicatedStrategy(op);
  s.name = std::move(name);
  s.workShare = share;
  return s;
}

/// Ops that compute each output element from the elements at the same
/// index of their (numpy-broadcast) operands: split any output dimension
/// except `excluded`; an operand follows unless it broadcasts there. Only
/// the first `mappedOperands` operands follow (norm weights stay whole).
void addPointwise(Operation *op, int64_t n,
                  SmallVectorImpl<ShardingStrategy> &out,
                  llvm::ArrayRef<int64_t> excluded = {},
                  unsigned mappedOperands = ~0u) {
  Value result = op->getResult(0);
  int64_t rank = rankOf(result);
  auto resultType = tensorType(result);
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(excluded, d) || !splittable(result, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("split", d), 1.0 / n);
    s.results[0] = d;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      auto t = tensorType(operand);
      if (i >= mappedOperands || !t)
        continue;
      int64_t od = d - (rank - t.getRank());
      if (od >= 0 && t.getDimSize(od) == resultType.getDimSize(d))
        s.operands[i] = od;
    }
    out.push_back(std::move(s));
  }
}

/// The strategy that splits result dimension `resultDim` from operand 0
/// split along `operandDim` (a view or a unary op moving dimensions).
void addSplit(Operation *op, int64_t n, int64_t operandDim, int64_t resultDim,
              SmallVectorImpl<ShardingStrategy> &out) {
  ShardingStrategy s = blank(op, splitName("split", resultDim), 1.0 / n);
  s.operands[0] = operandDim;
  s.results[0] = resultDim;
  out.push_back(std::move(s));
}

/// A contraction `s` whose operands are split along the summed dimension
/// leaves partial sums: reduce-scattered onto result dimension d < `dims`
/// ("<prefix>+rs<d>"), or all-reduced to a whole result ("<prefix>+ar",
/// added last).
void addPartialSums(Operation *op, int64_t n, ShardingStrategy s,
                    llvm::StringRef prefix, int64_t dims,
                    SmallVectorImpl<ShardingStrategy> &out) {
  Value res = op->getResult(0);
  double bytes = graph::tensorBytes(tensorType(res));
  s.name = (prefix + "+ar").str();
  s.partial = PartialReduction::AllReduce;
  s.collectives.push_back({cost::Collective::AllReduce, bytes});
  for (int64_t d = 0; d < dims; ++d) {
    if (!splittable(res, d, n))
      continue;
    ShardingStrategy rs = s;
    rs.name = splitName((prefix + "+rs").str(), d);
    rs.results[0] = d;
    rs.partial = PartialReduction::ReduceScatter;
    rs.collectives = {{cost::Collective::ReduceScatter, bytes}};
    out.push_back(std::move(rs));
  }
  out.push_back(std::move(s));
}

void elementwiseRule(Operation *op, int64_t n,
                     SmallVectorImpl<ShardingStrategy> &out) {
  addPointwise(op, n, out);
}

/// Collectives of an axis partitioned earlier (context parallelism's
/// gathers of keys and values, its parameter copies and gradient sums),
/// seen by the search of another axis: they move data along their own
/// dimensions only, so a split of any other dimension passes through and
/// shrinks what they move.
void collectiveRule(Operation *op, int64_t n,
                    SmallVectorImpl<ShardingStrategy> &out) {
  SmallVector<int64_t> own;
  if (auto g = dyn_cast<graph::AllGatherOp>(op))
    own.push_back(g.getDim());
  else if (auto r = dyn_cast<graph::ReduceScatterOp>(op))
    own.push_back(r.getDim());
  else if (auto sl = dyn_cast<graph::ShardSliceOp>(op))
    own.push_back(sl.getDim());
  else if (auto a = dyn_cast<graph::AllToAllOp>(op))
    own.append({int64_t(a.getSplitDim()), int64_t(a.getConcatDim())});
  addPointwise(op, n, out, own);
}

/// A causal softmax split along its queries is told where its block sits
/// by the partitioner (`query_blocks`).
void softmaxRule(Operation *op, int64_t n,
                 SmallVectorImpl<ShardingStrategy> &out) {
  addPointwise(op, n, out, {int64_t(cast<graph::SoftmaxOp>(op).getAxis())});
}

/// Fused attention: any batch dimension (batch, heads) splits with no
/// communication, a key or value broadcast over it (grouped-query heads)
/// staying whole; the queries split too (context parallelism), reading
/// whole keys and values and placed for the causal mask by the partitioner
/// (`query_blocks`). The head size and the keys stay whole; an additive
/// mask splits as the queries where it has the dimension, else stays whole.
void attentionRule(Operation *op, int64_t n,
                   SmallVectorImpl<ShardingStrategy> &out) {
  auto attention = cast<graph::AttentionOp>(op);
  Value res = attention.getOut();
  int64_t rank = rankOf(res);
  auto queryType = tensorType(attention.getQuery());
  auto keyType = tensorType(attention.getKey());
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (!splittable(res, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("split", d), 1.0 / n);
    s.results = {d, d};
    s.operands[0] = d;
    if (d < rank - 2 && keyType.getDimSize(d) == queryType.getDimSize(d))
      s.operands[1] = s.operands[2] = d;
    // The additive mask splits with the queries where it is not broadcast.
    if (Value mask = attention.getMask();
        mask && tensorType(mask).getDimSize(d) == queryType.getDimSize(d))
      s.operands[3] = d;
    out.push_back(std::move(s));
  }
}

/// A paged cache splits over its key/value heads (tensor parallelism keeps
/// each device's heads' keys and values): the rows written follow, the
/// slots (one per row, for all heads) stay whole.
void cacheWriteRule(Operation *op, int64_t n,
                    SmallVectorImpl<ShardingStrategy> &out) {
  auto write = cast<graph::CacheWriteOp>(op);
  if (!splittable(write.getCache(), 2, n))
    return;
  ShardingStrategy s = blank(op, "kv_heads", 1.0 / n);
  s.operands[0] = 1; // rows [N, kv_heads, head_dim]
  s.operands[1] = 2; // cache [blocks, block_size, kv_heads, head_dim]
  s.results[0] = 2;
  out.push_back(std::move(s));
}

/// Attention over a paged cache splits over the heads: a device's query
/// heads read its own key/value heads (grouped-query heads stay with their
/// key head, so both counts must divide). The block table and the lengths
/// are per sequence, whole on every device.
void pagedAttentionRule(Operation *op, int64_t n,
                        SmallVectorImpl<ShardingStrategy> &out) {
  auto attention = cast<graph::PagedAttentionOp>(op);
  if (!splittable(attention.getQuery(), 1, n) ||
      !splittable(attention.getKeyCache(), 2, n))
    return;
  ShardingStrategy s = blank(op, "heads", 1.0 / n);
  s.operands[0] = 1;
  s.operands[1] = s.operands[2] = 2;
  s.results[0] = 1;
  out.push_back(std::move(s));
}

/// Rotary embedding rotates pairs of the last dimension; a block of the
/// sequence (dimension 1) learns its first position from the partitioner
/// (`position_blocks`).
void ropeRule(Operation *op, int64_t n, SmallVectorImpl<ShardingStrategy> &out) {
  auto rope = cast<graph::RopeOp>(op);
  if (!rope.getPositions()) {
    addPointwise(op, n, out, {rankOf(op->getResult(0)) - 1});
    return;
  }
  // Each token's own position [batch, seq] splits with the batch and the
  // sequence, and stays whole where the heads split.
  for (int64_t d = 0; d < 3; ++d) {
    if (!splittable(rope.getResult(), d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("split", d), 1.0 / n);
    s.results[0] = s.operands[0] = d;
    if (d < 2)
      s.operands[1] = d;
    out.push_back(std::move(s));
  }
}

/// Normalised dimensions [axis, rank) stay whole; the weights replicated.
void normRule(Operation *op, int64_t axis, int64_t n,
              SmallVectorImpl<ShardingStrategy> &out) {
  SmallVector<int64_t> excluded;
  for (int64_t d = axis; d < rankOf(op->getResult(0)); ++d)
    excluded.push_back(d);
  addPointwise(op, n, out, excluded, /*mappedOperands=*/1);
}

void layerNormRule(Operation *op, int64_t n,
                   SmallVectorImpl<ShardingStrategy> &out) {
  normRule(op, cast<graph::LayerNormOp>(op).getAxis(), n, out);
}

void rmsNormRule(Operation *op, int64_t n,
                 SmallVectorImpl<ShardingStrategy> &out) {
  normRule(op, cast<graph::RmsNormOp>(op).getAxis(), n, out);
}

/// [B..., M, K] x [B..., K, N]: split a batch dimension, M, N, or K. A K
/// split leaves partial sums, reduced by an all-reduce (replicated result)
/// or a reduce-scatter onto one result dimension.
void matmulRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  auto mm = cast<graph::MatmulOp>(op);
  Value lhs = mm.getLhs(), rhs = mm.getRhs(), res = mm.getResult();
  int64_t rl = rankOf(lhs), rr = rankOf(rhs), ro = rankOf(res);
  if (rl < 2 || rr < 2 || ro < 2)
    return;
  int64_t lhsM = mm.getTransposeLhs() ? rl - 1 : rl - 2;
  int64_t lhsK = mm.getTransposeLhs() ? rl - 2 : rl - 1;
  int64_t rhsK = mm.getTransposeRhs() ? rr - 1 : rr - 2;
  int64_t rhsN = mm.getTransposeRhs() ? rr - 2 : rr - 1;
  auto resType = tensorType(res);
  int64_t m = resType.getDimSize(ro - 2), nn = resType.getDimSize(ro - 1);
  int64_t k = mm.getContractionSize();
  int64_t batch = 1;
  for (int64_t d = 0; d < ro - 2; ++d)
    batch *= resType.getDimSize(d);
  cost::Gemm full{m, nn, k, batch, costDType(resType.getElementType())};
  // The replicated strategy (first, from the adapter) runs the whole GEMM.
  out.front().gemm = full;
  auto split = [&](cost::Gemm g, char which) {
    int64_t &dim = which == 'm'   ? g.m
                   : which == 'n' ? g.n
                   : which == 'k' ? g.k
                                  : g.batch;
    dim /= n;
    return g;
  };

  for (int64_t d = 0; d < ro - 2; ++d) {
    if (!splittable(res, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("matmul.b", d), 1.0 / n);
    s.results[0] = d;
    for (auto [i, v] : llvm::enumerate(ValueRange{lhs, rhs})) {
      int64_t od = d - (ro - rankOf(v));
      if (od >= 0 && tensorType(v).getDimSize(od) == resType.getDimSize(d))
        s.operands[i] = od;
    }
    s.gemm = split(full, 'b');
    out.push_back(std::move(s));
  }
  if (splittable(res, ro - 2, n)) {
    ShardingStrategy s = blank(op, "matmul.m", 1.0 / n);
    s.operands[0] = lhsM;
    s.results[0] = ro - 2;
    s.gemm = split(full, 'm');
    out.push_back(std::move(s));
  }
  if (splittable(res, ro - 1, n)) {
    ShardingStrategy s = blank(op, "matmul.n", 1.0 / n);
    s.operands[1] = rhsN;
    s.results[0] = ro - 1;
    s.gemm = split(full, 'n');
    out.push_back(std::move(s));
  }
  if (splittable(lhs, lhsK, n) && splittable(rhs, rhsK, n)) {
    ShardingStrategy s = blank(op, "matmul.k", 1.0 / n);
    s.operands = {lhsK, rhsK};
    s.gemm = split(full, 'k');
    addPartialSums(op, n, std::move(s), "matmul.k", ro, out);
  }
}

/// data[:axis] + indices + data[axis+1:]. Splitting the gathered (row)
/// dimension makes every device look up only its rows and leave zeros
/// elsewhere, summed by an all-reduce: Megatron's vocab-parallel embedding.
void gatherRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  auto g = cast<graph::GatherOp>(op);
  Value data = g.getData(), indices = g.getIndices(), res = g.getResult();
  int64_t axis = g.getAxis(), ri = rankOf(indices);
  if (splittable(data, axis, n)) {
    // Each device looks up the rows it holds (zeros for the others) and
    // the partial results are summed: all-reduced whole, or reduce-
    // scattered onto a dimension of the result (Megatron's vocabulary-
    // parallel embedding feeding sequence-parallel norms).
    ShardingStrategy s = blank(op, "", 1.0);
    s.operands[0] = axis;
    addPartialSums(op, n, std::move(s), "gather.rows", rankOf(res), out);
  }
  for (int64_t d = 0; d < rankOf(data); ++d) {
    if (d == axis || !splittable(data, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("gather.data", d), 1.0 / n);
    s.operands[0] = d;
    s.results[0] = d < axis ? d : d - 1 + ri;
    out.push_back(std::move(s));
  }
  for (int64_t d = 0; d < ri; ++d) {
    if (!splittable(indices, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("gather.indices", d), 1.0 / n);
    s.operands[1] = d;
    s.results[0] = axis + d;
    out.push_back(std::move(s));
  }
}

/// Splits the leading dimension of a group of input dimensions that
/// reshapes to a group of output dimensions: both cut the group's
/// row-major order into the same n contiguous blocks.
void reshapeRule(Operation *op, int64_t n,
                 SmallVectorImpl<ShardingStrategy> &out) {
  auto in = tensorType(op->getOperand(0)), res = tensorType(op->getResult(0));
  if (!in || !res)
    return;
  llvm::ArrayRef<int64_t> a = in.getShape(), b = res.getShape();
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    size_t i0 = i, j0 = j;
    int64_t pa = a[i++], pb = b[j++];
    while (pa != pb) {
      if (pa < pb && i < a.size())
        pa *= a[i++];
      else if (pb < pa && j < b.size())
        pb *= b[j++];
      else
        return;
    }
    if (splittable(op->getOperand(0), i0, n) &&
        splittable(op->getResult(0), j0, n)) {
      addSplit(op, n, i0, j0, out);
    }
  }
}

void transposeRule(Operation *op, int64_t n,
                   SmallVectorImpl<ShardingStrategy> &out) {
  auto perm = cast<graph::TransposeOp>(op).getPermutation();
  for (auto [d, from] : llvm::enumerate(perm)) {
    if (!splittable(op->getOperand(0), from, n))
      continue;
    addSplit(op, n, from, d, out);
  }
}

/// A split batch dimension sums the per-device losses (and counts); a
/// split class dimension also all-reduces each row's max and exp-sum.
void crossEntropyRule(Operation *op, int64_t n,
                      SmallVectorImpl<ShardingStrategy> &out) {
  auto ce = cast<graph::CrossEntropyOp>(op);
  Value logits = ce.getLogits(), labels = ce.getLabels();
  int64_t classDim = rankOf(logits) - 1;
  auto partialLoss = StrategyCollective{cost::Collective::AllReduce, 8.0};
  for (int64_t d = 0; d < classDim; ++d) {
    if (!splittable(logits, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("ce.batch", d), 1.0 / n);
    s.operands = {d, d};
    s.partial = PartialReduction::AllReduceMean;
    s.collectives.push_back(partialLoss);
    out.push_back(std::move(s));
  }
  if (splittable(logits, classDim, n)) {
    ShardingStrategy s = blank(op, "ce.classes", 1.0 / n);
    s.operands[0] = classDim;
    double rows = graph::numElements(labels.getType()) * 4.0;
    s.collectives = {{cost::Collective::AllReduce, rows},
                     {cost::Collective::AllReduce, rows},
                     partialLoss};
    out.push_back(std::move(s));
  }
}

/// Router logits [T, E] -> weights, indices [T, k]: split the tokens.
void moeGateRule(Operation *op, int64_t n,
                 SmallVectorImpl<ShardingStrategy> &out) {
  if (!splittable(op->getOperand(0), 0, n))
    return;
  ShardingStrategy s = blank(op, "split0", 1.0 / n);
  s.operands[0] = 0;
  s.results = {0, 0};
  out.push_back(std::move(s));
}

/// x [T, H], indices [T, k] -> [E, C, H]. Expert parallelism: the result
/// split on E, either from replicated tokens (each device keeps its
/// experts' slots, no communication) or from tokens split on T, each
/// device sending its dispatched tokens to their experts' owners in an
/// all-to-all (send buffer: the result's size / n). Capacity slots are
/// assigned over all tokens in order, so splitting C from split tokens
/// would need per-device capacity and is not offered.
void moeDispatchRule(Operation *op, int64_t n,
                     SmallVectorImpl<ShardingStrategy> &out) {
  auto d = cast<graph::MoeDispatchOp>(op);
  Value res = d.getResult();
  if (!splittable(res, 0, n))
    return;
  if (splittable(d.getInput(), 0, n) && splittable(d.getIndices(), 0, n)) {
    ShardingStrategy s = blank(op, "dispatch.a2a", 1.0 / n);
    s.operands = {0, 0};
    s.results[0] = 0;
    s.collectives.push_back({cost::Collective::AllToAll,
                             double(graph::tensorBytes(res.getType())) / n});
    out.push_back(std::move(s));
  }
  ShardingStrategy s = blank(op, "dispatch.experts", 1.0 / n);
  s.results[0] = 0;
  out.push_back(std::move(s));
}

/// y [E, C, H], weights, indices [T, k] -> [T, H], with y split on E:
/// either an all-to-all returns every token's expert outputs to the
/// device owning the token (weights, indices and result split on T), or
/// each device combines its experts' outputs for all tokens and an
/// all-reduce sums the partial results (replicated).
void moeCombineRule(Operation *op, int64_t n,
                    SmallVectorImpl<ShardingStrategy> &out) {
  auto c = cast<graph::MoeCombineOp>(op);
  Value in = c.getInput(), res = c.getResult();
  if (!splittable(in, 0, n))
    return;
  if (splittable(res, 0, n) && splittable(c.getWeights(), 0, n) &&
      splittable(c.getIndices(), 0, n)) {
    ShardingStrategy s = blank(op, "combine.a2a", 1.0 / n);
    s.operands = {0, 0, 0};
    s.results[0] = 0;
    s.collectives.push_back({cost::Collective::AllToAll,
                             double(graph::tensorBytes(in.getType())) / n});
    out.push_back(std::move(s));
  }
  ShardingStrategy s = blank(op, "combine.experts+ar", 1.0 / n);
  s.operands[0] = 0;
  s.partial = PartialReduction::AllReduce;
  s.collectives.push_back(
      {cost::Collective::AllReduce, double(graph::tensorBytes(res.getType()))});
  out.push_back(std::move(s));
}

/// NCHW convolution: split the images (the filter whole on every device),
/// the output channels (column-parallel: the filter's rows and the bias
/// split, the input whole), or the input channels (row-parallel: input and
/// filter split along Cin, partial sums reduced as a matmul's K split). A
/// grouped convolution splits its groups instead (each device convolves
/// whole groups; the partitioner divides `groups`). No split of the
/// spatial dimensions: a window reads its neighbours' halo.
void conv2dRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  auto conv = cast<graph::Conv2dOp>(op);
  Value input = conv.getInput(), filter = conv.getFilter(),
        res = conv.getResult();
  bool hasBias = static_cast<bool>(conv.getBias());
  if (splittable(res, 0, n) && splittable(input, 0, n)) {
    ShardingStrategy s = blank(op, "conv.batch", 1.0 / n);
    s.operands[0] = 0;
    s.results[0] = 0;
    out.push_back(std::move(s));
  }
  int64_t groups = conv.getGroups();
  if (groups > 1) {
    if (groups % n != 0 || !splittable(filter, 0, n) ||
        !splittable(input, 1, n))
      return;
    ShardingStrategy s = blank(op, "conv.groups", 1.0 / n);
    s.operands[0] = 1;
    s.operands[1] = 0;
    if (hasBias)
      s.operands[2] = 0;
    s.results[0] = 1;
    out.push_back(std::move(s));
    return;
  }
  if (splittable(filter, 0, n)) {
    ShardingStrategy s = blank(op, "conv.out", 1.0 / n);
    s.operands[1] = 0;
    if (hasBias)
      s.operands[2] = 0;
    s.results[0] = 1;
    out.push_back(std::move(s));
  }
  // Every device would add the whole bias to its partial sum.
  if (hasBias || !splittable(input, 1, n) || !splittable(filter, 1, n))
    return;
  ShardingStrategy s = blank(op, "conv.in", 1.0 / n);
  s.operands[0] = 1;
  s.operands[1] = 1;
  // Onto images or channels; the spatial dimensions stay whole.
  addPartialSums(op, n, std::move(s), "conv.in", 2, out);
}

/// Pooling windows and the global mean stay within an image and a channel:
/// split N or C, never the spatial dimensions.
void pool2dRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  addPointwise(op, n, out, /*excluded=*/{2, 3});
}

/// Batch norm normalises each channel over N, H and W: split the channels
/// (with the per-channel scale, bias and statistics). In training the
/// statistics are the batch's, so splitting N, H or W would change them
/// (synchronised batch norm is not offered); in inference any dimension
/// splits.
void batchNormRule(Operation *op, int64_t n,
                   SmallVectorImpl<ShardingStrategy> &out) {
  auto bn = cast<graph::BatchNormOp>(op);
  Value res = bn.getResult();
  for (int64_t d = 0; d < rankOf(res); ++d) {
    if ((bn.getTraining() && d != 1) || !splittable(res, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("split", d), 1.0 / n);
    s.operands[0] = d;
    s.results[0] = d;
    if (d == 1)
      for (unsigned i = 1; i < 5; ++i)
        s.operands[i] = 0;
    out.push_back(std::move(s));
  }
}

/// A dimension the slice takes whole (start 0, stride 1, to the end)
/// splits; the partitioner gives the local slice the local limit.
void sliceRule(Operation *op, int64_t n,
               SmallVectorImpl<ShardingStrategy> &out) {
  auto slice = cast<graph::SliceOp>(op);
  auto in = tensorType(slice.getInput());
  if (!in)
    return;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (slice.getStarts()[d] != 0 || slice.getStrides()[d] != 1 ||
        slice.getLimits()[d] < in.getDimSize(d) ||
        !splittable(slice.getInput(), d, n))
      continue;
    addSplit(op, n, d, d, out);
  }
}

/// Any dimension but the one joined along.
void concatRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  addPointwise(op, n, out, {cast<graph::ConcatOp>(op).getAxis()});
}

/// Reductions: a dimension kept splits through; a reduced dimension of a
/// sum splits into partial sums, all-reduced.
void reduceRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  Value input = op->getOperand(0), res = op->getResult(0);
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  bool keep = op->hasAttr("keepdims");
  int64_t rank = rankOf(input);
  auto reduced = [&](int64_t d) {
    return llvm::is_contained(axes, d) || llvm::is_contained(axes, d - rank);
  };
  int64_t r = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced(d)) {
      r += keep;
      if (isa<graph::ReduceSumOp>(op) && splittable(input, d, n)) {
        ShardingStrategy s = blank(op, splitName("reduce.partial", d), 1.0 / n);
        s.operands[0] = d;
        s.partial = PartialReduction::AllReduce;
        s.collectives.push_back({cost::Collective::AllReduce,
                                 double(graph::tensorBytes(tensorType(res)))});
        out.push_back(std::move(s));
      }
      continue;
    }
    if (splittable(input, d, n) && splittable(res, r, n))
      addSplit(op, n, d, r, out);
    ++r;
  }
}

/// Sources (parameters, inputs, constants): the strategy is the layout.
void sourceRule(Operation *op, int64_t n,
                SmallVectorImpl<ShardingStrategy> &out) {
  Value res = op->getResult(0);
  for (int64_t d = 0; d < rankOf(res); ++d) {
    if (!splittable(res, d, n))
      continue;
    ShardingStrategy s = blank(op, splitName("split", d), 1.0 / n);
    s.results[0] = d;
    out.push_back(std::move(s));
  }
}

using RuleFn = void (*)(Operation *, int64_t,
                        SmallVectorImpl<ShardingStrategy> &);

template <typename OpT, RuleFn Fn>
struct Rule
    : public ShardingStrategyOpInterface::ExternalModel<Rule<OpT, Fn>, OpT> {
  void getShardingStrategies(Operation *op, int64_t meshSize,
                             SmallVectorImpl<ShardingStrategy> &out) const {
    out.push_back(replicatedStrategy(op));
    Fn(op, meshSize, out);
  }
};

template <RuleFn Fn, typename... OpTs> void attach(MLIRContext *ctx) {
  (OpTs::template attachInterface<Rule<OpTs, Fn>>(*ctx), ...);
}

} // namespace

void registerShardingStrategyExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, graph::GraphDialect *) {
    using namespace graph;
    attach<elementwiseRule, StopGradientOp, NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReluOp,
           TanhOp, ErfOp, SinOp, CosOp, AtanOp, FloorOp, SigmoidOp, SiluOp,
           GeluOp, DropoutOp, CastOp, AddOp,
           SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, BitShiftOp, WhereOp,
           CompareOp>(ctx);
    attach<softmaxRule, SoftmaxOp>(ctx);
    attach<attentionRule, AttentionOp>(ctx);
    attach<ropeRule, RopeOp>(ctx);
    attach<cacheWriteRule, CacheWriteOp>(ctx);
    attach<pagedAttentionRule, PagedAttentionOp>(ctx);
    attach<layerNormRule, LayerNormOp>(ctx);
    attach<rmsNormRule, RmsNormOp>(ctx);
    attach<matmulRule, MatmulOp>(ctx);
    attach<gatherRule, GatherOp>(ctx);
    attach<reshapeRule, ReshapeOp>(ctx);
    attach<transposeRule, TransposeOp>(ctx);
    attach<crossEntropyRule, CrossEntropyOp>(ctx);
    attach<moeGateRule, MoeGateOp>(ctx);
    attach<moeDispatchRule, MoeDispatchOp>(ctx);
    attach<moeCombineRule, MoeCombineOp>(ctx);
    attach<conv2dRule, Conv2dOp>(ctx);
    attach<pool2dRule, MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp>(ctx);
    attach<batchNormRule, BatchNormOp>(ctx);
    attach<sliceRule, SliceOp>(ctx);
    attach<concatRule, ConcatOp>(ctx);
    attach<reduceRule, ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(ctx);
    attach<elementwiseRule, BroadcastToOp>(ctx);
    attach<sourceRule, ParamOp, InputOp, ConstantOp>(ctx);
    attach<collectiveRule, AllReduceOp, AllGatherOp, ReduceScatterOp,
           AllToAllOp, ShardSliceOp, CopyToGroupOp>(ctx);
  });
}

} // namespace cleave::search
