//===- Moe.cpp - Mixture-of-experts routing, dispatch and combine ---------===//

#include "cleave/runtime/kernels/Moe.h"

#include "Support.h"

#include <cmath>
#include <limits>

namespace cleave::kernels {
namespace {

void checkRouting(const Shape &tokens, IndexRef indices, const char *kernel) {
  CLEAVE_CHECK_IN(kernel,
                  tokens.size() == 2 && indices.rank() == 2 &&
                      indices.shape[0] == tokens[0],
                  "expected tokens [T, H] and routing [T, k], got " +
                      shapeString(tokens) + " and " +
                      shapeString(indices.shape));
}

/// Softmax of one row of router logits, in double for stable ranking.
void routerSoftmax(const float *x, int64_t n, std::vector<double> &p) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t e = 0; e < n; ++e)
    max = std::max(max, double(x[e]));
  double sum = 0.0;
  for (int64_t e = 0; e < n; ++e) {
    p[e] = std::exp(double(x[e]) - max);
    sum += p[e];
  }
  for (int64_t e = 0; e < n; ++e)
    p[e] /= sum;
}

std::vector<int64_t> slotsOf(IndexRef indices, int64_t numExperts,
                             int64_t capacity) {
  std::vector<int64_t> slots(indices.numElements());
  assignExpertSlots(indices, numExperts, capacity, slots.data());
  return slots;
}

} // namespace

void moeGate(ConstTensorRef logits, int64_t topK, bool renormalize,
             TensorRef weights, MutableIndexRef indices) {
  CLEAVE_CHECK(logits.rank() == 2, "router logits must be [tokens, experts], "
                                   "got " +
                                       shapeString(logits.shape));
  int64_t tokens = logits.shape[0], experts = logits.shape[1];
  CLEAVE_CHECK(topK >= 1 && topK <= experts, "top_k = " + std::to_string(topK) +
                                                 " must be in [1, " +
                                                 std::to_string(experts) + "]");
  detail::checkShape(weights, {tokens, topK}, "moeGate", "weights");
  detail::checkShape(indices, {tokens, topK}, "moeGate", "indices");
  std::vector<double> p(experts);
  std::vector<uint8_t> chosen(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    routerSoftmax(logits.data + t * experts, experts, p);
    std::fill(chosen.begin(), chosen.end(), 0);
    float *w = weights.data + t * topK;
    int64_t *idx = indices.data + t * topK;
    double sum = 0.0;
    for (int64_t j = 0; j < topK; ++j) {
      // The strict comparison keeps the lowest index among equals.
      int64_t best = -1;
      for (int64_t e = 0; e < experts; ++e)
        if (!chosen[e] && (best < 0 || p[e] > p[best]))
          best = e;
      chosen[best] = 1;
      idx[j] = best;
      sum += p[best];
    }
    for (int64_t j = 0; j < topK; ++j)
      w[j] = static_cast<float>(renormalize ? p[idx[j]] / sum : p[idx[j]]);
  }
}

void moeGateBackward(ConstTensorRef logits, IndexRef indices, bool renormalize,
                     ConstTensorRef dWeights, TensorRef dLogits) {
  CLEAVE_CHECK(logits.rank() == 2 && indices.rank() == 2 &&
                   indices.shape[0] == logits.shape[0],
               "expected logits [T, E] and indices [T, k], got " +
                   shapeString(logits.shape) + " and " +
                   shapeString(indices.shape));
  int64_t tokens = logits.shape[0], experts = logits.shape[1];
  int64_t k = indices.shape[1];
  detail::checkShape(dWeights, indices.shape, "moeGateBackward", "dWeights");
  detail::checkShape(dLogits, logits.shape, "moeGateBackward", "dLogits");
  std::vector<double> p(experts), dp(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    routerSoftmax(logits.data + t * experts, experts, p);
    const int64_t *idx = indices.data + t * k;
    const float *dw = dWeights.data + t * k;
    for (int64_t j = 0; j < k; ++j)
      CLEAVE_CHECK(idx[j] >= 0 && idx[j] < experts, "expert index " +
                                                        std::to_string(idx[j]) +
                                                        " is out of range");
    // dL/dp first. Without renormalisation w_j = p[e_j]. With it
    // w_j = p[e_j] / S, S = sum_j p[e_j], so
    // dL/dp[e] = (sum_{j: e_j = e} dw_j - count_e * sum_j dw_j w_j) / S.
    std::fill(dp.begin(), dp.end(), 0.0);
    if (!renormalize) {
      for (int64_t j = 0; j < k; ++j)
        dp[idx[j]] += dw[j];
    } else {
      double sum = 0.0;
      for (int64_t j = 0; j < k; ++j)
        sum += p[idx[j]];
      double dot = 0.0;
      for (int64_t j = 0; j < k; ++j)
        dot += dw[j] * (p[idx[j]] / sum);
      for (int64_t j = 0; j < k; ++j)
        dp[idx[j]] += (dw[j] - dot) / sum;
    }
    // Then through the softmax: dl = p * (dp - sum(p * dp)).
    double pdp = 0.0;
    for (int64_t e = 0; e < experts; ++e)
      pdp += p[e] * dp[e];
    float *dl = dLogits.data + t * experts;
    for (int64_t e = 0; e < experts; ++e)
      dl[e] = static_cast<float>(p[e] * (dp[e] - pdp));
  }
}

void moeGateBackward(ConstTensorRef logits, int64_t topK, bool renormalize,
                     ConstTensorRef dWeights, TensorRef dLogits) {
  CLEAVE_CHECK(logits.rank() == 2, "router logits must be [tokens, experts], "
                                   "got " +
                                       shapeString(logits.shape));
  Shape routed{logits.shape[0], topK};
  Tensor weights(routed);
  IndexTensor indices(routed);
  moeGate(logits, topK, renormalize, weights, indices.ref());
  moeGateBackward(logits, indices, renormalize, dWeights, dLogits);
}

