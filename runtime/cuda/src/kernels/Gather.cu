//===- Gather.cu - graph.gather and gather_grad kernels -------------------===//
//
// The forward is a copy with one thread per element (per float4 when the
// rows allow), coalesced along the inner dimension.
//
// The backward is a scatter-add in which several indices may name the same
// row (an embedding's repeated tokens). Rather than atomics, whose order
// varies from run to run, the indices are radix-sorted by the row they
// name (stably, so each row's indices stay in order), and one thread per
// (run of equal rows, outer, inner element) adds the run's gradients in
// index order: the CPU's sum, bit for bit, with one write per element.
//
//===----------------------------------------------------------------------===//

#include "kernels/Gather.h"

#include "Context.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>

namespace cleave::cuda {
namespace {

__device__ float zeroOf(float) { return 0.0f; }
__device__ float4 zeroOf(float4) { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }

__device__ void addTo(float &acc, float v) { acc += v; }
__device__ void addTo(float4 &acc, float4 v) {
  acc.x += v.x;
  acc.y += v.y;
  acc.z += v.z;
  acc.w += v.w;
}

/// Rows are moved as float4 when every row starts 16-byte aligned.
bool vectorizable(int64_t inner, const void *a, const void *b) {
  return inner % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

/// The row an index names, or -1 when it is out of range.
__device__ int64_t resolve(int64_t index, int64_t size) {
  if (index < 0)
    index += size;
  return index >= 0 && index < size ? index : -1;
}

/// out[o, j, i] = data[o, row(j), i]; inner counts T elements.
template <typename T>
__global__ void gatherKernel(const T *data, const int64_t *indices, T *out,
                             int64_t outer, int64_t size, int64_t inner,
                             int64_t count) {
  int64_t total = outer * count * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = t % inner, oj = t / inner;
    int64_t j = oj % count, o = oj / count;
    int64_t row = resolve(indices[j], size);
    out[t] = row < 0 ? zeroOf(T()) : data[(o * size + row) * inner + i];
  }
}

/// Sort keys: the row index j names (size for an index out of range, which
/// sorts last and is skipped), with j as the value.
__global__ void gatherKeysKernel(const int64_t *indices, int64_t count,
                                 int64_t size, uint64_t *keys,
                                 int64_t *positions) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < count;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t row = resolve(indices[j], size);
    keys[j] = static_cast<uint64_t>(row < 0 ? size : row);
    positions[j] = j;
  }
}

/// One thread per (sorted position p, o, i): the thread at the first
/// position of a run of equal rows sums the run's gradients in index
/// order and writes the row's element; the others have nothing to do.
template <typename T>
__global__ void gatherGradKernel(const uint64_t *keys, const int64_t *positions,
                                 const T *dOut, T *dData, int64_t outer,
                                 int64_t size, int64_t inner, int64_t count) {
  int64_t total = count * outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = t % inner, po = t / inner;
    int64_t o = po % outer, p = po / outer;
    uint64_t row = keys[p];
    if (row == static_cast<uint64_t>(size) || (p > 0 && keys[p - 1] == row))
      continue;
    T acc = zeroOf(T());
    for (int64_t q = p; q < count && keys[q] == row; ++q)
      addTo(acc, dOut[(o * count + positions[q]) * inner + i]);
    dData[(o * size + static_cast<int64_t>(row)) * inner + i] = acc;
  }
}

size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Bits the sort looks at: enough for keys up to `size` (the sentinel).
int keyBits(int64_t size) {
  int bits = 1;
  while (bits < 63 && (uint64_t(1) << bits) <= static_cast<uint64_t>(size))
    ++bits;
  return bits;
}

size_t sortBytes(int64_t count, int64_t size) {
  size_t bytes = 0;
  CLEAVE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const uint64_t *>(nullptr),
      static_cast<uint64_t *>(nullptr), static_cast<const int64_t *>(nullptr),
      static_cast<int64_t *>(nullptr), count, 0, keyBits(size)));
  return bytes;
}

/// The workspace: keys and positions before and after the sort, then the
/// sort's own temporary storage.
struct SortBuffers {
  uint64_t *keys, *sortedKeys;
  int64_t *positions, *sortedPositions;
  void *temp;
  size_t tempBytes;
};

SortBuffers carve(void *workspace, int64_t count, int64_t size) {
  char *p = static_cast<char *>(workspace);
  size_t array = alignUp(sizeof(uint64_t) * count);
  SortBuffers b;
  b.keys = reinterpret_cast<uint64_t *>(p);
  b.sortedKeys = reinterpret_cast<uint64_t *>(p + array);
  b.positions = reinterpret_cast<int64_t *>(p + 2 * array);
  b.sortedPositions = reinterpret_cast<int64_t *>(p + 3 * array);
  b.temp = p + 4 * array;
  b.tempBytes = sortBytes(count, size);
  return b;
}

} // namespace

void launchGather(const float *data, const int64_t *indices, float *out,
                  int64_t outer, int64_t size, int64_t inner, int64_t count,
                  cudaStream_t stream) {
  int64_t total = outer * count * inner;
  if (total <= 0)
    return;
  if (vectorizable(inner, data, out)) {
    int64_t vectors = inner / 4;
    gatherKernel<<<blocksFor(total / 4), 256, 0, stream>>>(
        reinterpret_cast<const float4 *>(data), indices,
        reinterpret_cast<float4 *>(out), outer, size, vectors, count);
  } else {
    gatherKernel<<<blocksFor(total), 256, 0, stream>>>(
        data, indices, out, outer, size, inner, count);
  }
  CLEAVE_CUDA_LAUNCHED("gatherKernel");
}

size_t gatherGradWorkspaceBytes(int64_t count, int64_t size) {
  if (count <= 0)
    return 0;
  return 4 * alignUp(sizeof(uint64_t) * count) + sortBytes(count, size);
}

void launchGatherGrad(const int64_t *indices, const float *dOut, float *dData,
                      int64_t outer, int64_t size, int64_t inner, int64_t count,
                      void *workspace, cudaStream_t stream) {
  int64_t tableElements = outer * size * inner;
  if (tableElements <= 0)
    return;
  // Rows no index names keep these zeros; every other element is written
  // once by the kernel below.
  CLEAVE_CUDA_CHECK(
      cudaMemsetAsync(dData, 0, sizeof(float) * tableElements, stream));
  if (count <= 0)
    return;
  SortBuffers b = carve(workspace, count, size);
  gatherKeysKernel<<<blocksFor(count), 256, 0, stream>>>(indices, count, size,
                                                         b.keys, b.positions);
  CLEAVE_CUDA_LAUNCHED("gatherKeysKernel");
  CLEAVE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      b.temp, b.tempBytes, b.keys, b.sortedKeys, b.positions, b.sortedPositions,
      count, 0, keyBits(size), stream));
  int64_t total = count * outer * inner;
  if (vectorizable(inner, dOut, dData)) {
    gatherGradKernel<<<blocksFor(total / 4), 256, 0, stream>>>(
        b.sortedKeys, b.sortedPositions, reinterpret_cast<const float4 *>(dOut),
        reinterpret_cast<float4 *>(dData), outer, size, inner / 4, count);
  } else {
    gatherGradKernel<<<blocksFor(total), 256, 0, stream>>>(
        b.sortedKeys, b.sortedPositions, dOut, dData, outer, size, inner,
        count);
  }
  CLEAVE_CUDA_LAUNCHED("gatherGradKernel");
}

} // namespace cleave::cuda
