//===- ConvTest.cpp - conv2d and pooling ----------------------------------===//

#include "cleave/runtime/kernels/Conv.h"

#include "GradCheck.h"

#include <limits>

using namespace cleave::kernels;
using namespace cleave::kernels::test;

namespace {

Tensor naiveConv(const Tensor &x, const Tensor &w, const Tensor *bias,
                 const Conv2dOptions &o) {
  Shape os = conv2dShape(x.shape(), w.shape(), o);
  Tensor out = poisoned(os);
  int64_t c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  int64_t og = os[1] / o.groups;
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape idx = unravel(i, os); // n, oc, y, x
    int64_t g = idx[1] / og;
    double sum = bias ? (*bias)[idx[1]] : 0.0;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t ki = 0; ki < kh; ++ki)
        for (int64_t kj = 0; kj < kw; ++kj) {
          int64_t iy =
              idx[2] * o.strides[0] - o.padding[0] + ki * o.dilations[0];
          int64_t ix =
              idx[3] * o.strides[1] - o.padding[1] + kj * o.dilations[1];
          if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
            continue;
          sum += double(x[((idx[0] * c + g * cg + ci) * h + iy) * wd + ix]) *
                 w[((idx[1] * cg + ci) * kh + ki) * kw + kj];
        }
    out[i] = float(sum);
  }
  return out;
}

struct ConvCase {
  Shape input, filter;
  Conv2dOptions options;
};

const ConvCase kConvCases[] = {
    // Plain 3x3 with symmetric padding.
    {{2, 3, 5, 5}, {4, 3, 3, 3}, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}},
    // Strided, asymmetric padding, dilated, grouped.
    {{1, 4, 7, 6}, {6, 2, 3, 2}, {{2, 1}, {1, 0, 2, 1}, {2, 2}, 2}},
    // Depthwise with stride 2.
    {{2, 3, 6, 6}, {3, 1, 3, 3}, {{2, 2}, {1, 1, 1, 1}, {1, 1}, 3}},
    // 1x1, stride 1, no padding: the product needs no im2col.
    {{2, 4, 3, 3}, {6, 2, 1, 1}, {{1, 1}, {0, 0, 0, 0}, {1, 1}, 2}},
    // 1x1 with stride 2 (a ResNet downsampling shortcut) needs im2col.
    {{1, 4, 5, 5}, {3, 4, 1, 1}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}},
};

TEST(Conv2d, MatchesDirectConvolution) {
  for (const ConvCase &c : kConvCases) {
    Tensor x = randomTensor(c.input, 1), w = randomTensor(c.filter, 2);
    Tensor bias = randomTensor({c.filter[0]}, 3);
    Tensor out = poisoned(conv2dShape(c.input, c.filter, c.options));
    conv2d(x, w, bias, c.options, out);
    EXPECT_TRUE(allClose(out, naiveConv(x, w, &bias, c.options), 1e-5, 1e-5))
        << shapeString(c.input) << " * " << shapeString(c.filter);
    // With a caller's workspace and without bias.
    std::vector<float> ws(conv2dWorkspaceSize(c.input, c.filter, c.options));
    conv2d(x, w, {}, c.options, out, ws.data());
    EXPECT_TRUE(allClose(out, naiveConv(x, w, nullptr, c.options), 1e-5, 1e-5));
  }
  EXPECT_EQ(conv2dShape({1, 3, 224, 224}, {64, 3, 7, 7},
                        {{2, 2}, {3, 3, 3, 3}, {1, 1}, 1}),
            (Shape{1, 64, 112, 112}));
  EXPECT_THROW(conv2dShape({1, 3, 8, 8}, {4, 2, 3, 3}, {}),
               std::invalid_argument);
}

TEST(Conv2d, GradientsMatchFiniteDifferences) {
  for (const ConvCase &c : kConvCases) {
    Tensor x = randomTensor(c.input, 4), w = randomTensor(c.filter, 5);
    Tensor bias = randomTensor({c.filter[0]}, 6);
    Tensor out = poisoned(conv2dShape(c.input, c.filter, c.options));
    GradCheck gc([&] { conv2d(x, w, bias, c.options, out); }, {&out});
    Tensor dx = poisoned(x.shape()), dw = poisoned(w.shape()),
           db = poisoned(bias.shape());
    conv2dBackward(x, w, c.options, gc.outGrad(), dx, dw, db);
    EXPECT_TRUE(gc.check(x, dx)) << "input " << shapeString(c.input);
    EXPECT_TRUE(gc.check(w, dw)) << "filter " << shapeString(c.filter);
    EXPECT_TRUE(gc.check(bias, db)) << "bias " << shapeString(c.filter);
    // The single-gradient forms of graph.conv2d_input_grad and
    // conv2d_filter_grad agree.
    Tensor dx2 = poisoned(x.shape()), dw2 = poisoned(w.shape());
    conv2dInputGrad(gc.outGrad(), w, c.options, dx2);
    conv2dFilterGrad(x, gc.outGrad(), c.options, dw2);
    EXPECT_EQ(dx2.values(), dx.values());
    EXPECT_EQ(dw2.values(), dw.values());
  }
}

