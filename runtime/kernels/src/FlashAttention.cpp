//===- FlashAttention.cpp - Fused attention, forward and backward ---------===//
//
// Blocks of queries against blocks of keys, products through cblas (one
// GEMM per block pair), the softmax in between on the block in cache.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/FlashAttention.h"

#include "Gemm.h"
#include "Parallel.h"
#include "Support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace cleave::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Dims {
  int64_t batch, heads, kvHeads, queries, keys, dim;
  RowOffsets shift;
};

Dims checkDims(ConstTensorRef q, ConstTensorRef k, ConstTensorRef v,
               const FlashAttentionOptions &o, const char *kernel) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    throwInvalid(std::string(kernel) +
                         ": q, k and v must be [batch, heads, seq, dim]");
  Dims d{q.shape[0], q.shape[1], k.shape[1], q.shape[2],
         k.shape[2], q.shape[3], RowOffsets()};
  if (k.shape[0] != d.batch || k.shape[3] != d.dim)
    throwInvalid(std::string(kernel) + ": k must be [" +
                         std::to_string(d.batch) + ", heads, keys, " +
                         std::to_string(d.dim) + "], got " +
                         shapeString(k.shape));
  detail::checkShape(v, k.shape, kernel, "v");
  if (d.kvHeads <= 0 || d.heads % d.kvHeads)
    throwInvalid(std::string(kernel) + ": " +
                         std::to_string(d.kvHeads) +
                         " key/value heads do not divide " +
                         std::to_string(d.heads) + " query heads");
  if (o.blockQueries < 1 || o.blockKeys < 1)
    throwInvalid(std::string(kernel) + ": blocks must be positive");
  d.shift = o.causalShift ? *o.causalShift : RowOffsets(d.keys - d.queries);
  return d;
}

/// Keys a query row may see: [0, visible(i)), never fewer for a later row.
int64_t visible(const Dims &d, bool causal, int64_t i) {
  if (!causal)
    return d.keys;
  return std::clamp<int64_t>(d.shift(i) + 1, 0, d.keys);
}

/// Heads [u0, u1) (batch x heads, flattened) of the forward pass.
void forwardHeads(ConstTensorRef q, ConstTensorRef k, ConstTensorRef v,
                  const FlashAttentionOptions &o, const Dims &d, TensorRef out,
                  TensorRef lse, int64_t u0, int64_t u1) {
  int64_t br = o.blockQueries, bc = o.blockKeys, D = d.dim;
  std::vector<float> s(br * bc), acc(br * D), rowMax(br), rowSum(br);
  for (int64_t u = u0; u < u1; ++u) {
    int64_t b = u / d.heads, h = u % d.heads;
    int64_t kvh = h / (d.heads / d.kvHeads);
    const float *qh = q.data + (b * d.heads + h) * d.queries * D;
    const float *kh = k.data + (b * d.kvHeads + kvh) * d.keys * D;
    const float *vh = v.data + (b * d.kvHeads + kvh) * d.keys * D;
    float *oh = out.data + (b * d.heads + h) * d.queries * D;
    float *lh = lse.data + (b * d.heads + h) * d.queries;
    const float *mh =
        o.mask.data ? o.mask.head(b * d.heads + h) : nullptr;
    for (int64_t i0 = 0; i0 < d.queries; i0 += br) {
      int64_t rows = std::min(br, d.queries - i0);
      // Keys any row of the block sees: later blocks are wholly masked.
      int64_t seen = visible(d, o.causal, i0 + rows - 1);
      std::fill(rowMax.begin(), rowMax.begin() + rows, kNegInf);
      std::fill(rowSum.begin(), rowSum.begin() + rows, 0.0f);
      std::fill(acc.begin(), acc.begin() + rows * D, 0.0f);
      for (int64_t j0 = 0; j0 < seen; j0 += bc) {
        int64_t cols = std::min(bc, d.keys - j0);
        // s = q_block k_block^T (rows x cols, leading dimension cols).
        detail::gemm(false, true, rows, cols, D, qh + i0 * D, kh + j0 * D,
                     0.0f, s.data());
        for (int64_t r = 0; r < rows; ++r) {
          float *row = s.data() + r * cols;
          int64_t limit = std::min(cols, visible(d, o.causal, i0 + r) - j0);
          const float *add =
              mh ? mh + (i0 + r) * o.mask.rowStride + j0 : nullptr;
          float blockMax = kNegInf;
          for (int64_t c = 0; c < cols; ++c) {
            row[c] = c < limit ? row[c] * o.scale +
                                     (add ? maskedScore(add[c]) : 0.0f)
                               : kNegInf;
            blockMax = std::max(blockMax, row[c]);
          }
          float newMax = std::max(rowMax[r], blockMax);
          if (newMax == kNegInf) { // nothing visible yet
            std::fill(row, row + cols, 0.0f);
            continue;
          }
          float rescale = std::exp(rowMax[r] - newMax); // 0 at first
          float sum = 0.0f;
          for (int64_t c = 0; c < cols; ++c) {
            row[c] = c < limit ? std::exp(row[c] - newMax) : 0.0f;
            sum += row[c];
          }
          rowSum[r] = rowSum[r] * rescale + sum;
          rowMax[r] = newMax;
          float *a = acc.data() + r * D;
          for (int64_t x = 0; x < D; ++x)
            a[x] *= rescale;
        }
        // acc += p v_block (rows x D).
        detail::gemm(false, false, rows, D, cols, s.data(), vh + j0 * D,
                     1.0f, acc.data());
      }
      for (int64_t r = 0; r < rows; ++r) {
        float *o_row = oh + (i0 + r) * D;
        if (rowSum[r] <= 0.0f) {
          std::fill(o_row, o_row + D, 0.0f);
          lh[i0 + r] = kNegInf;
          continue;
        }
        float inv = 1.0f / rowSum[r];
        for (int64_t x = 0; x < D; ++x)
          o_row[x] = acc[r * D + x] * inv;
        lh[i0 + r] = rowMax[r] + std::log(rowSum[r]);
      }
    }
  }
}

