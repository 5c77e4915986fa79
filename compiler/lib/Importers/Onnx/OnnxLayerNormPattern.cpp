//===- OnnxLayerNormPattern.cpp - Decomposed LayerNorm in ONNX ------------===//
//
// Matching runs in two steps because the walk meets the first ReduceMean
// before the Constant nodes that hold the exponent and epsilon: the
// structure is matched up front on the protobuf, the values when the walk
// reaches the last node of the match and everything it reads is known.
//
//===----------------------------------------------------------------------===//

#include "OnnxLayerNormPattern.h"
#include "OnnxPatternUtil.h"
#include "OnnxShapeRules.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {

SmallVector<int> LayerNormMatch::nodes() const {
  SmallVector<int> all = {reduceMean, sub, pow, reduceVar, addEps, sqrt, div};
  if (mulScale >= 0)
    all.push_back(mulScale);
  if (addBias >= 0)
    all.push_back(addBias);
  llvm::sort(all);
  return all;
}


/// Matches the pattern that starts at ReduceMean node `start`.
static std::optional<LayerNormMatch>
matchAt(const GraphImporter &importer, const ConsumerIndex &index, int start) {
  const onnx::GraphProto &graph = importer.getGraph();
  auto node = [&](int i) -> const onnx::NodeProto & { return graph.node(i); };
  auto out = [&](int i) -> const std::string & { return node(i).output(0); };
  if (!index.isOp(start, "ReduceMean") || node(start).input_size() < 1)
    return std::nullopt;

  LayerNormMatch m;
  m.reduceMean = start;
  const std::string &x = node(start).input(0);
  m.sub = index.sole(out(start), "Sub");
  if (m.sub < 0 || node(m.sub).input(0) != x ||
      node(m.sub).input(1) != out(start))
    return std::nullopt;

  // The centred value feeds exactly the Pow and the Div.
  const std::string &centred = out(m.sub);
  ArrayRef<int> readers = index.of(centred);
  if (importer.isGraphOutput(centred) || readers.size() != 2)
    return std::nullopt;
  for (int r : readers) {
    if (index.isOp(r, "Pow") && node(r).input(0) == centred &&
        node(r).input(1) != centred)
      m.pow = r;
    else if (index.isOp(r, "Div") && node(r).input(0) == centred &&
             node(r).input(1) != centred)
      m.div = r;
  }
  if (m.pow < 0 || m.div < 0)
    return std::nullopt;

  m.reduceVar = index.sole(out(m.pow), "ReduceMean");
  if (m.reduceVar < 0 || node(m.reduceVar).input(0) != out(m.pow))
    return std::nullopt;
  m.addEps = index.sole(out(m.reduceVar), "Add");
  if (m.addEps < 0)
    return std::nullopt;
  m.sqrt = index.sole(out(m.addEps), "Sqrt");
  if (m.sqrt < 0 || index.sole(out(m.sqrt), "Div") != m.div ||
      node(m.div).input(1) != out(m.sqrt))
    return std::nullopt;

  // Optional affine tail: Mul by the scale, then Add of the bias.
  m.mulScale = index.sole(out(m.div), "Mul");
  if (m.mulScale >= 0)
    m.addBias = index.sole(out(m.mulScale), "Add");
  return m;
}

std::vector<LayerNormMatch> findLayerNorms(const GraphImporter &importer) {
  return findMatches<LayerNormMatch>(importer, matchAt);
}

/// The reduced axes of a ReduceMean node, normalized and sorted, if it
/// keeps the reduced dimensions.
static std::optional<Shape> reducedAxes(GraphImporter &importer,
                                        const onnx::NodeProto &node,
                                        int64_t rank) {
  Shape axes;
  bool keepdims = true, haveAxes = false;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "keepdims")
      keepdims = attr.i() != 0;
    else if (attr.name() == "axes") {
      axes.assign(attr.ints().begin(), attr.ints().end());
      haveAxes = true;
    }
  }
  if (node.input_size() > 1 && !node.input(1).empty()) {
    const HostTensor *t = importer.getConstant(node.input(1));
    if (!t || t->isFloat())
      return std::nullopt;
    axes.assign(t->ints.begin(), t->ints.end());
    haveAxes = true;
  }
  if (!keepdims)
    return std::nullopt;
  if (!haveAxes)
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  llvm::Expected<Shape> normalized = normalizeAxes(axes, rank);
  if (!normalized) {
    llvm::consumeError(normalized.takeError());
    return std::nullopt;
  }
  llvm::sort(*normalized);
  return *normalized;
}

