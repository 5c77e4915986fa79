//===- LossOpsTest.cpp - cross_entropy and its gradient -------------------===//
//
// Class counts cover one warp per row (up to 1024) and one block per row
// (a vocabulary); labels include ignored rows, a custom ignore_index and
// rows that are all ignored. The CPU sums a row's exponentials
// sequentially, the GPU in a tree, hence rtol 2e-5 on long rows.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

/// n labels in [0, classes), every `ignoreEvery`-th one `ignoreIndex`.
std::vector<int64_t> labels(int64_t n, int64_t classes, uint64_t seed,
                            int64_t ignoreEvery = 0,
                            int64_t ignoreIndex = -100) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = ignoreEvery && i % ignoreEvery == ignoreEvery - 1
               ? ignoreIndex
               : static_cast<int64_t>(rng() % classes);
  return v;
}

void expectLossAndGradMatch(std::vector<int64_t> batch, int64_t classes,
                            const std::vector<int64_t> &ids,
                            int64_t ignoreIndex, double rtol, uint64_t seed) {
  std::vector<int64_t> logits = batch;
  logits.push_back(classes);
  OpCase t("graph.cross_entropy");
  t.f32(logits, seed, -5.0f, 5.0f);
  t.i64(batch, ids);
  t.output({});
  t.setInt("ignore_index", ignoreIndex);
  t.expectMatch(rtol, 1e-6);
  OpCase g("graph.cross_entropy_grad");
  g.f32(logits, seed, -5.0f, 5.0f);
  g.i64(batch, ids);
  g.f32({}, std::vector<float>{1.7f});
  g.output(logits);
  g.setInt("ignore_index", ignoreIndex);
  g.expectMatch(rtol, 1e-9);
}

} // namespace

TEST_F(CudaOps, CrossEntropyFewClasses) {
  // One warp per row; every fifth label ignored (the default -100).
  expectLossAndGradMatch({4, 6}, 10, labels(24, 10, 1, 5), -100, 1e-5, 2);
  // Odd class count, no ignored label, ignore_index left at its default.
  OpCase t("graph.cross_entropy");
  t.f32({7, 33}, 3, -5.0f, 5.0f);
  t.i64({7}, labels(7, 33, 4));
  t.output({});
  t.expectMatch();
}

TEST_F(CudaOps, CrossEntropyVocabularyRows) {
  for (int64_t classes : {1025, 5000, 40000}) {
    SCOPED_TRACE("classes " + std::to_string(classes));
    int64_t rows = classes > 5000 ? 2 : 9;
    expectLossAndGradMatch({rows}, classes, labels(rows, classes, classes, 4),
                           -100, 2e-5, classes + 1);
  }
}

TEST_F(CudaOps, CrossEntropyCustomIgnoreIndex) {
  // Label 3 is ignored; so is every row whose label drew a 3.
  std::vector<int64_t> ids = labels(30, 8, 5, 3, 3);
  expectLossAndGradMatch({5, 6}, 8, ids, 3, 1e-5, 6);
}

TEST_F(CudaOps, CrossEntropyAllLabelsIgnored) {
  // The loss is 0 (not 0/0) and so is every gradient.
  std::vector<int64_t> ids(12, -100);
  expectLossAndGradMatch({3, 4}, 50, ids, -100, 1e-5, 7);
  expectLossAndGradMatch({2}, 3000, {7, 7}, 7, 1e-5, 8);
}
