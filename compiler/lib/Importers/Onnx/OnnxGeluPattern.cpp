//===- OnnxGeluPattern.cpp - Decomposed exact GELU in ONNX ----------------===//
//
// As for LayerNorm, the structure is matched up front on the protobuf and
// the constants (sqrt 2, 1, 0.5) when the walk reaches the last node.
//
//===----------------------------------------------------------------------===//

#include "OnnxGeluPattern.h"
#include "OnnxPatternUtil.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {

SmallVector<int> GeluMatch::nodes() const {
  SmallVector<int> all = {scale, erf, addOne, mulInput, mulHalf};
  llvm::sort(all);
  return all;
}

/// Matches the pattern around Erf node `erf`.
static std::optional<GeluMatch>
matchAt(const GraphImporter &importer, const ConsumerIndex &index, int erf) {
  const onnx::GraphProto &graph = importer.getGraph();
  auto node = [&](int i) -> const onnx::NodeProto & { return graph.node(i); };
  auto out = [&](int i) -> const std::string & { return node(i).output(0); };
  if (!index.isOp(erf, "Erf") || node(erf).input_size() != 1)
    return std::nullopt;
  GeluMatch m;
  m.erf = erf;

  // The Erf's input: x / sqrt 2 (or x times its inverse), read by it alone.
  const std::string &scaled = node(erf).input(0);
  for (int i = 0; i < erf && m.scale < 0; ++i)
    if (graph.node(i).output_size() == 1 && out(i) == scaled &&
        (index.isOp(i, "Div") || index.isOp(i, "Mul")) &&
        node(i).input_size() == 2 && index.sole(scaled, "Erf") == erf)
      m.scale = i;
  if (m.scale < 0)
    return std::nullopt;
  const std::string &x = node(m.scale).input(0);
  if (x == node(m.scale).input(1))
    return std::nullopt;

  m.addOne = index.sole(out(erf), "Add");
  if (m.addOne < 0)
    return std::nullopt;
  m.mulInput = index.sole(out(m.addOne), "Mul");
  if (m.mulInput < 0)
    return std::nullopt;
  StringRef factor = otherOperand(node(m.mulInput), out(m.addOne));
  if (factor == x) {
    // x (1 + erf), then the half.
    m.mulHalf = index.sole(out(m.mulInput), "Mul");
    if (m.mulHalf < 0)
      return std::nullopt;
    return m;
  }
  // The half first: (x 0.5)(1 + erf), the half read by this Mul alone.
  for (int i = 0; i < m.mulInput && m.mulHalf < 0; ++i)
    if (graph.node(i).output_size() == 1 && out(i) == factor &&
        index.isOp(i, "Mul") && index.sole(factor, "Mul") == m.mulInput &&
        (node(i).input(0) == x || node(i).input(1) == x))
      m.mulHalf = i;
  if (m.mulHalf < 0)
    return std::nullopt;
  m.halfFirst = true;
  return m;
}

std::vector<GeluMatch> findGelus(const GraphImporter &importer) {
  return findMatches<GeluMatch>(importer, matchAt);
}

FailureOr<bool> buildGelu(GraphImporter &importer, const GeluMatch &m) {
  const onnx::GraphProto &graph = importer.getGraph();
  auto node = [&](int i) -> const onnx::NodeProto & { return graph.node(i); };
  auto out = [&](int i) -> const std::string & { return node(i).output(0); };
  StringRef x = node(m.scale).input(0);
  RankedTensorType type = importer.getType(x);
  if (!type || !isa<FloatType>(type.getElementType()))
    return false;

  // Exporters write sqrt 2 and 1/sqrt 2 in float: a relative 1e-6 each.
  auto near = [](std::optional<double> value, double expected) {
    return value && std::fabs(*value - expected) <= 1e-6 * expected;
  };
  bool divides = node(m.scale).op_type() == "Div";
  std::optional<double> scale =
      scalarConstant(importer, node(m.scale).input(1));
  std::optional<double> one =
      scalarConstant(importer, otherOperand(node(m.addOne), out(m.erf)));
  StringRef halfOperand =
      m.halfFirst ? otherOperand(node(m.mulHalf), x)
                  : otherOperand(node(m.mulHalf), out(m.mulInput));
  std::optional<double> half = scalarConstant(importer, halfOperand);
  if (!near(scale, divides ? std::sqrt(2.0) : std::sqrt(0.5)) ||
      !near(one, 1.0) || !near(half, 0.5))
    return false;

  SmallVector<Location> locs;
  for (int n : m.nodes())
    locs.push_back(importer.getNodeLoc(node(n)));
  Location loc = FusedLoc::get(&importer.getContext(), locs);
  NodeContext ctx(importer, node(m.last()), loc);
  Value input = importer.getValue(x, ParamUse::Trainable);
  if (!input)
    return failure();
  FailureOr<GeluOp> op = ctx.create<GeluOp>(input, UnitAttr());
  if (failed(op))
    return failure();
  importer.bind(out(m.last()), op->getResult());
  return true;
}

} // namespace cleave::onnx_import
