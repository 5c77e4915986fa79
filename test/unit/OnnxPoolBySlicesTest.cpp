//===- OnnxPoolBySlicesTest.cpp - Pooling by slices against the pool ops --===//
//
// MaxPool and AveragePool over 3-D inputs import as a fold over strided
// slices (OnnxPoolBySlices.cpp), 2-D ones as graph.max_pool2d and
// graph.avg_pool2d. A 2-D pooling run as 3-D with a depth of 1 must give
// the 2-D op's values exactly, for every padding, stride and rounding
// rule ONNX has.
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

#include <string>

using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

struct Pool {
  std::vector<int64_t> kernel, strides, pads; // 2-D: [t, l, b, r]
  std::string autoPad = "NOTSET";
  int64_t ceil = 0, includePad = 0;
};

/// `op` of `p` over x [2, 3, 7, 6], as 2-D (`depth` false) or as 3-D over
/// [2, 3, 1, 7, 6]; the result's values.
std::vector<float> pool(const char *op, const Pool &p, bool depth,
                        const k::Tensor &x) {
  ModelBuilder m;
  std::vector<int64_t> shape = {2, 3, 7, 6};
  if (depth)
    shape.insert(shape.begin() + 2, 1);
  m.input("x", kFloat, shape);
  onnx::NodeProto &n = m.node(op, "pool", {"x"}, {"y"});
  auto lift = [&](std::vector<int64_t> v, int64_t fill) {
    if (depth)
      v.insert(v.begin(), fill);
    return v;
  };
  ModelBuilder::intsAttr(n, "kernel_shape", lift(p.kernel, 1));
  ModelBuilder::intsAttr(n, "strides", lift(p.strides, 1));
  if (p.autoPad != "NOTSET") {
    ModelBuilder::stringAttr(n, "auto_pad", p.autoPad.c_str());
  } else {
    std::vector<int64_t> pads = p.pads;
    if (depth) // [d_b, t, l, d_e, b, r]
      pads = {0, p.pads[0], p.pads[1], 0, p.pads[2], p.pads[3]};
    ModelBuilder::intsAttr(n, "pads", pads);
  }
  ModelBuilder::intAttr(n, "ceil_mode", p.ceil);
  if (std::string(op) == "AveragePool")
    ModelBuilder::intAttr(n, "count_include_pad", p.includePad);
  m.output("y", depth ? 5 : 4);
  k::Tensor input = x;
  if (depth)
    input = k::Tensor({2, 3, 1, 7, 6}, x.values());
  std::vector<k::Tensor> out = runWithX(m, input);
  return out.empty() ? std::vector<float>() : out[0].values();
}

TEST(OnnxPoolBySlices, MatchTheTwoDimensionalPoolOps) {
  k::Tensor x({2, 3, 7, 6});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x[i] = float((i * 37) % 23) - 11.0f;
  const std::vector<Pool> pools = {
      {{3, 3}, {2, 2}, {1, 1, 1, 1}},
      {{3, 2}, {2, 1}, {0, 1, 1, 0}, "NOTSET", /*ceil=*/1},
      {{3, 3}, {2, 2}, {}, "SAME_UPPER"},
      {{2, 2}, {2, 2}, {}, "SAME_LOWER"},
      {{3, 3}, {2, 2}, {1, 1, 1, 1}, "NOTSET", 0, /*includePad=*/1},
      // ceil_mode adds a last row that starts inside the input (ONNX 1.12's
      // shape inference and the PyTorch rule the converters follow agree
      // only where no window would start in the end padding).
      {{2, 3}, {2, 2}, {0, 0, 0, 1}, "NOTSET", 1, 1},
  };
  for (const char *op : {"MaxPool", "AveragePool"})
    for (size_t i = 0; i < pools.size(); ++i) {
      SCOPED_TRACE(std::string(op) + " case " + std::to_string(i));
      std::vector<float> flat = pool(op, pools[i], false, x);
      std::vector<float> sliced = pool(op, pools[i], true, x);
      ASSERT_FALSE(flat.empty());
      ASSERT_EQ(flat.size(), sliced.size());
      for (size_t e = 0; e < flat.size(); ++e)
        EXPECT_NEAR(sliced[e], flat[e], 1e-5f * (1 + std::abs(flat[e])))
            << "element " << e;
    }
}

TEST(OnnxPoolBySlices, CeilModeDropsAWindowStartingInThePadding) {
  // Rows: (7 + 1 + 1 - 2) / 3 rounds up to a 4th window starting at row 9,
  // past the input and its top padding (8): dropped, as PyTorch and ONNX
  // Runtime do (libonnx 1.12's shape inference would keep it, so the
  // import does not cross-check against it here). Columns likewise.
  k::Tensor x({2, 3, 7, 6});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x[i] = float((i * 13) % 17);
  Pool p{{2, 3}, {3, 2}, {1, 0, 1, 2}, "NOTSET", 1, 1};
  for (const char *op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    std::vector<float> flat = pool(op, p, false, x);
    std::vector<float> sliced = pool(op, p, true, x);
    ASSERT_EQ(flat.size(), size_t(2 * 3 * 3 * 3));
    ASSERT_EQ(sliced.size(), flat.size());
    for (size_t e = 0; e < flat.size(); ++e)
      EXPECT_NEAR(sliced[e], flat[e], 1e-5f * (1 + std::abs(flat[e]))) << e;
  }
}

} // namespace
