//===- PagedAttention.cpp - Attention over a paged key/value cache --------===//

#include "cleave/runtime/kernels/PagedAttention.h"

#include "Parallel.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace cleave::kernels {

namespace {

/// The pool's [blocks, block_size, kv_heads, dim].
struct Pool {
  int64_t blocks, blockSize, kvHeads, dim;
};

Pool poolOf(const Shape &cache, const char *what) {
  if (cache.size() != 4)
    throwInvalid(std::string(what) +
                 " must be [blocks, block_size, kv_heads, dim], got " +
                 shapeString(cache));
  return {cache[0], cache[1], cache[2], cache[3]};
}

} // namespace

void cacheWrite(ConstTensorRef rows, IndexRef slots, TensorRef cache) {
  Pool pool = poolOf(cache.shape, "cache");
  if (rows.rank() != 3 || rows.shape[1] != pool.kvHeads ||
      rows.shape[2] != pool.dim || slots.rank() != 1 ||
      slots.shape[0] != rows.shape[0])
    throwInvalid("cache_write: rows " + shapeString(rows.shape) +
                 " and slots " + shapeString(slots.shape) +
                 " do not fit cache " + shapeString(cache.shape));
  int64_t row = pool.kvHeads * pool.dim;
  int64_t capacity = pool.blocks * pool.blockSize;
  for (int64_t n = 0; n < rows.shape[0]; ++n) {
    int64_t slot = slots.data[n];
    if (slot < 0)
      continue;
    if (slot >= capacity)
      throwInvalid("cache_write: slot " + std::to_string(slot) +
                   " is beyond the cache's " + std::to_string(capacity) +
                   " positions");
    // [blocks, block_size] flattened is the slot itself.
    std::memcpy(cache.data + slot * row, rows.data + n * row,
                row * sizeof(float));
  }
}

void pagedAttention(ConstTensorRef q, ConstTensorRef keyCache,
                    ConstTensorRef valueCache, IndexRef blockTable,
                    IndexRef lengths, float scale, TensorRef out) {
  Pool pool = poolOf(keyCache.shape, "key_cache");
  if (valueCache.shape != keyCache.shape)
    throwInvalid("paged_attention: value_cache " +
                 shapeString(valueCache.shape) + " is not key_cache's " +
                 shapeString(keyCache.shape));
  if (q.rank() != 4 || q.shape[3] != pool.dim ||
      q.shape[1] % pool.kvHeads != 0 || out.shape != q.shape ||
      blockTable.rank() != 2 || blockTable.shape[0] != q.shape[0] ||
      lengths.rank() != 1 || lengths.shape[0] != q.shape[0])
    throwInvalid("paged_attention: query " + shapeString(q.shape) +
                 ", block table " + shapeString(blockTable.shape) +
                 " and lengths " + shapeString(lengths.shape) +
                 " do not fit cache " + shapeString(keyCache.shape));
  const int64_t batch = q.shape[0], heads = q.shape[1], tokens = q.shape[2],
                dim = pool.dim, group = heads / pool.kvHeads,
                maxBlocks = blockTable.shape[1];
  // Every length and every block a sequence reads, checked before the
  // threads start.
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = lengths.data[b];
    if (length < 0 || length > maxBlocks * pool.blockSize)
      throwInvalid("paged_attention: sequence " + std::to_string(b) +
                   " has length " + std::to_string(length) +
                   ", beyond its block table's " +
                   std::to_string(maxBlocks * pool.blockSize) + " positions");
    for (int64_t i = 0; i * pool.blockSize < length; ++i) {
      int64_t block = blockTable.data[b * maxBlocks + i];
      if (block < 0 || block >= pool.blocks)
        throwInvalid("paged_attention: sequence " + std::to_string(b) +
                     " reads block " + std::to_string(block) + " of " +
                     std::to_string(pool.blocks));
    }
  }
  int64_t work = 0;
  for (int64_t b = 0; b < batch; ++b)
    work += lengths.data[b] * heads * tokens * dim;
  const int64_t rowStride = pool.kvHeads * dim;
  // One (sequence, key head) pair a task: its keys are read once for the
  // group's query heads and tokens.
  detail::parallelFor(batch * pool.kvHeads, 2 * work, [&](int64_t begin,
                                                   int64_t end) {
    std::vector<float> acc(dim);
    for (int64_t task = begin; task < end; ++task) {
      int64_t b = task / pool.kvHeads, kvHead = task % pool.kvHeads;
      int64_t length = lengths.data[b];
      const int64_t *table = blockTable.data + b * maxBlocks;
      for (int64_t h = kvHead * group; h < (kvHead + 1) * group; ++h)
        for (int64_t t = 0; t < tokens; ++t) {
          const float *query = q.data + ((b * heads + h) * tokens + t) * dim;
          float *o = out.data + ((b * heads + h) * tokens + t) * dim;
          int64_t last = length - tokens + t; // the last key it sees
          float maximum = -std::numeric_limits<float>::infinity(), sum = 0;
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int64_t p = 0; p <= last; ++p) {
            int64_t offset =
                (table[p / pool.blockSize] * pool.blockSize +
                 p % pool.blockSize) *
                    rowStride +
                kvHead * dim;
            const float *key = keyCache.data + offset;
            const float *value = valueCache.data + offset;
            float score = 0;
            for (int64_t d = 0; d < dim; ++d)
              score += query[d] * key[d];
            score *= scale;
            if (score > maximum) {
              // Rescale what was summed against the old maximum.
              float factor = std::exp(maximum - score);
              sum *= factor;
              for (int64_t d = 0; d < dim; ++d)
                acc[d] *= factor;
              maximum = score;
            }
            float weight = std::exp(score - maximum);
            sum += weight;
            for (int64_t d = 0; d < dim; ++d)
              acc[d] += weight * value[d];
          }
          for (int64_t d = 0; d < dim; ++d)
            o[d] = sum > 0 ? acc[d] / sum : 0.0f;
        }
    }
  });
}

} // namespace cleave::kernels
