//===- ShapeInference.h - Shape rules of graph ops --------------*- C++ -*-===//
//
// Shape rules as free functions, so that the ops' type inference, their
// verifiers, the importers and the zoo builders share one definition
// (StableHLO keeps its TypeInference.h for the same reason). Each returns
// failure after emitting a diagnostic at `loc` when one is given.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_SHAPEINFERENCE_H
#define CLEAVE_DIALECT_GRAPH_IR_SHAPEINFERENCE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/TypeRange.h"
#include "mlir/IR/ValueRange.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace cleave::graph {

using Shape = llvm::SmallVector<int64_t, 6>;

/// Number of elements of a static tensor type (1 for a scalar).
int64_t numElements(mlir::Type type);
/// Bytes a static tensor of `type` occupies (i1 counts one byte).
int64_t tensorBytes(mlir::Type type);
/// Sum of tensorBytes over the types of `values`.
int64_t sumTensorBytes(mlir::ValueRange values);

/// Numpy broadcasting of several shapes; failure when they are incompatible.
mlir::FailureOr<Shape> broadcastShapes(std::optional<mlir::Location> loc,
                                       llvm::ArrayRef<Shape> shapes);

/// The verifier of graph.add, sub, mul, div, pow, max, min and mod: the
/// operands share one element type, which is not bool (And, Or and Not are
/// composed on 0/1 floats instead).
llvm::LogicalResult verifyArithmeticOperands(mlir::Operation *op);

/// Result type of an elementwise op over `operands` (all float operands
/// must share the element type; an i1 condition may come first).
llvm::LogicalResult
inferBroadcastResult(std::optional<mlir::Location> loc,
                     llvm::ArrayRef<mlir::Type> operands,
                     llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferMatmulResult(std::optional<mlir::Location> loc,
                                      mlir::Type lhs, mlir::Type rhs,
                                      bool transposeLhs, bool transposeRhs,
                                      llvm::SmallVectorImpl<mlir::Type> &results);

/// Results of graph.attention: out [B..., Sq, D] and lse [B..., Sq], after
/// checking query [B..., Sq, D], key and value [B'..., Sk, D], B' equal to
/// B but for a trailing run of 1s.
llvm::LogicalResult inferAttentionResult(std::optional<mlir::Location> loc,
                                         mlir::Type query, mlir::Type key,
                                         mlir::Type value,
                                         llvm::SmallVectorImpl<mlir::Type> &results);

/// Checks graph.attention's additive mask against its query and key:
/// [M..., Mq, Sk] of the query's rank and element type, Mq = Sq or 1, each
/// batch dimension the query's or 1, the query's kept dimensions one
/// contiguous run (kernels index it as ((head / div) % mod)).
llvm::LogicalResult verifyAttentionMask(std::optional<mlir::Location> loc,
                                        mlir::Type query, mlir::Type key,
                                        mlir::Type mask);

/// Scores an attention of `queries` x `keys` computes: all of them, or
/// under a causal mask (key j masked for query i when j > i + shift, shift
/// defaulting to keys - queries) only the unmasked ones.
double attentionScores(int64_t queries, int64_t keys, bool causal);

/// FLOPs of graph.attention (forward: q k^T and p v, 4 D per score, and 5
/// for the softmax) or graph.attention_grad (backward: the scores again,
/// dv, dp, dq and dk, 10 D per score, and 6 elementwise), over the
/// unmasked scores.
double attentionFlops(mlir::Type query, mlir::Type key, bool causal,
                      bool backward);

llvm::LogicalResult inferReduceResult(std::optional<mlir::Location> loc,
                                      mlir::Type input,
                                      llvm::ArrayRef<int64_t> axes,
                                      bool keepdims,
                                      llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferPool2dResult(std::optional<mlir::Location> loc,
                                      mlir::Type input,
                                      llvm::ArrayRef<int64_t> kernel,
                                      llvm::ArrayRef<int64_t> strides,
                                      llvm::ArrayRef<int64_t> padding,
                                      llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferConv2dResult(std::optional<mlir::Location> loc,
                                      mlir::Type input, mlir::Type filter,
                                      mlir::Type bias,
                                      llvm::ArrayRef<int64_t> strides,
                                      llvm::ArrayRef<int64_t> padding,
                                      llvm::ArrayRef<int64_t> dilations,
                                      int64_t groups,
                                      llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferGatherResult(std::optional<mlir::Location> loc,
                                      mlir::Type data, mlir::Type indices,
                                      int64_t axis,
                                      llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferTransposeResult(std::optional<mlir::Location> loc,
                                         mlir::Type input,
                                         llvm::ArrayRef<int64_t> permutation,
                                         llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferSliceResult(std::optional<mlir::Location> loc,
                                     mlir::Type input,
                                     llvm::ArrayRef<int64_t> starts,
                                     llvm::ArrayRef<int64_t> limits,
                                     llvm::ArrayRef<int64_t> strides,
                                     llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferConcatResult(std::optional<mlir::Location> loc,
                                      mlir::TypeRange inputs, int64_t axis,
                                      llvm::SmallVectorImpl<mlir::Type> &results);

llvm::LogicalResult inferSplitResult(std::optional<mlir::Location> loc,
                                     mlir::Type input, int64_t axis,
                                     llvm::ArrayRef<int64_t> sizes,
                                     llvm::SmallVectorImpl<mlir::Type> &results);

/// Checks that `axis` indexes a dimension of a rank-`rank` tensor.
llvm::LogicalResult verifyAxis(std::optional<mlir::Location> loc,
                               llvm::StringRef what, int64_t axis,
                               int64_t rank);

/// Checks that the normalisation parameter `param` (scale or bias) has the
/// shape input.shape[axis:] and the input's element type.
/// The attributes graph.attention and graph.attention_grad share: a
/// positive scale, query_blocks (naming at least one axis) only with a
/// causal mask, and zigzag only with query_blocks and an even number of
/// queries (`query`'s next-to-last dimension).
llvm::LogicalResult verifyAttentionAttributes(std::optional<mlir::Location> loc,
                                              bool causal,
                                              mlir::ArrayAttr queryBlocks,
                                              bool zigzag, mlir::Type query,
                                              double scale);

llvm::LogicalResult verifyNormParam(std::optional<mlir::Location> loc,
                                    llvm::StringRef what, mlir::Type input,
                                    int64_t axis, mlir::Type param);

} // namespace cleave::graph

#endif // CLEAVE_DIALECT_GRAPH_IR_SHAPEINFERENCE_H