/// Key/value heads [u0, u1) (batch x kvHeads, flattened) of the backward
/// pass, each with the query heads of its group in order.
void backwardKeyHeads(ConstTensorRef q, ConstTensorRef k, ConstTensorRef v,
                      ConstTensorRef out, ConstTensorRef lse,
                      ConstTensorRef dOut, const FlashAttentionOptions &o,
                      const Dims &d, TensorRef dq, TensorRef dk, TensorRef dv,
                      int64_t u0, int64_t u1) {
  int64_t br = o.blockQueries, bc = o.blockKeys, D = d.dim;
  int64_t group = d.heads / d.kvHeads;
  std::vector<float> p(br * bc), dp(br * bc), delta(d.queries);
  for (int64_t u = u0; u < u1; ++u)
    for (int64_t g = 0; g < group; ++g) {
      int64_t b = u / d.kvHeads, h = (u % d.kvHeads) * group + g;
      int64_t kvh = h / group;
      int64_t qOff = (b * d.heads + h) * d.queries * D;
      int64_t kvOff = (b * d.kvHeads + kvh) * d.keys * D;
      const float *qh = q.data + qOff, *oh = out.data + qOff,
                  *gh = dOut.data + qOff;
      const float *kh = k.data + kvOff, *vh = v.data + kvOff;
      const float *lh = lse.data + (b * d.heads + h) * d.queries;
      const float *mh =
          o.mask.data ? o.mask.head(b * d.heads + h) : nullptr;
      float *dqh = dq.data ? dq.data + qOff : nullptr;
      float *dkh = dk.data ? dk.data + kvOff : nullptr;
      float *dvh = dv.data ? dv.data + kvOff : nullptr;
      // delta_i = dOut_i . out_i: the softmax backward's row term.
      for (int64_t i = 0; i < d.queries; ++i) {
        float sum = 0.0f;
        for (int64_t x = 0; x < D; ++x)
          sum += gh[i * D + x] * oh[i * D + x];
        delta[i] = sum;
      }
      for (int64_t j0 = 0; j0 < d.keys; j0 += bc) {
        int64_t cols = std::min(bc, d.keys - j0);
        for (int64_t i0 = 0; i0 < d.queries; i0 += br) {
          int64_t rows = std::min(br, d.queries - i0);
          // A block whose every row sees none of these keys: skipped.
          if (visible(d, o.causal, i0 + rows - 1) <= j0)
            continue;
          detail::gemm(false, true, rows, cols, D, qh + i0 * D, kh + j0 * D,
                       0.0f, p.data());
          for (int64_t r = 0; r < rows; ++r) {
            int64_t limit = std::min(cols, visible(d, o.causal, i0 + r) - j0);
            float l = lh[i0 + r];
            float *row = p.data() + r * cols;
            const float *add =
                mh ? mh + (i0 + r) * o.mask.rowStride + j0 : nullptr;
            for (int64_t c = 0; c < cols; ++c)
              row[c] = c < limit && l != kNegInf
                           ? std::exp(row[c] * o.scale +
                                      (add ? maskedScore(add[c]) : 0.0f) - l)
                           : 0.0f;
          }
          // dv += p^T dOut_block.
          if (dvh)
            detail::gemm(true, false, cols, D, rows, p.data(), gh + i0 * D,
                         1.0f, dvh + j0 * D);
          if (!dqh && !dkh)
            continue;
          // dp = dOut_block v_block^T; ds = p (dp - delta) scale.
          detail::gemm(false, true, rows, cols, D, gh + i0 * D, vh + j0 * D,
                       0.0f, dp.data());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
              dp[r * cols + c] = p[r * cols + c] *
                                 (dp[r * cols + c] - delta[i0 + r]) * o.scale;
          // dq_block += ds k_block; dk_block += ds^T q_block.
          if (dqh)
            detail::gemm(false, false, rows, D, cols, dp.data(), kh + j0 * D,
                         1.0f, dqh + i0 * D);
          if (dkh)
            detail::gemm(true, false, cols, D, rows, dp.data(), qh + i0 * D,
                         1.0f, dkh + j0 * D);
        }
      }
    }
}

} // namespace

