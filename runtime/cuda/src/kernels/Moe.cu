//===- Moe.cu - Mixture-of-experts routing kernels ------------------------===//
//
// Gate: one thread per token walks the token's expert logits as the CPU
// does (softmax in double, summed in expert order), so the probabilities,
// and with them the ranking and its ties, are the CPU's. The top k are k
// passes of arg max, each over the experts that come after the previous
// pick in the order (probability descending, expert ascending): the CPU's
// repeated arg max over the experts not chosen yet, without a chosen set.
//
// Slots: the CPU hands out each expert's capacity slots to its choices in
// (token, j) order, so a choice's slot is its rank among the earlier
// choices of the same expert. A stable radix sort of the choices by expert
// gives every rank at once (a choice's sorted position less that of its
// expert's first choice), deterministically. An owner table
// [experts * capacity] (the choice in each slot, or -1) then lets dispatch
// and the combine gradient write every output element once, coalesced,
// without zeroing first.
//
// Sums of products are rounded as the CPU rounds them: the _rn intrinsics
// keep nvcc from fusing them into FMAs.
//
//===----------------------------------------------------------------------===//

#include "kernels/Moe.h"

#include "Context.h"
#include "kernels/WarpReduce.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>

namespace cleave::cuda {
namespace {

/// Threads per block of the one-thread-per-token kernels.
constexpr int kTokenThreads = 128;

//===----------------------------------------------------------------------===//
// Gate
//===----------------------------------------------------------------------===//

/// The router softmax of one token: p[e] = exp(x[e] - max) / sum.
struct Router {
  const float *x;
  double max, sum;

  __device__ Router(const float *x, int64_t experts) : x(x) {
    // fmax ignores a NaN logit as the CPU's std::max(max, x) does.
    max = -INFINITY;
    for (int64_t e = 0; e < experts; ++e)
      max = fmax(max, double(x[e]));
    sum = 0.0;
    for (int64_t e = 0; e < experts; ++e)
      sum += exp(double(x[e]) - max);
  }

  __device__ double p(int64_t e) const { return exp(double(x[e]) - max) / sum; }
};

/// Writes the topK experts of `r` to picks, best first, and returns the
/// sum of their probabilities (in pick order, as the CPU adds them).
__device__ double pickExperts(const Router &r, int64_t experts, int64_t topK,
                              int64_t *picks) {
  if (isnan(r.sum)) {
    // Every probability is NaN: each CPU comparison fails and it takes the
    // lowest expert not chosen yet.
    for (int64_t j = 0; j < topK; ++j)
      picks[j] = j;
    return r.sum;
  }
  double prevP = INFINITY, total = 0.0;
  int64_t prevE = -1;
  for (int64_t j = 0; j < topK; ++j) {
    int64_t best = -1;
    double bestP = 0.0;
    for (int64_t e = 0; e < experts; ++e) {
      double p = r.p(e);
      bool after = p < prevP || (p == prevP && e > prevE);
      if (after && (best < 0 || p > bestP)) {
        best = e;
        bestP = p;
      }
    }
    picks[j] = best;
    total += bestP;
    prevP = bestP;
    prevE = best;
  }
  return total;
}

__global__ void __launch_bounds__(kTokenThreads)
    moeGateKernel(const float *logits, float *weights, int64_t *indices,
                  int64_t tokens, int64_t experts, int64_t topK,
                  bool renormalize) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < tokens;
       t += int64_t(gridDim.x) * blockDim.x) {
    Router r(logits + t * experts, experts);
    int64_t *picks = indices + t * topK;
    double total = pickExperts(r, experts, topK, picks);
    for (int64_t j = 0; j < topK; ++j) {
      double p = r.p(picks[j]);
      weights[t * topK + j] = static_cast<float>(renormalize ? p / total : p);
    }
  }
}

/// dLogits of one token (the CPU's moeGateBackward): first dL/dp, which is
/// dw_j at the j-th pick (renormalised: (dw_j - sum_j dw_j w_j) / S), then
/// through the softmax, dl = p * (dp - sum(p * dp)). `picks` is scratch.
__global__ void __launch_bounds__(kTokenThreads)
    moeGateGradKernel(const float *logits, const float *dWeights,
                      float *dLogits, int64_t *allPicks, int64_t tokens,
                      int64_t experts, int64_t topK, bool renormalize) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < tokens;
       t += int64_t(gridDim.x) * blockDim.x) {
    Router r(logits + t * experts, experts);
    int64_t *picks = allPicks + t * topK;
    const float *dw = dWeights + t * topK;
    double total = pickExperts(r, experts, topK, picks);
    double dot = 0.0;
    if (renormalize)
      for (int64_t j = 0; j < topK; ++j)
        dot = __dadd_rn(dot, __dmul_rn(double(dw[j]), r.p(picks[j]) / total));
    // The picks are distinct, so dp has one term per chosen expert.
    auto dp = [&](int64_t e) {
      for (int64_t j = 0; j < topK; ++j)
        if (picks[j] == e)
          return __dadd_rn(0.0, renormalize ? (double(dw[j]) - dot) / total
                                            : double(dw[j]));
      return 0.0;
    };
    double pdp = 0.0;
    for (int64_t e = 0; e < experts; ++e)
      pdp = __dadd_rn(pdp, __dmul_rn(r.p(e), dp(e)));
    float *dl = dLogits + t * experts;
    for (int64_t e = 0; e < experts; ++e)
      dl[e] = static_cast<float>(r.p(e) * (dp(e) - pdp));
  }
}

