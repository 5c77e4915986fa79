//===- ThreadsTest.cpp - Threaded kernels give the same bits --------------===//
//
// The threaded kernels (src/Parallel.h) on 1 thread and on several must
// agree exactly: outputs split in static chunks, sums over rows added in
// fixed blocks. Shapes large enough that every kernel here does thread.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/kernels/Attention.h"
#include "cleave/runtime/kernels/DataMovement.h"
#include "cleave/runtime/kernels/Elementwise.h"
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


// The element-wise, softmax and data-movement kernels split their work by
// elements, rows or columns (a broadcast walk cut mid-row, a transpose's
// rows, an embedding gradient's columns): every split gives the one-thread
// result, and that result is the operation's.
TEST(Threads, ElementwiseAndMovementKernelsSplitAnywhere) {
  Tensor a = randomTensor({4, 60, 256}, 11), col = randomTensor({60, 1}, 12);
  Tensor row = randomTensor({1, 60, 256}, 13), g = randomTensor({4, 60, 256}, 14);
  expectSameOnAnyThreads("binary (broadcast)", [&] {
    Tensor sum({4, 60, 256}, 0.0f), prod({4, 60, 256}, 0.0f);
    binary(BinaryOp::Add, a, col, sum);
    binary(BinaryOp::Mul, row, a, prod);
    return std::vector<Tensor>{sum, prod};
  });
  expectSameOnAnyThreads("binaryBackward", [&] {
    Tensor da({4, 60, 256}, 0.0f), drow({1, 60, 256}, 0.0f),
        dcol({60, 1}, 0.0f), da2({4, 60, 256}, 0.0f);
    binaryBackward(BinaryOp::Mul, a, row, g, da, drow);
    binaryBackward(BinaryOp::Div, a, col, g, da2, dcol);
    return std::vector<Tensor>{da, drow, dcol, da2};
  });
  expectSameOnAnyThreads("unary", [&] {
    Tensor y({4, 60, 256}, 0.0f), dx({4, 60, 256}, 0.0f);
    unary(UnaryOp::GeluTanh, a, y);
    unaryBackward(UnaryOp::Silu, a, g, dx);
    return std::vector<Tensor>{y, dx};
  });
  Tensor scores = randomTensor({2, 4, 64, 64}, 15),
         dScores = randomTensor({2, 4, 64, 64}, 16);
  Tensor middle = randomTensor({8, 50, 100}, 17);
  expectSameOnAnyThreads("softmax", [&] {
    Tensor causal(scores.shape(), 0.0f), inner(middle.shape(), 0.0f),
        dIn(scores.shape(), 0.0f);
    softmax(scores, 3, /*causal=*/true, causal);
    softmax(middle, 1, /*causal=*/false, inner);
    softmaxBackward(causal, dScores, 3, dIn);
    return std::vector<Tensor>{causal, inner, dIn};
  });
  Tensor heads = randomTensor({8, 64, 4, 32}, 18);
  IndexTensor ids({600});
  for (int64_t i = 0; i < 600; ++i)
    ids[i] = (i * 7919) % 1000; // repeats: rows read twice add up
  Tensor table = randomTensor({1000, 64}, 19), dRows = randomTensor({600, 64}, 20);
  expectSameOnAnyThreads("transpose and gather", [&] {
    Tensor t({8, 4, 64, 32}, 0.0f), rows({600, 64}, 0.0f),
        dTable({1000, 64}, 0.0f);
    transpose(heads, {0, 2, 1, 3}, t);
    gather(table, ids.ref(), 0, rows);
    gatherBackward(ids.ref(), 0, dRows, dTable);
    return std::vector<Tensor>{t, rows, dTable};
  });

  // Split over 3 threads, the results are the operations'.
  int before = omp_get_max_threads();
  omp_set_num_threads(3);
  Tensor sum({4, 60, 256}, 0.0f), t({8, 4, 64, 32}, 0.0f),
      dTable({1000, 64}, 0.0f);
  binary(BinaryOp::Add, a, col, sum);
  transpose(heads, {0, 2, 1, 3}, t);
  gatherBackward(ids.ref(), 0, dRows, dTable);
  omp_set_num_threads(before);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t r = 0; r < 60; ++r)
      for (int64_t i = 0; i < 256; ++i)
        ASSERT_EQ(sum.data()[(b * 60 + r) * 256 + i],
                  a.data()[(b * 60 + r) * 256 + i] + col.data()[r]);
  for (int64_t b = 0; b < 8; ++b)
    for (int64_t s = 0; s < 64; ++s)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t d = 0; d < 32; ++d)
          ASSERT_EQ(t.data()[((b * 4 + h) * 64 + s) * 32 + d],
                    heads.data()[((b * 64 + s) * 4 + h) * 32 + d]);
  std::vector<float> expect(1000 * 64, 0.0f);
  for (int64_t i = 0; i < 600; ++i)
    for (int64_t d = 0; d < 64; ++d)
      expect[ids[i] * 64 + d] += dRows.data()[i * 64 + d];
  for (int64_t i = 0; i < 1000 * 64; ++i)
    ASSERT_EQ(dTable.data()[i], expect[i]);
}

} // namespace
