//===- ThreadsTest.cpp - Threaded kernels give the same bits --------------===//
//
// The threaded kernels (src/Parallel.h) on 1 thread and on several must
// agree exactly: outputs split in static chunks, sums over rows added in
// fixed blocks. Shapes large enough that every kernel here does thread.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/FlashAttention.h"
#include "cleave/runtime/kernels/Loss.h"
#include "cleave/runtime/kernels/Normalization.h"
#include "cleave/runtime/kernels/Optimizer.h"
#include "cleave/runtime/kernels/Threads.h"

#include "GradCheck.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

/// Runs `kernel` on `threads` threads and returns its outputs' bytes.
std::vector<char> outputsOn(int threads,
                            const std::function<std::vector<Tensor>()> &kernel) {
  int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::vector<Tensor> outs = kernel();
  omp_set_num_threads(before);
  std::vector<char> bytes;
  for (const Tensor &t : outs) {
    const char *p = reinterpret_cast<const char *>(t.data());
    bytes.insert(bytes.end(), p, p + t.numElements() * sizeof(float));
  }
  return bytes;
}

void expectSameOnAnyThreads(
    const char *name, const std::function<std::vector<Tensor>()> &kernel) {
  std::vector<char> one = outputsOn(1, kernel);
  for (int threads : {2, 3, 7})
    EXPECT_TRUE(outputsOn(threads, kernel) == one)
        << name << " differs on " << threads << " threads";
}

TEST(Threads, KernelsGiveTheSameBitsOnAnyNumberOfThreads) {
  Tensor x = randomTensor({300, 512}, 1), dy = randomTensor({300, 512}, 2);
  Tensor scale = randomTensor({512}, 3), bias = randomTensor({512}, 4);
  expectSameOnAnyThreads("layerNorm", [&] {
    Tensor y({300, 512}, 0.0f);
    layerNorm(x, scale, bias, 1, 1e-5, y);
    return std::vector<Tensor>{y};
  });
  expectSameOnAnyThreads("layerNormBackward", [&] {
    Tensor dx({300, 512}, 0.0f), ds({512}, 0.0f), db({512}, 0.0f);
    layerNormBackward(x, scale, 1, 1e-5, dy, dx, ds, db);
    return std::vector<Tensor>{dx, ds, db};
  });
  expectSameOnAnyThreads("rmsNormBackward", [&] {
    Tensor dx({300, 512}, 0.0f), ds({512}, 0.0f);
    rmsNormBackward(x, scale, 1, 1e-6, dy, dx, ds);
    return std::vector<Tensor>{dx, ds};
  });
  IndexTensor labels({300});
  for (int64_t r = 0; r < 300; ++r)
    labels[r] = r % 7 == 3 ? -100 : (r * 37) % 512;
  expectSameOnAnyThreads("crossEntropy", [&] {
    Tensor loss({}, 0.0f), dLogits({300, 512}, 0.0f), one({}, 1.0f);
    crossEntropy(x, labels.ref(), -100, loss);
    crossEntropyBackward(x, labels.ref(), -100, one, dLogits);
    return std::vector<Tensor>{loss, dLogits};
  });
  expectSameOnAnyThreads("adamwStep", [&] {
    Tensor p = randomTensor({300, 512}, 5), m({300, 512}, 0.1f),
           v({300, 512}, 0.2f);
    adamwStep(p, dy, m, v, 3, AdamWOptions{});
    return std::vector<Tensor>{p, m, v};
  });
  // Grouped-query attention: 4 query heads on 2 key heads, a mask.
  Tensor q = randomTensor({2, 4, 40, 16}, 6), k = randomTensor({2, 2, 40, 16}, 7),
         val = randomTensor({2, 2, 40, 16}, 8), g = randomTensor(q.shape(), 9);
  Tensor mask = randomTensor({2, 1, 40, 40}, 10);
  expectSameOnAnyThreads("flashAttention", [&] {
    FlashAttentionOptions o;
    o.scale = 0.25f;
    o.causal = true;
    o.blockQueries = o.blockKeys = 16;
    o.mask = attentionMask(mask.data(), mask.shape(), q.shape(), 40);
    Tensor out(q.shape(), 0.0f), lse({2, 4, 40}, 0.0f);
    flashAttention(q, k, val, o, out, lse);
    Tensor dq(q.shape(), 0.0f), dk(k.shape(), 0.0f), dv(k.shape(), 0.0f);
    flashAttentionBackward(q, k, val, out, lse, g, o, dq, dk, dv);
    return std::vector<Tensor>{out, lse, dq, dk, dv};
  });
}

TEST(Threads, ARankTakesItsShareOfTheCoresUnlessTold) {
  const char *omp = std::getenv("OMP_NUM_THREADS");
  const char *blas = std::getenv("OPENBLAS_NUM_THREADS");
  std::string ompSaved = omp ? omp : "", blasSaved = blas ? blas : "";
  int before = omp_get_max_threads();
  unsetenv("OMP_NUM_THREADS");
  unsetenv("OPENBLAS_NUM_THREADS");
  int all = adoptRankThreads(1);
  EXPECT_GE(all, 1);
  EXPECT_EQ(adoptRankThreads(all * 4), 1); // more ranks than cores
  EXPECT_EQ(kernelThreads(), 1);
  setenv("OPENBLAS_NUM_THREADS", "3", 1);
  EXPECT_EQ(adoptRankThreads(1), 3);
  EXPECT_EQ(kernelThreads(), 3);
  if (omp)
    setenv("OMP_NUM_THREADS", ompSaved.c_str(), 1);
  if (blas)
    setenv("OPENBLAS_NUM_THREADS", blasSaved.c_str(), 1);
  else
    unsetenv("OPENBLAS_NUM_THREADS");
  omp_set_num_threads(before);
}

} // namespace