//===----------------------------------------------------------------------===//
// Capacity slots
//===----------------------------------------------------------------------===//

/// Sort keys: each choice's expert (`experts` for one out of range, which
/// sorts last and is dropped), with the choice as the value.
__global__ void choiceKeysKernel(const int64_t *indices, int64_t choices,
                                 int64_t experts, uint64_t *keys,
                                 int64_t *positions) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < choices;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t e = indices[i];
    keys[i] = static_cast<uint64_t>(e >= 0 && e < experts ? e : experts);
    positions[i] = i;
  }
}

/// The first position in keys[0, n) whose key is not below `key`.
__device__ int64_t lowerBound(const uint64_t *keys, int64_t n, uint64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// slots[i]: choice i's rank among its expert's choices when below the
/// capacity, else -1; owner[e * capacity + slot] = i for the kept ones.
__global__ void slotsKernel(const uint64_t *sortedKeys,
                            const int64_t *sortedPositions, int64_t choices,
                            int64_t experts, int64_t capacity, int64_t *slots,
                            int64_t *owner) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < choices;
       p += int64_t(gridDim.x) * blockDim.x) {
    uint64_t key = sortedKeys[p];
    int64_t i = sortedPositions[p];
    int64_t rank = key == static_cast<uint64_t>(experts)
                       ? capacity
                       : p - lowerBound(sortedKeys, p, key);
    if (rank < capacity) {
      slots[i] = rank;
      owner[static_cast<int64_t>(key) * capacity + rank] = i;
    } else {
      slots[i] = -1;
    }
  }
}

size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Bits the sort looks at: enough for keys up to `experts` (the sentinel).
int keyBits(int64_t experts) {
  int bits = 1;
  while (bits < 63 && (uint64_t(1) << bits) <= static_cast<uint64_t>(experts))
    ++bits;
  return bits;
}

size_t sortBytes(int64_t choices, int64_t experts) {
  if (choices <= 0)
    return 0;
  size_t bytes = 0;
  CLEAVE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const uint64_t *>(nullptr),
      static_cast<uint64_t *>(nullptr), static_cast<const int64_t *>(nullptr),
      static_cast<int64_t *>(nullptr), choices, 0, keyBits(experts)));
  return bytes;
}

/// The slot assignment and the buffers that compute it, carved from the
/// workspace.
struct Slots {
  int64_t *slots, *owner;
  uint64_t *keys, *sortedKeys;
  int64_t *positions, *sortedPositions;
  void *temp;
  size_t tempBytes;
};

Slots carve(void *workspace, int64_t choices, int64_t experts,
            int64_t capacity) {
  char *p = static_cast<char *>(workspace);
  size_t array = alignUp(sizeof(int64_t) * choices);
  Slots s;
  s.slots = reinterpret_cast<int64_t *>(p);
  s.keys = reinterpret_cast<uint64_t *>(p + array);
  s.sortedKeys = reinterpret_cast<uint64_t *>(p + 2 * array);
  s.positions = reinterpret_cast<int64_t *>(p + 3 * array);
  s.sortedPositions = reinterpret_cast<int64_t *>(p + 4 * array);
  s.owner = reinterpret_cast<int64_t *>(p + 5 * array);
  s.temp = p + 5 * array + alignUp(sizeof(int64_t) * experts * capacity);
  s.tempBytes = sortBytes(choices, experts);
  return s;
}

/// Computes the slots and the owner table on `stream`.
Slots assignSlots(const int64_t *indices, int64_t choices, int64_t experts,
                  int64_t capacity, void *workspace, cudaStream_t stream) {
  Slots s = carve(workspace, choices, experts, capacity);
  // All bytes 0xff: every slot's owner starts as -1 (free).
  CLEAVE_CUDA_CHECK(cudaMemsetAsync(
      s.owner, 0xff, sizeof(int64_t) * experts * capacity, stream));
  if (choices <= 0)
    return s;
  choiceKeysKernel<<<blocksFor(choices), 256, 0, stream>>>(
      indices, choices, experts, s.keys, s.positions);
  CLEAVE_CUDA_LAUNCHED("choiceKeysKernel");
  CLEAVE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      s.temp, s.tempBytes, s.keys, s.sortedKeys, s.positions, s.sortedPositions,
      choices, 0, keyBits(experts), stream));
  slotsKernel<<<blocksFor(choices), 256, 0, stream>>>(
      s.sortedKeys, s.sortedPositions, choices, experts, capacity, s.slots,
      s.owner);
  CLEAVE_CUDA_LAUNCHED("slotsKernel");
  return s;
}

