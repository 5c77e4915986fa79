//===- OnnxEinsumConverter.cpp - Einsum as transposes and one matmul ------===//
//
// Einsum of one or two operands, written as the graph ops that the
// contraction is made of, so that it has their gradients and sharding
// rules: each operand first sums the indices no one else reads, then the
// two are transposed to [batch, free, contracted] and [batch, contracted,
// free], flattened to three dimensions and multiplied by one batched
// matmul, and the result is unflattened and transposed to the output's
// order (one operand: only the sum and the transpose). Repeated indices
// within an operand (diagonals), ellipses and more than two operands are
// refused by name.
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

LogicalResult convertEinsum(NodeContext &ctx) {
  Chain c(ctx);
  std::string equation = ctx.getString("equation", "");
  equation.erase(llvm::remove_if(equation, llvm::isSpace), equation.end());
  if (equation.find('.') != std::string::npos)
    return ctx.emitError() << "equation '" << equation
                           << "': ellipses are not supported";
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
    for (char l : part)
      if (llvm::count(part, l) > 1)
        return ctx.emitError() << "equation '" << equation << "': index '"
                               << l << "' repeats within operand " << i
                               << " (a diagonal), which is not supported";
    terms.push_back({part.str(), v});
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
