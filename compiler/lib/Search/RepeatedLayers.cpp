//===- RepeatedLayers.cpp - Solve each distinct repeated layer once ------===//
//
// A GPT-3 has 96 identical layers. Solving the intra-op program over all of
// them repeats one layer's problem 96 times and lets CBC explore choices
// that differ between layers only by where a knapsack of parameter bytes is
// filled. Instead the ops at one place in layers of the same structure are
// tied: one node stands for all of them, carrying their summed costs and
// parameter bytes, and the values between them are merged into one group
// whose costs count every copy. The program then has one layer per
// distinct structure plus what lies outside the layers (embeddings, head),
// and the edges between consecutive layers become edges from a layer's
// output back to its own input, weighted by the number of boundaries.
//
//===----------------------------------------------------------------------===//

#include "cleave/Search/IntraOpSearch.h"

#include "cleave/Analysis/LayerNumbering.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <map>
#include <numeric>

using namespace mlir;

namespace cleave::search {

namespace {

bool nearlyEqual(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-18;
}

bool sameStrategy(const ShardingStrategy &a, const ShardingStrategy &b) {
  return a.name == b.name && a.operands == b.operands &&
         a.results == b.results && a.partial == b.partial;
}

/// Two nodes offer the same strategies at the same costs and bytes.
bool samePricing(const IntraOpProblem &p, unsigned a, unsigned b) {
  auto sa = p.strategies(a), sb = p.strategies(b);
  if (sa.size() != sb.size())
    return false;
  for (unsigned s = 0; s < sa.size(); ++s)
    if (!sameStrategy(sa[s], sb[s]) ||
        !nearlyEqual(p.nodeCost(a, s), p.nodeCost(b, s)) ||
        !nearlyEqual(p.paramBytes(a, s), p.paramBytes(b, s)))
      return false;
  return true;
}

/// The attributes of an op without those that name it (a parameter's name
/// differs from layer to layer).
DictionaryAttr structuralAttrs(Operation *op) {
  NamedAttrList attrs(op->getAttrDictionary());
  attrs.erase("name");
  return attrs.getDictionary(op->getContext());
}

struct Layer {
  std::vector<unsigned> nodes;
  llvm::DenseMap<Operation *, unsigned> position;
};

/// Layer `b` has the structure of layer `a`: op by op the same op,
/// attributes, types and pricing, each operand read from the same place of
/// its own layer or, for both, from outside it with the same type.
bool sameStructure(const IntraOpProblem &p, const Layer &a, const Layer &b) {
  if (a.nodes.size() != b.nodes.size())
    return false;
  for (unsigned i = 0; i < a.nodes.size(); ++i) {
    Operation *x = p.nodes()[a.nodes[i]], *y = p.nodes()[b.nodes[i]];
    if (x->getName() != y->getName() ||
        x->getNumOperands() != y->getNumOperands() ||
        x->getResultTypes() != y->getResultTypes() ||
        structuralAttrs(x) != structuralAttrs(y))
      return false;
    for (auto [u, v] : llvm::zip(x->getOperands(), y->getOperands())) {
      if (u.getType() != v.getType())
        return false;
      auto pu = a.position.find(u.getDefiningOp());
      auto pv = b.position.find(v.getDefiningOp());
      bool insideU = u.getDefiningOp() && pu != a.position.end();
      bool insideV = v.getDefiningOp() && pv != b.position.end();
      if (insideU != insideV)
        return false;
      if (insideU && (pu->second != pv->second ||
                      cast<OpResult>(u).getResultNumber() !=
                          cast<OpResult>(v).getResultNumber()))
        return false;
    }
    if (!samePricing(p, a.nodes[i], b.nodes[i]))
      return false;
  }
  return true;
}

} // namespace

std::vector<unsigned>
repeatedLayerRepresentatives(const IntraOpProblem &problem) {
  unsigned n = problem.nodes().size();
  std::vector<unsigned> representative(n);
  std::iota(representative.begin(), representative.end(), 0);
  if (n == 0)
    return representative;
  llvm::DenseMap<Operation *, int64_t> layerOf = numberLayers(
      *problem.nodes().front()->getBlock(), [](Operation *) { return true; });
  std::map<int64_t, Layer> layers;
  for (unsigned v = 0; v < n; ++v) {
    int64_t l = layerOf.lookup(problem.nodes()[v]);
    if (l < 0 || l == kAfterLayers)
      continue;
    Layer &layer = layers[l];
    layer.position[problem.nodes()[v]] = layer.nodes.size();
    layer.nodes.push_back(v);
  }
  std::vector<const Layer *> classes;
  for (auto &[number, layer] : layers) {
    const Layer *same = nullptr;
    for (const Layer *c : classes)
      if (sameStructure(problem, *c, layer)) {
        same = c;
        break;
      }
    if (!same) {
      classes.push_back(&layer);
      continue;
    }
    for (unsigned i = 0; i < layer.nodes.size(); ++i)
      representative[layer.nodes[i]] = same->nodes[i];
  }
  return representative;
}

IntraOpProblem IntraOpProblem::tied(llvm::ArrayRef<unsigned> representative,
                                    std::vector<unsigned> &reducedIndex) const {
  return merged(representative, {}, {}, reducedIndex);
}

} // namespace cleave::search