//===----------------------------------------------------------------------===//
// Dispatch and combine
//===----------------------------------------------------------------------===//

__device__ float zeroOf(float) { return 0.0f; }
__device__ float4 zeroOf(float4) { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }

/// acc += w * v, the product rounded first.
__device__ void addProduct(float &acc, float w, float v) {
  acc = __fadd_rn(acc, __fmul_rn(w, v));
}
__device__ void addProduct(float4 &acc, float w, float4 v) {
  addProduct(acc.x, w, v.x);
  addProduct(acc.y, w, v.y);
  addProduct(acc.z, w, v.z);
  addProduct(acc.w, w, v.w);
}

/// Rows move as float4 when every row starts 16-byte aligned.
bool vectorizable(int64_t hidden, const void *a, const void *b) {
  return hidden % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

/// out[e, s, :] = input[token of the slot's owner, :], or zeros. hidden
/// counts T elements.
template <typename T>
__global__ void moeDispatchKernel(const T *input, const int64_t *owner, T *out,
                                  int64_t slotCount, int64_t k,
                                  int64_t hidden) {
  int64_t total = slotCount * hidden;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total;
       x += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = owner[x / hidden];
    out[x] = i < 0 ? zeroOf(T()) : input[(i / k) * hidden + x % hidden];
  }
}

/// out[t, :] = sum over t's kept choices, in order, of w * input[e, s, :].
template <typename T>
__global__ void moeCombineKernel(const T *input, const float *weights,
                                 const int64_t *indices, const int64_t *slots,
                                 T *out, int64_t tokens, int64_t k,
                                 int64_t hidden, int64_t capacity) {
  int64_t total = tokens * hidden;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total;
       x += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = x / hidden, h = x % hidden;
    T acc = zeroOf(T());
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = t * k + j, slot = slots[i];
      if (slot >= 0)
        addProduct(acc, weights[i],
                   input[(indices[i] * capacity + slot) * hidden + h]);
    }
    out[x] = acc;
  }
}

/// dInput[e, s, :] = 0 + w * dOut[token, :] for the slot's owner (the
/// CPU adds into zeros), zeros in free slots.
template <typename T>
__global__ void moeCombineInputGradKernel(const float *weights,
                                          const int64_t *owner, const T *dOut,
                                          T *dInput, int64_t slotCount,
                                          int64_t k, int64_t hidden) {
  int64_t total = slotCount * hidden;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < total;
       x += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = owner[x / hidden];
    T d = zeroOf(T());
    if (i >= 0)
      addProduct(d, weights[i], dOut[(i / k) * hidden + x % hidden]);
    dInput[x] = d;
  }
}

/// One warp per choice: dWeights[i] = dot(dOut[token], input[e, slot]), 0
/// for a dropped choice.
__global__ void moeCombineWeightGradKernel(const float *input,
                                           const int64_t *indices,
                                           const int64_t *slots,
                                           const float *dOut, float *dWeights,
                                           int64_t choices, int64_t k,
                                           int64_t hidden, int64_t capacity) {
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
       i < choices; i += warps) {
    int64_t slot = slots[i];
    float dot = 0.0f;
    if (slot >= 0) {
      const float *g = dOut + (i / k) * hidden;
      const float *y = input + (indices[i] * capacity + slot) * hidden;
      for (int64_t h = lane; h < hidden; h += kWarp)
        dot += g[h] * y[h];
      // slot is the warp's, so all its lanes reach the shuffles.
      dot = warpReduce(dot, Sum());
    }
    if (lane == 0)
      dWeights[i] = dot;
  }
}

unsigned tokenBlocks(int64_t tokens) {
  return static_cast<unsigned>(std::clamp<int64_t>(
      (tokens + kTokenThreads - 1) / kTokenThreads, 1, int64_t(1) << 20));
}

} // namespace

void launchMoeGate(const float *logits, float *weights, int64_t *indices,
                   int64_t tokens, int64_t experts, int64_t topK,
                   bool renormalize, cudaStream_t stream) {
  if (tokens <= 0 || topK <= 0)
    return;
  moeGateKernel<<<tokenBlocks(tokens), kTokenThreads, 0, stream>>>(
      logits, weights, indices, tokens, experts, topK, renormalize);
  CLEAVE_CUDA_LAUNCHED("moeGateKernel");
}

