//===- OnnxPatternUtil.h - Matching decomposed ops in ONNX ------*- C++ -*-===//
//
// What the importer's patterns (decomposed LayerNorm, decomposed GELU) share:
// the readers of every value, and the constants a match is checked against
// once the walk has reached them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXPATTERNUTIL_H
#define CLEAVE_IMPORTERS_ONNX_ONNXPATTERNUTIL_H

#include "OnnxGraphImporter.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <vector>

namespace cleave::onnx_import {

/// Readers of every value, one entry per input slot.
class ConsumerIndex {
public:
  explicit ConsumerIndex(const GraphImporter &importer) : importer(importer) {
    const onnx::GraphProto &graph = importer.getGraph();
    for (int i = 0, e = graph.node_size(); i < e; ++i)
      for (const std::string &input : graph.node(i).input())
        if (!input.empty())
          consumers[input].push_back(i);
  }

  /// The only reader of `value` if it has op type `opType` (default domain)
  /// and `value` is not a graph output; else -1.
  int sole(llvm::StringRef value, llvm::StringRef opType) const {
    if (importer.isGraphOutput(value))
      return -1;
    auto it = consumers.find(value);
    if (it == consumers.end() || it->second.size() != 1)
      return -1;
    return isOp(it->second.front(), opType) ? it->second.front() : -1;
  }

  llvm::ArrayRef<int> of(llvm::StringRef value) const {
    auto it = consumers.find(value);
    return it == consumers.end() ? llvm::ArrayRef<int>()
                                 : llvm::ArrayRef(it->second);
  }

  bool isOp(int index, llvm::StringRef opType) const {
    const onnx::NodeProto &node = importer.getGraph().node(index);
    return node.op_type() == opType &&
           (node.domain().empty() || node.domain() == "ai.onnx") &&
           node.output_size() == 1;
  }

private:
  const GraphImporter &importer;
  llvm::StringMap<llvm::SmallVector<int, 2>> consumers;
};

/// Every match `matchAt(importer, index, node)` finds, over the graph's
/// nodes in order.
template <typename Match, typename MatchAt>
std::vector<Match> findMatches(const GraphImporter &importer,
                               MatchAt matchAt) {
  ConsumerIndex index(importer);
  std::vector<Match> matches;
  for (int i = 0, e = importer.getGraph().node_size(); i < e; ++i)
    if (std::optional<Match> m = matchAt(importer, index, i))
      matches.push_back(*m);
  return matches;
}

/// The single value of a one-element floating-point constant.
inline std::optional<double> scalarConstant(GraphImporter &importer,
                                            llvm::StringRef name) {
  const HostTensor *t = importer.getConstant(name);
  if (!t || !t->isFloat() || t->size() != 1)
    return std::nullopt;
  return t->floats[0];
}

/// The operand of binary node `node` that is not `other`.
inline llvm::StringRef otherOperand(const onnx::NodeProto &node,
                                    llvm::StringRef other) {
  return node.input(0) == other ? llvm::StringRef(node.input(1))
                                : llvm::StringRef(node.input(0));
}

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXPATTERNUTIL_H