AttentionMask attentionMask(const float *data, const Shape &mask,
                            const Shape &query, int64_t keys) {
  size_t rank = query.size();
  auto fail = [&](const std::string &why) {
    throwInvalid("attention: mask " + shapeString(mask) + " " + why +
                 " (query " + shapeString(query) + ", " +
                 std::to_string(keys) + " keys)");
  };
  if (mask.size() != rank || rank < 3)
    fail("must have the query's rank");
  if (mask[rank - 1] != keys)
    fail("must have one column per key");
  if (mask[rank - 2] != query[rank - 2] && mask[rank - 2] != 1)
    fail("must have one row per query or one row for all");
  AttentionMask m;
  m.data = data;
  m.rowStride = mask[rank - 2] == 1 ? 0 : keys;
  m.plane = mask[rank - 2] * keys;
  // Kept dimensions [first, last]: mod is their product, div the product of
  // the query's batch dimensions after them.
  int64_t first = -1, last = -1;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (mask[d] != query[d] && mask[d] != 1)
      fail("must broadcast to the query's batch dimensions");
    if (query[d] != 1 && mask[d] != 1) {
      if (first < 0)
        first = static_cast<int64_t>(d);
      last = static_cast<int64_t>(d);
    }
  }
  for (int64_t d = first; first >= 0 && d <= last; ++d) {
    if (mask[d] != query[d])
      fail("must keep one contiguous run of the query's batch dimensions");
    m.mod *= query[d];
  }
  for (size_t d = static_cast<size_t>(last + 1); d + 2 < rank; ++d)
    m.div *= query[d];
  return m;
}

AttentionShapes attentionShapes(const Shape &query, const Shape &key) {
  size_t rank = query.size();
  if (rank < 3 || key.size() != rank || query.back() != key.back())
    throwInvalid("attention: query " + shapeString(query) + " and key " +
                 shapeString(key) + " must be [batch..., seq, dim] alike");
  int64_t heads = 1, kvHeads = 1;
  bool broadcasting = false;
  for (size_t d = 0; d + 2 < rank; ++d) {
    heads *= query[d];
    kvHeads *= key[d];
    if (key[d] == query[d] && !(broadcasting && query[d] != 1))
      continue;
    if (key[d] != 1)
      throwInvalid("attention: key " + shapeString(key) +
                   " broadcasts over the query " + shapeString(query) +
                   " other than in a trailing run of batch dimensions");
    broadcasting = true;
  }
  int64_t queries = query[rank - 2], keys = key[rank - 2], dim = query.back();
  return {{1, heads, queries, dim}, {1, kvHeads, keys, dim}, {1, heads, queries}};
}

void flashAttention(ConstTensorRef q, ConstTensorRef k, ConstTensorRef v,
                    const FlashAttentionOptions &o, TensorRef out,
                    TensorRef lse) {
  const char *kernel = "flash_attention";
  Dims d = checkDims(q, k, v, o, kernel);
  detail::checkShape(out, q.shape, kernel, "out");
  detail::checkShape(lse, {d.batch, d.heads, d.queries}, kernel, "lse");
  // Heads in parallel (each its own output rows), one GEMM per block pair
  // on the head's thread.
  int64_t units = d.batch * d.heads;
  detail::parallelFor(units, units * d.queries * d.keys * d.dim,
                      [&](int64_t u0, int64_t u1) {
                        forwardHeads(q, k, v, o, d, out, lse, u0, u1);
                      });
}

void flashAttentionBackward(ConstTensorRef q, ConstTensorRef k,
                            ConstTensorRef v, ConstTensorRef out,
                            ConstTensorRef lse, ConstTensorRef dOut,
                            const FlashAttentionOptions &o, TensorRef dq,
                            TensorRef dk, TensorRef dv) {
  const char *kernel = "flash_attention_backward";
  Dims d = checkDims(q, k, v, o, kernel);
  detail::checkShape(out, q.shape, kernel, "out");
  detail::checkShape(dOut, q.shape, kernel, "dOut");
  detail::checkShape(lse, {d.batch, d.heads, d.queries}, kernel, "lse");
  detail::checkOptionalShape(dq, q.shape, kernel, "dq");
  detail::checkOptionalShape(dk, k.shape, kernel, "dk");
  detail::checkOptionalShape(dv, v.shape, kernel, "dv");
  detail::zero(dq);
  detail::zero(dk);
  detail::zero(dv);
  // Key/value heads in parallel, each with the query heads of its group in
  // order: dk and dv of a key head, and dq of a query head, have one
  // writer, and dk and dv sum the group's heads in the same order on any
  // number of threads.
  int64_t units = d.batch * d.kvHeads;
  detail::parallelFor(units, units * d.heads / d.kvHeads * d.queries *
                                 d.keys * d.dim,
                      [&](int64_t u0, int64_t u1) {
                        backwardKeyHeads(q, k, v, out, lse, dOut, o, d, dq,
                                         dk, dv, u0, u1);
                      });
}

} // namespace cleave::kernels
