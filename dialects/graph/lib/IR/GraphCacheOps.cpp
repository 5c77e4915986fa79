//===- GraphCacheOps.cpp - Verifiers and costs of the paged KV cache ops --===//
//
// The shapes of graph.cache_write and graph.paged_attention
// (GraphCacheOps.td) checked against each other: every mismatch names the
// operand and the dimension, since a cache layout mismatch would otherwise
// surface as wrong tokens at run time.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"

using namespace mlir;
using namespace cleave::graph;

/// A cache `[blocks, block_size, kv_heads, head_dim]`.
static LogicalResult verifyCache(Operation *op, RankedTensorType cache,
                                 StringRef what) {
  if (cache.getRank() != 4)
    return op->emitOpError() << what
                             << " must be [blocks, block_size, kv_heads, "
                                "head_dim], got "
                             << cache;
  return success();
}

LogicalResult CacheWriteOp::verify() {
  RankedTensorType cache = getCache().getType(), rows = getRows().getType(),
                   slots = getSlots().getType();
  if (failed(verifyCache(*this, cache, "cache")))
    return failure();
  if (rows.getElementType() != cache.getElementType())
    return emitOpError() << "rows of " << rows.getElementType()
                         << " into a cache of " << cache.getElementType();
  if (rows.getRank() != 3 || rows.getDimSize(1) != cache.getDimSize(2) ||
      rows.getDimSize(2) != cache.getDimSize(3))
    return emitOpError() << "rows must be [N, kv_heads, head_dim] = [N, "
                         << cache.getDimSize(2) << ", " << cache.getDimSize(3)
                         << "] for cache " << cache << ", got " << rows;
  if (slots.getRank() != 1 || slots.getDimSize(0) != rows.getDimSize(0))
    return emitOpError() << "slots must be [" << rows.getDimSize(0)
                         << "], one per row, got " << slots;
  return success();
}

int64_t CacheWriteOp::getBytesRead() {
  return tensorBytes(getRows().getType()) + tensorBytes(getSlots().getType());
}

int64_t CacheWriteOp::getBytesWritten() {
  return tensorBytes(getRows().getType());
}

LogicalResult PagedAttentionOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKeyCache().getType(),
                   v = getValueCache().getType(),
                   table = getBlockTable().getType(),
                   lengths = getLengths().getType(), out = getOut().getType();
  if (q.getRank() != 4)
    return emitOpError() << "query must be [batch, heads, tokens, head_dim], "
                            "got "
                         << q;
  if (failed(verifyCache(*this, k, "key_cache")) ||
      failed(verifyCache(*this, v, "value_cache")))
    return failure();
  if (k != v)
    return emitOpError() << "key_cache " << k << " and value_cache " << v
                         << " differ";
  if (k.getElementType() != q.getElementType())
    return emitOpError() << "query of " << q.getElementType()
                         << " against a cache of " << k.getElementType();
  int64_t kvHeads = k.getDimSize(2);
  if (k.getDimSize(3) != q.getDimSize(3))
    return emitOpError() << "query head_dim " << q.getDimSize(3)
                         << " but the cache holds " << k.getDimSize(3);
  if (q.getDimSize(1) % kvHeads)
    return emitOpError() << "query heads (" << q.getDimSize(1)
                         << ") must be a multiple of the cache's kv_heads ("
                         << kvHeads << ")";
  if (table.getRank() != 2 || table.getDimSize(0) != q.getDimSize(0))
    return emitOpError() << "block_table must be [" << q.getDimSize(0)
                         << ", max_blocks], got " << table;
  if (lengths.getRank() != 1 || lengths.getDimSize(0) != q.getDimSize(0))
    return emitOpError() << "lengths must be [" << q.getDimSize(0)
                         << "], got " << lengths;
  if (out != q)
    return emitOpError() << "result must be the query's type " << q
                         << ", got " << out;
  if (getScale().convertToDouble() <= 0)
    return emitOpError() << "scale must be positive, got "
                         << getScale().convertToDouble();
  return success();
}

/// Keys a sequence can see at most: the block table's capacity.
static int64_t visibleKeys(PagedAttentionOp op) {
  return op.getBlockTable().getType().getDimSize(1) *
         op.getKeyCache().getType().getDimSize(1);
}

double PagedAttentionOp::getFlops() {
  RankedTensorType q = getQuery().getType();
  double scores = double(numElements(q) / q.getDimSize(3)) * visibleKeys(*this);
  return scores * (4.0 * q.getDimSize(3) + 5.0);
}

int64_t PagedAttentionOp::getBytesRead() {
  RankedTensorType q = getQuery().getType(), k = getKeyCache().getType();
  int64_t element = tensorBytes(k) / numElements(k);
  // Each sequence reads its own keys and values once for all its heads.
  int64_t cacheRead = 2 * q.getDimSize(0) * visibleKeys(*this) *
                      k.getDimSize(2) * k.getDimSize(3) * element;
  return tensorBytes(q) + cacheRead + tensorBytes(getBlockTable().getType()) +
         tensorBytes(getLengths().getType());
}
