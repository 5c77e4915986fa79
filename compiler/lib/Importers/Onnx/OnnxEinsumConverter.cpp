//===- OnnxEinsumConverter.cpp - Einsum as transposes and one matmul ------===//
//
// Einsum of one or two operands, written as the graph ops that the
// contraction is made of, so that it has their gradients and sharding
// rules: each operand first sums the indices no one else reads, then the
// two are transposed to [batch, free, contracted] and [batch, contracted,
// free], flattened to three dimensions and multiplied by one batched
// matmul, and the result is unflattened and transposed to the output's
// order (one operand: only the sum and the transpose). An ellipsis stands
// for an operand's unnamed dimensions (right-aligned across operands, as
// numpy does; they come first in an implicit output); an index repeated
// within an operand takes its diagonal first, one gather by a map. More
// than two operands are refused by name.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// One operand's indices and the value they name.
struct Term {
  std::string letters;
  Value value;
  int64_t size(char letter) const {
    size_t i = letters.find(letter);
    return cast<RankedTensorType>(value.getType()).getDimSize(i);
  }
};

/// `t` transposed so that its letters read `order` (a permutation of them).
Value transposeTo(Chain &c, const Term &t, StringRef order) {
  if (t.letters == order)
    return t.value;
  SmallVector<int64_t> perm;
  for (char l : order)
    perm.push_back(t.letters.find(l));
  return c.op<TransposeOp>(t.value, ArrayRef<int64_t>(perm));
}

/// Sums the letters of `t` that are not in `keep`.
LogicalResult sumOut(Chain &c, Term &t, StringRef keep) {
  SmallVector<int64_t> axes;
  std::string left;
  for (auto [i, l] : llvm::enumerate(t.letters)) {
    if (keep.contains(l))
      left += l;
    else
      axes.push_back(i);
  }
  if (axes.empty())
    return success();
  t.value = c.op<ReduceSumOp>(t.value, ArrayRef<int64_t>(axes), false);
  t.letters = left;
  return success(t.value != nullptr);
}

