//===- FuseAttention.h - Fused attention recognition ------------*- C++ -*-===//
//
// The rewrite of the unfused attention chain into graph.attention, for the
// cleave-fuse-attention pass and any pipeline that wants it among its own
// patterns.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRANSFORMS_FUSEATTENTION_H
#define CLEAVE_TRANSFORMS_FUSEATTENTION_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace cleave {

/// matmul(q, k^T) [* or / scalar] -> softmax(last axis[, causal])
/// [-> dropout of ratio 0] -> matmul(p, v)  ==>  graph.attention(q, k, v),
/// k^T given as the matmul's transpose_rhs or as a transpose of the last
/// two dimensions; grouped-query attention (keys broadcast over a trailing
/// run of query batch dimensions) included. Only chains whose intermediate
/// values have no other reader are fused.
void populateFuseAttentionPatterns(mlir::RewritePatternSet &patterns);

} // namespace cleave

#endif // CLEAVE_TRANSFORMS_FUSEATTENTION_H