FailureOr<std::optional<SmallVector<int>>>
buildLayerNorm(GraphImporter &importer, const LayerNormMatch &m) {
  const onnx::GraphProto &graph = importer.getGraph();
  auto node = [&](int i) -> const onnx::NodeProto & { return graph.node(i); };
  auto out = [&](int i) -> const std::string & { return node(i).output(0); };
  std::optional<SmallVector<int>> noMatch;

  StringRef x = node(m.reduceMean).input(0);
  RankedTensorType type = importer.getType(x);
  if (!type || !isa<FloatType>(type.getElementType()) || type.getRank() == 0)
    return noMatch;
  int64_t rank = type.getRank();

  // Both means reduce the same trailing axes [axis, rank).
  std::optional<Shape> axes = reducedAxes(importer, node(m.reduceMean), rank);
  std::optional<Shape> varAxes = reducedAxes(importer, node(m.reduceVar), rank);
  if (!axes || !varAxes || *axes != *varAxes || axes->empty() ||
      axes->back() != rank - 1 ||
      axes->front() != rank - static_cast<int64_t>(axes->size()))
    return noMatch;
  int64_t axis = axes->front();

  std::optional<double> exponent =
      scalarConstant(importer, node(m.pow).input(1));
  std::optional<double> epsilon =
      scalarConstant(importer, otherOperand(node(m.addEps), out(m.reduceVar)));
  if (!exponent || *exponent != 2.0 || !epsilon || *epsilon < 0)
    return noMatch;

  // The scale and bias are absorbed only when they have exactly the
  // normalized shape; otherwise their Mul and Add stay primitive ops.
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  auto fits = [&](StringRef name) {
    RankedTensorType t = importer.getType(name);
    return t && t.getShape() == normalized &&
           t.getElementType() == type.getElementType();
  };
  StringRef scaleName, biasName;
  SmallVector<int> rest;
  int lastAbsorbed = m.div;
  if (m.mulScale >= 0) {
    StringRef candidate = otherOperand(node(m.mulScale), out(m.div));
    if (fits(candidate)) {
      scaleName = candidate;
      lastAbsorbed = m.mulScale;
    } else {
      rest.push_back(m.mulScale);
    }
  }
  if (m.addBias >= 0) {
    StringRef candidate = otherOperand(node(m.addBias), out(m.mulScale));
    if (!scaleName.empty() && fits(candidate)) {
      biasName = candidate;
      lastAbsorbed = m.addBias;
    } else {
      rest.push_back(m.addBias);
    }
  }

  SmallVector<Location> locs;
  for (int n : m.nodes())
    locs.push_back(importer.getNodeLoc(node(n)));
  Location loc = FusedLoc::get(&importer.getContext(), locs);
  NodeContext ctx(importer, node(m.last()), loc);
  Value input = importer.getValue(x, ParamUse::Trainable);
  Value scale = scaleName.empty()
                    ? Value()
                    : importer.getValue(scaleName, ParamUse::Trainable);
  Value bias = biasName.empty()
                   ? Value()
                   : importer.getValue(biasName, ParamUse::Trainable);
  if (!input || (!scaleName.empty() && !scale) || (!biasName.empty() && !bias))
    return failure();
  OpBuilder &b = ctx.getBuilder();
  FailureOr<LayerNormOp> op =
      ctx.create<LayerNormOp>(input, scale, bias, b.getI64IntegerAttr(axis),
                              b.getF64FloatAttr(*epsilon));
  if (failed(op))
    return failure();
  importer.bind(out(lastAbsorbed), op->getResult());
  return std::optional<SmallVector<int>>(std::move(rest));
}

} // namespace cleave::onnx_import