/// `t` with each repeated letter's diagonal taken: the letters keep their
/// first occurrences, and element e of the result is the source element
/// whose repeated positions share e's coordinate.
LogicalResult takeDiagonals(NodeContext &ctx, Term &t) {
  std::string unique;
  for (char l : t.letters)
    if (unique.find(l) == std::string::npos)
      unique += l;
  if (unique == t.letters)
    return success();
  auto type = cast<RankedTensorType>(t.value.getType());
  for (char l : unique) {
    int64_t size = -1;
    for (auto [i, m] : llvm::enumerate(t.letters))
      if (m == l) {
        if (size >= 0 && type.getDimSize(i) != size)
          return ctx.emitError() << "index '" << l << "' repeats within an "
                                 << "operand over sizes " << size << " and "
                                 << type.getDimSize(i);
        size = type.getDimSize(i);
      }
  }
  Shape shape;
  for (char l : unique)
    shape.push_back(type.getDimSize(t.letters.find(l)));
  Shape strides(type.getRank(), 1);
  for (int64_t d = type.getRank() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * type.getDimSize(d + 1);
  int64_t count = 1;
  for (int64_t s : shape)
    count *= s;
  std::vector<int64_t> map(count);
  for (int64_t e = 0; e < count; ++e) {
    // e's coordinate per unique letter, row-major over `shape`.
    Shape coord(shape.size());
    for (int64_t d = int64_t(shape.size()) - 1, rest = e; d >= 0; --d) {
      coord[d] = rest % shape[d];
      rest /= shape[d];
    }
    int64_t flat = 0;
    for (auto [i, m] : llvm::enumerate(t.letters))
      flat += coord[unique.find(m)] * strides[i];
    map[e] = flat;
  }
  t.value = gatherByMap(ctx, t.value, map, shape);
  t.letters = unique;
  return success(t.value != nullptr);
}

/// The equation with every ellipsis spelled as letters the equation does
/// not use, one per dimension it covers, right-aligned across operands; an
/// implicit output gets them first.
FailureOr<std::string> expandEllipses(NodeContext &ctx, std::string equation) {
  if (equation.find('.') == std::string::npos)
    return equation;
  size_t arrow = equation.find("->");
  SmallVector<std::string> parts;
  {
    SmallVector<StringRef> refs;
    StringRef(equation.substr(0, arrow)).split(refs, ',');
    for (StringRef r : refs)
      parts.push_back(r.str());
  }
  std::string fresh;
  for (char l = 'A'; l <= 'Z' && fresh.size() < 26; ++l)
    if (equation.find(l) == std::string::npos)
      fresh += l;
  int64_t covered = 0;
  SmallVector<int64_t> spans;
  for (auto [i, part] : llvm::enumerate(parts)) {
    size_t dots = part.find("...");
    if (dots == std::string::npos) {
      spans.push_back(0);
      continue;
    }
    RankedTensorType type = ctx.getType(i);
    int64_t named = int64_t(part.size()) - 3;
    if (!type || part.find('.', dots + 3) != std::string::npos ||
        type.getRank() < named)
      return ctx.emitError() << "equation '" << equation << "': operand " << i
                             << "'s ellipsis does not fit its rank";
    spans.push_back(type.getRank() - named);
    covered = std::max(covered, spans.back());
  }
  if (covered > int64_t(fresh.size()))
    return ctx.emitError() << "equation '" << equation
                           << "': too many dimensions under the ellipsis";
  std::string all = fresh.substr(0, covered);
  for (auto [part, span] : llvm::zip(parts, spans)) {
    size_t dots = part.find("...");
    if (dots != std::string::npos)
      part.replace(dots, 3, all.substr(covered - span));
  }
  std::string out = llvm::join(parts, ",");
  if (arrow == std::string::npos) {
    std::string implicit = all;
    for (char l = 'A'; l <= 'z'; ++l)
      if (llvm::isAlpha(l) && all.find(l) == std::string::npos &&
          llvm::count(out, l) == 1)
        implicit += l;
    return out + "->" + implicit;
  }
  std::string output = equation.substr(arrow + 2);
  if (size_t dots = output.find("..."); dots != std::string::npos)
    output.replace(dots, 3, all);
  return out + "->" + output;
}

LogicalResult convertEinsum(NodeContext &ctx) {
  Chain c(ctx);
  std::string given = ctx.getString("equation", "");
  given.erase(llvm::remove_if(given, llvm::isSpace), given.end());
  FailureOr<std::string> expanded = expandEllipses(ctx, given);
  if (failed(expanded))
    return failure();
  std::string equation = *expanded;
  size_t arrow = equation.find("->");
  std::string inputs = equation.substr(0, arrow);
  SmallVector<StringRef> parts;
  StringRef(inputs).split(parts, ',');
  if (parts.size() != ctx.getNumInputs())
    return ctx.emitError() << "equation '" << equation << "' names "
                           << parts.size() << " operands for "
                           << ctx.getNumInputs() << " inputs";
  if (parts.size() > 2)
    return ctx.emitError() << "equation '" << equation
                           << "': einsum of more than two operands is not "
                              "supported";
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
  } else {
    // Implicit output: the letters used once, in alphabetical order.
    for (char l = 'A'; l <= 'z'; ++l)
      if (llvm::count(inputs, l) == 1)
        output += l;
  }
  SmallVector<Term> terms;
  for (auto [i, part] : llvm::enumerate(parts)) {
    Value v = floatOperand(ctx, i, "every operand");
    if (!v)
      return failure();
    if (int64_t(part.size()) != cast<RankedTensorType>(v.getType()).getRank())
      return ctx.emitError() << "equation '" << equation << "': operand " << i
                             << " has " << part.size() << " indices for "
                             << v.getType();
    terms.push_back({part.str(), v});
    if (failed(takeDiagonals(ctx, terms.back())))
      return failure();
  }
  for (char l : output)
    if (inputs.find(l) == std::string::npos)
      return ctx.emitError() << "equation '" << equation << "': output index '"
                             << l << "' names no operand's";
  // Each operand keeps what the output or the other operand reads.
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string keep = output;
    if (terms.size() == 2)
      keep += terms[1 - i].letters;
    if (failed(sumOut(c, terms[i], keep)))
      return failure();
  }
  if (terms.size() == 1)
    return c.result(transposeTo(c, terms[0], output));

  Term &a = terms[0], &b = terms[1];
  for (char l : a.letters)
    if (b.letters.find(l) != std::string::npos && a.size(l) != b.size(l))
      return ctx.emitError() << "equation '" << equation << "': index '" << l
                             << "' is " << a.size(l) << " in operand 0 and "
                             << b.size(l) << " in operand 1";
  std::string batch, contracted, free0, free1;
  for (char l : a.letters) {
    bool shared = b.letters.find(l) != std::string::npos;
    bool kept = output.find(l) != std::string::npos;
    (shared ? (kept ? batch : contracted) : free0) += l;
  }
  for (char l : b.letters)
    if (a.letters.find(l) == std::string::npos)
      free1 += l;
  auto product = [&](const Term &t, StringRef letters) {
    int64_t n = 1;
    for (char l : letters)
      n *= t.size(l);
    return n;
  };
  int64_t nb = product(a, batch), nc = product(a, contracted),
          n0 = product(a, free0), n1 = product(b, free1);
  FailureOr<Value> lhs =
      ctx.reshape(transposeTo(c, a, batch + free0 + contracted), {nb, n0, nc});
  FailureOr<Value> rhs =
      ctx.reshape(transposeTo(c, b, batch + contracted + free1), {nb, nc, n1});
  if (failed(lhs) || failed(rhs))
    return failure();
  Value y = c.op<MatmulOp>(*lhs, *rhs, false, false);
  if (!y)
    return failure();
  Shape unflat;
  for (char l : batch + free0)
    unflat.push_back(a.size(l));
  for (char l : free1)
    unflat.push_back(b.size(l));
  FailureOr<Value> shaped = ctx.reshape(y, unflat);
  if (failed(shaped))
    return failure();
  return c.result(transposeTo(c, {batch + free0 + free1, *shaped}, output));
}

} // namespace

void addEinsumConverter(ConverterTable &table) {
  table.add("Einsum", convertEinsum);
}

} // namespace cleave::onnx_import