void assignExpertSlots(IndexRef indices, int64_t numExperts, int64_t capacity,
                       int64_t *slots) {
  CLEAVE_CHECK(numExperts >= 1 && capacity >= 1,
               "experts and capacity must be positive");
  std::vector<int64_t> used(numExperts, 0);
  int64_t choices = indices.numElements();
  // Row-major order of [T, k] is (t, j) order.
  for (int64_t i = 0; i < choices; ++i) {
    int64_t e = indices.data[i];
    CLEAVE_CHECK(e >= 0 && e < numExperts,
                 "expert index " + std::to_string(e) + " is out of range for " +
                     std::to_string(numExperts) + " experts");
    slots[i] = used[e] < capacity ? used[e]++ : -1;
  }
}

void moeDispatch(ConstTensorRef input, IndexRef indices, int64_t numExperts,
                 int64_t capacity, TensorRef out) {
  checkRouting(input.shape, indices, "moeDispatch");
  int64_t hidden = input.shape[1], k = indices.shape[1];
  detail::checkShape(out, {numExperts, capacity, hidden}, "moeDispatch",
                     "result");
  std::vector<int64_t> slots = slotsOf(indices, numExperts, capacity);
  detail::zero(out);
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    if (slots[i] < 0)
      continue;
    std::memcpy(out.data + (indices.data[i] * capacity + slots[i]) * hidden,
                input.data + (i / k) * hidden, sizeof(float) * hidden);
  }
}

void moeDispatchBackward(ConstTensorRef dOut, IndexRef indices,
                         TensorRef dInput) {
  checkRouting(dInput.shape, indices, "moeDispatchBackward");
  CLEAVE_CHECK(dOut.rank() == 3 && dOut.shape[2] == dInput.shape[1],
               "dOut must be [E, C, " + std::to_string(dInput.shape[1]) +
                   "], got " + shapeString(dOut.shape));
  int64_t capacity = dOut.shape[1], hidden = dOut.shape[2];
  int64_t k = indices.shape[1];
  std::vector<int64_t> slots = slotsOf(indices, dOut.shape[0], capacity);
  detail::zero(dInput);
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    if (slots[i] < 0)
      continue;
    const float *g =
        dOut.data + (indices.data[i] * capacity + slots[i]) * hidden;
    float *d = dInput.data + (i / k) * hidden;
    for (int64_t h = 0; h < hidden; ++h)
      d[h] += g[h];
  }
}

void moeCombine(ConstTensorRef input, ConstTensorRef weights, IndexRef indices,
                TensorRef out) {
  CLEAVE_CHECK(input.rank() == 3, "expert outputs must be [E, C, H], got " +
                                      shapeString(input.shape));
  CLEAVE_CHECK(weights.rank() == 2 && weights.shape == indices.shape,
               "weights " + shapeString(weights.shape) + " and indices " +
                   shapeString(indices.shape) + " must both be [T, k]");
  int64_t capacity = input.shape[1], hidden = input.shape[2];
  int64_t tokens = indices.shape[0], k = indices.shape[1];
  detail::checkShape(out, {tokens, hidden}, "moeCombine", "result");
  std::vector<int64_t> slots = slotsOf(indices, input.shape[0], capacity);
  detail::zero(out);
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    if (slots[i] < 0)
      continue;
    const float *y =
        input.data + (indices.data[i] * capacity + slots[i]) * hidden;
    float w = weights.data[i];
    float *o = out.data + (i / k) * hidden;
    for (int64_t h = 0; h < hidden; ++h)
      o[h] += w * y[h];
  }
}

void moeCombineBackward(ConstTensorRef input, ConstTensorRef weights,
                        IndexRef indices, ConstTensorRef dOut, TensorRef dInput,
                        TensorRef dWeights) {
  CLEAVE_CHECK(input.rank() == 3, "expert outputs must be [E, C, H], got " +
                                      shapeString(input.shape));
  CLEAVE_CHECK(weights.rank() == 2 && weights.shape == indices.shape,
               "weights " + shapeString(weights.shape) + " and indices " +
                   shapeString(indices.shape) + " must both be [T, k]");
  int64_t capacity = input.shape[1], hidden = input.shape[2];
  int64_t tokens = indices.shape[0], k = indices.shape[1];
  detail::checkShape(dOut, {tokens, hidden}, "moeCombineBackward", "dOut");
  detail::checkOptionalShape(dInput, input.shape, "moeCombineBackward",
                             "dInput");
  detail::checkOptionalShape(dWeights, weights.shape, "moeCombineBackward",
                             "dWeights");
  std::vector<int64_t> slots = slotsOf(indices, input.shape[0], capacity);
  detail::zero(dInput);
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    const float *g = dOut.data + (i / k) * hidden;
    if (slots[i] < 0) {
      if (dWeights)
        dWeights.data[i] = 0.0f;
      continue;
    }
    int64_t at = (indices.data[i] * capacity + slots[i]) * hidden;
    if (dInput) {
      float w = weights.data[i];
      float *d = dInput.data + at;
      for (int64_t h = 0; h < hidden; ++h)
        d[h] += w * g[h];
    }
    if (dWeights) {
      const float *y = input.data + at;
      float dot = 0.0f;
      for (int64_t h = 0; h < hidden; ++h)
        dot += g[h] * y[h];
      dWeights.data[i] = dot;
    }
  }
}

} // namespace cleave::kernels
