//===- AssignOrReturn.h - Unwrap a StatusOr or return its error -*- C++ -*-===//
//
// The cost model's pricing functions chain dozens of fallible estimates;
// CLEAVE_ASSIGN(x, expr) declares `x` as expr's value or returns its
// status from the enclosing function (Debian's Abseil has no
// ASSIGN_OR_RETURN).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SRC_ASSIGNORRETURN_H
#define CLEAVE_COST_MODEL_SRC_ASSIGNORRETURN_H

#define CLEAVE_ASSIGN(lhs, expr)                                               \
  auto lhs##OrStatus = (expr);                                                 \
  if (!lhs##OrStatus.ok())                                                     \
    return lhs##OrStatus.status();                                             \
  auto lhs = *lhs##OrStatus;

#endif // CLEAVE_COST_MODEL_SRC_ASSIGNORRETURN_H