Tensor naivePool(const Tensor &x, const Pool2dOptions &o, bool max) {
  Shape os = pool2dShape(x.shape(), o);
  Tensor out = poisoned(os);
  int64_t h = x.shape()[2], w = x.shape()[3];
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape idx = unravel(i, os);
    double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
    int count = 0;
    for (int64_t ki = 0; ki < o.kernel[0]; ++ki)
      for (int64_t kj = 0; kj < o.kernel[1]; ++kj) {
        int64_t iy = idx[2] * o.strides[0] - o.padding[0] + ki;
        int64_t ix = idx[3] * o.strides[1] - o.padding[1] + kj;
        if (iy < 0 || iy >= h || ix < 0 || ix >= w)
          continue;
        double v = x[((idx[0] * x.shape()[1] + idx[1]) * h + iy) * w + ix];
        acc = max ? std::max(acc, v) : acc + v;
        ++count;
      }
    out[i] = float(max ? acc : acc / count);
  }
  return out;
}

const Pool2dOptions kPoolCases[] = {
    {{2, 2}, {2, 2}, {0, 0, 0, 0}},
    {{3, 3}, {2, 2}, {1, 1, 1, 1}},
    {{3, 2}, {1, 2}, {0, 1, 2, 0}},
};

TEST(Pool2d, MatchesReferenceExcludingPadding) {
  Tensor x = randomTensor({2, 3, 5, 6}, 7);
  for (const Pool2dOptions &o : kPoolCases) {
    Tensor out = poisoned(pool2dShape(x.shape(), o));
    maxPool2d(x, o, out);
    EXPECT_TRUE(allClose(out, naivePool(x, o, true)));
    avgPool2d(x, o, out);
    EXPECT_TRUE(allClose(out, naivePool(x, o, false)));
  }
  // A corner window of a padded 3x3 average covers 4 elements, not 9.
  Tensor ones({1, 1, 2, 2}, 1.0f), out = poisoned({1, 1, 1, 1});
  avgPool2d(ones, {{3, 3}, {2, 2}, {1, 1, 0, 0}}, out);
  EXPECT_EQ(out[0], 1.0f);
}

TEST(Pool2d, GradientsMatchFiniteDifferences) {
  Tensor x = randomTensor({2, 2, 5, 6}, 8);
  for (const Pool2dOptions &o : kPoolCases) {
    Tensor out = poisoned(pool2dShape(x.shape(), o)), dx = poisoned(x.shape());
    GradCheck gm([&] { maxPool2d(x, o, out); }, {&out});
    maxPool2dBackward(x, o, gm.outGrad(), dx);
    EXPECT_TRUE(gm.check(x, dx));
    GradCheck ga([&] { avgPool2d(x, o, out); }, {&out});
    avgPool2dBackward(ga.outGrad(), o, dx);
    EXPECT_TRUE(ga.check(x, dx));
  }
}

TEST(Pool2d, MaxGradientGoesToTheFirstMaximum) {
  Tensor x({1, 1, 2, 2}, {3, 3, 3, 1}), dOut({1, 1, 1, 1}, {1.0f});
  Tensor dx = poisoned(x.shape());
  maxPool2dBackward(x, {{2, 2}, {2, 2}, {0, 0, 0, 0}}, dOut, dx);
  EXPECT_EQ(dx.values(), (std::vector<float>{1, 0, 0, 0}));
}

TEST(GlobalAvgPool, AveragesPlanes) {
  Tensor x = randomTensor({2, 3, 4, 5}, 9), out = poisoned({2, 3, 1, 1});
  globalAvgPool(x, out);
  for (int64_t p = 0; p < 6; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < 20; ++i)
      sum += x[p * 20 + i];
    EXPECT_NEAR(out[p], sum / 20, 1e-6);
  }
  Tensor dx = poisoned(x.shape());
  GradCheck gc([&] { globalAvgPool(x, out); }, {&out});
  globalAvgPoolBackward(gc.outGrad(), dx);
  EXPECT_TRUE(gc.check(x, dx));
}

} // namespace
