//===- NormalizationOpsTest.cpp - layer_norm, rms_norm and their grads ----===//
//
// Row lengths cover every launch shape of the kernels: one warp per row
// (up to 512), blocks holding the row in registers (up to 8192) and blocks
// re-reading it (beyond). The parameter gradients are column sums over
// all rows, summed in another order than the CPU's, hence their looser
// tolerance; cases with more than 64 rows take the two-pass reduction.
//
//===----------------------------------------------------------------------===//

#include "CudaOpCase.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace cleave::test;

namespace {

const std::vector<int64_t> kRowLengths = {
    1, 31, 64, 100, 200, 500, 513, 1000, 1500, 4096, 7000, 9000, 20000};

/// Rows of the row-length sweeps: 3 rows of n, at most ~60k elements.
int64_t rowsFor(int64_t n) { return n > 4096 ? 2 : 3; }

} // namespace

TEST_F(CudaOps, LayerNormWithScaleAndBias) {
  OpCase t("graph.layer_norm");
  t.f32({4, 7, 96}, 1);
  t.f32({96}, 2);
  t.f32({96}, 3);
  t.output({4, 7, 96});
  t.setInt("axis", -1).setFloat("epsilon", 1e-5);
  t.expectMatch();
}

TEST_F(CudaOps, LayerNormOverTrailingAxesWithOptionalParameters) {
  // Scale only (bias left out), over the last two axes.
  OpCase t("graph.layer_norm");
  t.f32({3, 5, 6, 8}, 4, -2.0f, 3.0f);
  t.f32({6, 8}, 5);
  t.output({3, 5, 6, 8});
  t.setInt("axis", 2).setFloat("epsilon", 1e-6);
  t.expectMatch();
  // Bias only: the scale operand is -1.
  OpCase u("graph.layer_norm");
  u.f32({5, 33}, 6);
  u.absentInput();
  u.f32({33}, 7);
  u.output({5, 33});
  u.setInt("axis", -1).setFloat("epsilon", 1e-5);
  u.expectMatch();
  // Neither.
  OpCase v("graph.layer_norm");
  v.f32({2, 3, 17}, 8);
  v.output({2, 3, 17});
  v.setInt("axis", 1).setFloat("epsilon", 1e-5);
  v.expectMatch();
}

TEST_F(CudaOps, LayerNormEveryRowLength) {
  for (int64_t n : kRowLengths) {
    SCOPED_TRACE("row length " + std::to_string(n));
    OpCase t("graph.layer_norm");
    t.f32({rowsFor(n), n}, 10 + n, -1.0f, 2.0f);
    t.f32({n}, 11);
    t.f32({n}, 12);
    t.output({rowsFor(n), n});
    t.setInt("axis", -1).setFloat("epsilon", 1e-5);
    t.expectMatch();
  }
}

TEST_F(CudaOps, RmsNormWithAndWithoutScale) {
  OpCase t("graph.rms_norm");
  t.f32({6, 5, 48}, 13);
  t.f32({48}, 14);
  t.output({6, 5, 48});
  t.setInt("axis", -1).setFloat("epsilon", 1e-6);
  t.expectMatch();
  OpCase u("graph.rms_norm");
  u.f32({4, 3, 7}, 15);
  u.output({4, 3, 7});
  u.setInt("axis", 1).setFloat("epsilon", 1e-5);
  u.expectMatch();
}

TEST_F(CudaOps, RmsNormEveryRowLength) {
  for (int64_t n : kRowLengths) {
    SCOPED_TRACE("row length " + std::to_string(n));
    OpCase t("graph.rms_norm");
    t.f32({rowsFor(n), n}, 20 + n);
    t.f32({n}, 21);
    t.output({rowsFor(n), n});
    t.setInt("axis", -1).setFloat("epsilon", 1e-5);
    t.expectMatch();
  }
}

TEST_F(CudaOps, LayerNormGradInput) {
  // dIn alone (the parameter gradients not wanted), with and without the
  // scale, over every row length.
  for (int64_t n : kRowLengths) {
    SCOPED_TRACE("row length " + std::to_string(n));
    for (bool withScale : {true, false}) {
      OpCase t("graph.layer_norm_grad");
      t.f32({rowsFor(n), n}, 30 + n, -1.0f, 2.0f);
      t.f32({rowsFor(n), n}, 31);
      if (withScale)
        t.f32({n}, 32);
      t.output({rowsFor(n), n});
      t.absentOutput();
      t.absentOutput();
      t.setInt("axis", -1).setFloat("epsilon", 1e-5);
      t.expectMatch(1e-5, 1e-6);
    }
  }
}

TEST_F(CudaOps, LayerNormGradAllOutputs) {
  // 40 rows: one chunk of the column sums; 300 rows: five, added by the
  // second pass.
  for (int64_t rows : {40, 300}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    OpCase t("graph.layer_norm_grad");
    t.f32({rows, 3, 24}, 40 + rows);
    t.f32({rows, 3, 24}, 41);
    t.f32({3, 24}, 42);
    t.output({rows, 3, 24});
    t.output({3, 24});
    t.output({3, 24});
    t.setInt("axis", 1).setFloat("epsilon", 1e-5);
    t.expectMatch(1e-4, 1e-4);
  }
}

TEST_F(CudaOps, LayerNormGradParametersOnly) {
  // dScale alone, then dBias alone; a row long enough for the block path.
  OpCase t("graph.layer_norm_grad");
  t.f32({70, 1500}, 43);
  t.f32({70, 1500}, 44);
  t.f32({1500}, 45);
  t.absentOutput();
  t.output({1500});
  t.absentOutput();
  t.setInt("axis", -1).setFloat("epsilon", 1e-5);
  t.expectMatch(1e-4, 1e-4);
  OpCase u("graph.layer_norm_grad");
  u.f32({130, 100}, 46);
  u.f32({130, 100}, 47);
  u.absentOutput();
  u.absentOutput();
  u.output({100});
  u.setInt("axis", -1).setFloat("epsilon", 1e-5);
  u.expectMatch(1e-4, 1e-4);
}

TEST_F(CudaOps, RmsNormGradInput) {
  for (int64_t n : kRowLengths) {
    SCOPED_TRACE("row length " + std::to_string(n));
    for (bool withScale : {true, false}) {
      OpCase t("graph.rms_norm_grad");
      t.f32({rowsFor(n), n}, 50 + n);
      t.f32({rowsFor(n), n}, 51);
      if (withScale)
        t.f32({n}, 52);
      t.output({rowsFor(n), n});
      t.absentOutput();
      t.setInt("axis", -1).setFloat("epsilon", 1e-5);
      t.expectMatch(1e-5, 1e-6);
    }
  }
}

TEST_F(CudaOps, RmsNormGradAllOutputs) {
  for (int64_t rows : {9, 200}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    OpCase t("graph.rms_norm_grad");
    t.f32({rows, 4, 130}, 60 + rows);
    t.f32({rows, 4, 130}, 61);
    t.f32({130}, 62);
    t.output({rows, 4, 130});
    t.output({130});
    t.setInt("axis", -1).setFloat("epsilon", 1e-6);
    t.expectMatch(1e-4, 1e-4);
  }
  // dScale alone, without a forward scale, over rows re-read per pass.
  OpCase u("graph.rms_norm_grad");
  u.f32({50, 9000}, 63);
  u.f32({50, 9000}, 64);
  u.absentOutput();
  u.output({9000});
  u.setInt("axis", 1).setFloat("epsilon", 1e-5);
  u.expectMatch(1e-4, 1e-4);
}
