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

/// matmul(q, k^T) [* or / scalar] [+ mask] -> softmax(last axis[, causal])
/// [-> where(p != p, 0, p)] [-> dropout of ratio 0] -> matmul(p, v)  ==>
/// graph.attention(q, k, v[, mask]), k^T given as the matmul's
/// transpose_rhs or as a transpose of the last two dimensions (between
/// reshapes that regroup batch dimensions), the scale on the scores or
/// split between q and k^T; grouped-query attention (keys broadcast over a
/// trailing run of query batch dimensions, or repeated by a product with
/// ones as PyTorch's exporters write `expand`) included; an additive or
/// boolean mask that depends on no parameter becomes the op's mask. Only
/// chains whose intermediate values have no other reader are fused.
void populateFuseAttentionPatterns(mlir::RewritePatternSet &patterns);

} // namespace cleave

#endif // CLEAVE_TRANSFORMS_FUSEATTENTION_H