size_t moeGateGradWorkspaceBytes(int64_t tokens, int64_t topK) {
  return sizeof(int64_t) *
         static_cast<size_t>(std::max<int64_t>(tokens * topK, 0));
}

void launchMoeGateGrad(const float *logits, const float *dWeights,
                       float *dLogits, int64_t tokens, int64_t experts,
                       int64_t topK, bool renormalize, void *workspace,
                       cudaStream_t stream) {
  if (tokens <= 0 || experts <= 0)
    return;
  moeGateGradKernel<<<tokenBlocks(tokens), kTokenThreads, 0, stream>>>(
      logits, dWeights, dLogits, static_cast<int64_t *>(workspace), tokens,
      experts, topK, renormalize);
  CLEAVE_CUDA_LAUNCHED("moeGateGradKernel");
}

size_t moeSlotsWorkspaceBytes(int64_t choices, int64_t experts,
                              int64_t capacity) {
  choices = std::max<int64_t>(choices, 0);
  return 5 * alignUp(sizeof(int64_t) * choices) +
         alignUp(sizeof(int64_t) * experts * capacity) +
         sortBytes(choices, experts);
}

void launchMoeDispatch(const float *input, const int64_t *indices, float *out,
                       int64_t tokens, int64_t k, int64_t hidden,
                       int64_t experts, int64_t capacity, void *workspace,
                       cudaStream_t stream) {
  int64_t slotCount = experts * capacity;
  if (slotCount * hidden <= 0)
    return;
  Slots s =
      assignSlots(indices, tokens * k, experts, capacity, workspace, stream);
  if (vectorizable(hidden, input, out))
    moeDispatchKernel<<<blocksFor(slotCount * hidden / 4), 256, 0, stream>>>(
        reinterpret_cast<const float4 *>(input), s.owner,
        reinterpret_cast<float4 *>(out), slotCount, k, hidden / 4);
  else
    moeDispatchKernel<<<blocksFor(slotCount * hidden), 256, 0, stream>>>(
        input, s.owner, out, slotCount, k, hidden);
  CLEAVE_CUDA_LAUNCHED("moeDispatchKernel");
}

void launchMoeCombine(const float *input, const float *weights,
                      const int64_t *indices, float *out, int64_t tokens,
                      int64_t k, int64_t hidden, int64_t experts,
                      int64_t capacity, void *workspace, cudaStream_t stream) {
  if (tokens * hidden <= 0)
    return;
  Slots s =
      assignSlots(indices, tokens * k, experts, capacity, workspace, stream);
  if (vectorizable(hidden, input, out))
    moeCombineKernel<<<blocksFor(tokens * hidden / 4), 256, 0, stream>>>(
        reinterpret_cast<const float4 *>(input), weights, indices, s.slots,
        reinterpret_cast<float4 *>(out), tokens, k, hidden / 4, capacity);
  else
    moeCombineKernel<<<blocksFor(tokens * hidden), 256, 0, stream>>>(
        input, weights, indices, s.slots, out, tokens, k, hidden, capacity);
  CLEAVE_CUDA_LAUNCHED("moeCombineKernel");
}

void launchMoeCombineGrad(const float *input, const float *weights,
                          const int64_t *indices, const float *dOut,
                          float *dInput, float *dWeights, int64_t tokens,
                          int64_t k, int64_t hidden, int64_t experts,
                          int64_t capacity, void *workspace,
                          cudaStream_t stream) {
  if (!dInput && !dWeights)
    return;
  int64_t choices = tokens * k, slotCount = experts * capacity;
  Slots s = assignSlots(indices, choices, experts, capacity, workspace, stream);
  if (dInput && slotCount * hidden > 0) {
    if (vectorizable(hidden, dOut, dInput))
      moeCombineInputGradKernel<<<blocksFor(slotCount * hidden / 4), 256, 0,
                                  stream>>>(
          weights, s.owner, reinterpret_cast<const float4 *>(dOut),
          reinterpret_cast<float4 *>(dInput), slotCount, k, hidden / 4);
    else
      moeCombineInputGradKernel<<<blocksFor(slotCount * hidden), 256, 0,
                                  stream>>>(weights, s.owner, dOut, dInput,
                                            slotCount, k, hidden);
    CLEAVE_CUDA_LAUNCHED("moeCombineInputGradKernel");
  }
  if (dWeights && choices > 0) {
    moeCombineWeightGradKernel<<<blocksFor(choices * kWarp), 256, 0, stream>>>(
        input, indices, s.slots, dOut, dWeights, choices, k, hidden, capacity);
    CLEAVE_CUDA_LAUNCHED("moeCombineWeightGradKernel");
  }
}

} // namespace cleave::cuda
