//===- OnnxVolumeAndRegionTest.cpp - 3-D convolutions, RoiAlign, Det ------===//
//
// Operators the importer writes as other graph ops, checked against direct
// loops over their ONNX definitions: 3-D Conv and ConvTranspose (depth
// taps stacked into 2-D ones, OnnxConv3d.cpp), RoiAlign (bilinear samples
// gathered at run time, OnnxRoiAlign.cpp, the loop after ONNX's reference
// and ONNX Runtime's kernel) and Det (shared cofactor minors). ONNX's node
// tests cover one case each; these cover strides, dilations, pads, groups,
// output padding, both RoiAlign modes and coordinate rules, the adaptive
// sampling ratio, singular matrices and the errors.
//
//===----------------------------------------------------------------------===//

#include "OnnxEvalUtil.h"

#include <cmath>

using namespace cleave;
using namespace cleave::testing;
namespace k = cleave::kernels;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

int64_t product(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Deterministic values in [-1, 1) that differ element to element.
std::vector<float> pattern(int64_t n, int64_t seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = float(((i + seed) * 7919 + seed * 104729) % 2001) / 1000.0f - 1.0f;
  return v;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i])))
        << what << " at " << i;
}

struct Window3 {
  std::vector<int64_t> strides{1, 1, 1}, dilations{1, 1, 1},
      pads{0, 0, 0, 0, 0, 0};
  int64_t group = 1;
  std::vector<int64_t> outputPadding{0, 0, 0};
};

/// Conv over x [N, C, D, H, W] by w [Co, C/g, kD, kH, kW] plus a bias, by
/// its definition.
std::vector<float> convReference(const std::vector<int64_t> &xs,
                                 const std::vector<float> &x,
                                 const std::vector<int64_t> &ws,
                                 const std::vector<float> &w,
                                 const std::vector<float> &b, const Window3 &p,
                                 std::vector<int64_t> &ys) {
  int64_t cg = ws[1], og = ws[0] / p.group;
  ys = {xs[0], ws[0], 0, 0, 0};
  for (int a = 0; a < 3; ++a)
    ys[2 + a] = (xs[2 + a] + p.pads[a] + p.pads[a + 3] -
                 p.dilations[a] * (ws[2 + a] - 1) - 1) /
                    p.strides[a] +
                1;
  std::vector<float> y(product(ys));
  int64_t i = 0;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o)
      for (int64_t d = 0; d < ys[2]; ++d)
        for (int64_t h = 0; h < ys[3]; ++h)
          for (int64_t q = 0; q < ys[4]; ++q, ++i) {
            double sum = b[o];
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    int64_t id =
                        d * p.strides[0] + kd * p.dilations[0] - p.pads[0];
                    int64_t ih =
                        h * p.strides[1] + kh * p.dilations[1] - p.pads[1];
                    int64_t iw =
                        q * p.strides[2] + kw * p.dilations[2] - p.pads[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= xs[2] ||
                        ih >= xs[3] || iw >= xs[4])
                      continue;
                    int64_t ci = (o / og) * cg + c;
                    sum +=
                        double(
                            x[(((n * xs[1] + ci) * xs[2] + id) * xs[3] + ih) *
                                  xs[4] +
                              iw]) *
                        w[(((o * cg + c) * ws[2] + kd) * ws[3] + kh) * ws[4] +
                          kw];
                  }
            y[i] = float(sum);
          }
  return y;
}

/// ConvTranspose over x [N, Ci, D, H, W] by w [Ci, Co/g, kD, kH, kW], by
/// its definition (every input element scattered through the kernel).
std::vector<float> convTransposeReference(const std::vector<int64_t> &xs,
                                          const std::vector<float> &x,
                                          const std::vector<int64_t> &ws,
                                          const std::vector<float> &w,
                                          const Window3 &p,
                                          std::vector<int64_t> &ys) {
  int64_t og = ws[1], cg = xs[1] / p.group;
  ys = {xs[0], og * p.group, 0, 0, 0};
  for (int a = 0; a < 3; ++a)
    ys[2 + a] = p.strides[a] * (xs[2 + a] - 1) + p.outputPadding[a] +
                p.dilations[a] * (ws[2 + a] - 1) + 1 - p.pads[a] -
                p.pads[a + 3];
  std::vector<double> y(product(ys), 0.0);
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t ci = 0; ci < xs[1]; ++ci)
      for (int64_t d = 0; d < xs[2]; ++d)
        for (int64_t h = 0; h < xs[3]; ++h)
          for (int64_t q = 0; q < xs[4]; ++q)
            for (int64_t co = 0; co < og; ++co)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    int64_t od =
                        d * p.strides[0] + kd * p.dilations[0] - p.pads[0];
                    int64_t oh =
                        h * p.strides[1] + kh * p.dilations[1] - p.pads[1];
                    int64_t ow =
                        q * p.strides[2] + kw * p.dilations[2] - p.pads[2];
                    if (od < 0 || oh < 0 || ow < 0 || od >= ys[2] ||
                        oh >= ys[3] || ow >= ys[4])
                      continue;
                    int64_t o = (ci / cg) * og + co;
                    y[(((n * ys[1] + o) * ys[2] + od) * ys[3] + oh) * ys[4] +
                      ow] +=
                        double(x[(((n * xs[1] + ci) * xs[2] + d) * xs[3] + h) *
                                     xs[4] +
                                 q]) *
                        w[(((ci * og + co) * ws[2] + kd) * ws[3] + kh) * ws[4] +
                          kw];
                  }
  return std::vector<float>(y.begin(), y.end());
}

/// `op` (Conv or ConvTranspose) of x by w with `p`, imported and run.
std::vector<float> runVolume(const char *op, const std::vector<int64_t> &xs,
                             const std::vector<float> &x,
                             const std::vector<int64_t> &ws,
                             const std::vector<float> &w,
                             const std::vector<float> &b, const Window3 &p) {
  ModelBuilder m;
  m.input("x", kFloat, xs);
  m.floatValues("w", ws, w);
  bool conv = std::string(op) == "Conv";
  if (!b.empty())
    m.floatValues("b", {int64_t(b.size())}, b);
  onnx::NodeProto &n = b.empty() ? m.node(op, "c", {"x", "w"}, {"y"})
                                 : m.node(op, "c", {"x", "w", "b"}, {"y"});
  ModelBuilder::intsAttr(n, "strides", p.strides);
  ModelBuilder::intsAttr(n, "dilations", p.dilations);
  ModelBuilder::intsAttr(n, "pads", p.pads);
  ModelBuilder::intAttr(n, "group", p.group);
  if (!conv)
    ModelBuilder::intsAttr(n, "output_padding", p.outputPadding);
  m.output("y", 5);
  std::vector<k::Tensor> out = runWithX(m, k::Tensor(xs, x));
  return out.empty() ? std::vector<float>() : out[0].values();
}

TEST(OnnxConv3d, MatchesTheDefinition) {
  std::vector<int64_t> xs = {2, 4, 5, 6, 7}, ws = {6, 2, 3, 2, 3};
  std::vector<float> x = pattern(product(xs), 1), w = pattern(product(ws), 2);
  std::vector<float> b = pattern(6, 3);
  std::vector<Window3> windows(3);
  windows[1].group = 2;
  windows[1].strides = {2, 1, 2};
  windows[1].dilations = {1, 2, 1};
  windows[1].pads = {1, 0, 1, 0, 1, 1};
  windows[2].strides = {3, 2, 1};
  windows[2].pads = {2, 1, 0, 1, 0, 2};
  ws[1] = 4;
  std::vector<float> w4 = pattern(product(ws), 4);
  for (size_t i = 0; i < windows.size(); ++i) {
    const std::vector<float> &filter = windows[i].group == 2 ? w : w4;
    std::vector<int64_t> shape = ws;
    shape[1] = 4 / windows[i].group;
    std::vector<int64_t> ys;
    std::vector<float> want =
        convReference(xs, x, shape, filter, b, windows[i], ys);
    expectClose(runVolume("Conv", xs, x, shape, filter, b, windows[i]), want,
                ("Conv case " + std::to_string(i)).c_str());
  }
}

TEST(OnnxConvTranspose3d, MatchesTheDefinition) {
  std::vector<int64_t> xs = {2, 4, 3, 4, 3}, ws = {4, 3, 3, 2, 3};
  std::vector<float> x = pattern(product(xs), 5), w = pattern(product(ws), 6);
  std::vector<Window3> windows(3);
  windows[1].group = 2;
  windows[1].strides = {2, 2, 1};
  windows[1].dilations = {1, 1, 2};
  windows[1].pads = {1, 0, 0, 0, 1, 1};
  windows[1].outputPadding = {1, 1, 0};
  windows[2].strides = {3, 1, 2};
  windows[2].dilations = {2, 1, 1};
  windows[2].pads = {0, 1, 1, 2, 0, 1};
  windows[2].outputPadding = {2, 0, 1};
  for (size_t i = 0; i < windows.size(); ++i) {
    std::vector<int64_t> ys;
    std::vector<float> want =
        convTransposeReference(xs, x, ws, w, windows[i], ys);
    expectClose(runVolume("ConvTranspose", xs, x, ws, w, {}, windows[i]), want,
                ("ConvTranspose case " + std::to_string(i)).c_str());
  }
}

TEST(OnnxConv3d, RejectsBadFilters) {
  ModelBuilder m;
  m.input("x", kFloat, {1, 2, 3, 4, 4});
  m.floats("w", {3, 2, 2, 2});
  m.node("Conv", "c", {"x", "w"}, {"y"});
  m.output("y", 5);
  expectImportError(m, "must have rank 5", "4-D filter");
  ModelBuilder g;
  g.input("x", kFloat, {1, 3, 3, 4, 4});
  g.floats("w", {4, 3, 2, 2, 2});
  onnx::NodeProto &n = g.node("ConvTranspose", "t", {"x", "w"}, {"y"});
  ModelBuilder::intAttr(n, "group", 2);
  g.output("y", 5);
  expectImportError(g, "C_out / group, kD, kH, kW", "channels not in groups");
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

struct Roi {
  int64_t oh = 3, ow = 2, sampling = 2;
  float scale = 0.5f;
  bool halfPixel = true, max = false;
};

/// RoiAlign of x [N, C, H, W] over rois [R, 4] of images `batch`, as ONNX's
/// reference computes it.
std::vector<float> roiReference(const std::vector<int64_t> &xs,
                                const std::vector<float> &x,
                                const std::vector<float> &rois,
                                const std::vector<int64_t> &batch,
                                const Roi &p) {
  int64_t c = xs[1], h = xs[2], w = xs[3], r = int64_t(batch.size());
  std::vector<float> y(r * c * p.oh * p.ow);
  double off = p.halfPixel ? 0.5 : 0.0;
  for (int64_t i = 0; i < r; ++i) {
    double x0 = rois[i * 4] * p.scale - off,
           y0 = rois[i * 4 + 1] * p.scale - off;
    double rw = rois[i * 4 + 2] * p.scale - off - x0;
    double rh = rois[i * 4 + 3] * p.scale - off - y0;
    if (!p.halfPixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / p.oh, bw = rw / p.ow;
    int64_t gh = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rh / p.oh));
    int64_t gw = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rw / p.ow));
    for (int64_t ch = 0; ch < c; ++ch) {
      const float *plane = &x[(batch[i] * c + ch) * h * w];
      for (int64_t ph = 0; ph < p.oh; ++ph)
        for (int64_t pw = 0; pw < p.ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
              double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
              double v[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > h || xx < -1.0 || xx > w)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = int64_t(yy), xl = int64_t(xx), yh, xh;
                if (yl >= h - 1) {
                  yh = yl = h - 1;
                  yy = double(yl);
                } else {
                  yh = yl + 1;
                }
                if (xl >= w - 1) {
                  xh = xl = w - 1;
                  xx = double(xl);
                } else {
                  xh = xl + 1;
                }
                double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                v[0] = hy * hx * plane[yl * w + xl];
                v[1] = hy * lx * plane[yl * w + xh];
                v[2] = ly * hx * plane[yh * w + xl];
                v[3] = ly * lx * plane[yh * w + xh];
              }
              if (p.max) {
                double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                acc = first ? m : std::max(acc, m);
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
              first = false;
            }
          if (!p.max)
            acc /= double(std::max<int64_t>(gh * gw, 1));
          y[((i * c + ch) * p.oh + ph) * p.ow + pw] = float(acc);
        }
    }
  }
  return y;
}

std::vector<float> runRoiAlign(const std::vector<int64_t> &xs,
                               const std::vector<float> &x,
                               const std::vector<float> &rois,
                               const std::vector<int64_t> &batch,
                               const Roi &p) {
  ModelBuilder m(16);
  m.input("x", kFloat, xs);
  m.floatValues("rois", {int64_t(batch.size()), 4}, rois);
  m.typedInts("batch", onnx::TensorProto::INT64, {int64_t(batch.size())},
              batch);
  onnx::NodeProto &n = m.node("RoiAlign", "roi", {"x", "rois", "batch"}, {"y"});
  ModelBuilder::intAttr(n, "output_height", p.oh);
  ModelBuilder::intAttr(n, "output_width", p.ow);
  ModelBuilder::intAttr(n, "sampling_ratio", p.sampling);
  ModelBuilder::floatAttr(n, "spatial_scale", p.scale);
  ModelBuilder::stringAttr(n, "mode", p.max ? "max" : "avg");
  ModelBuilder::stringAttr(n, "coordinate_transformation_mode",
                           p.halfPixel ? "half_pixel" : "output_half_pixel");
  m.output("y", 4);
  std::vector<k::Tensor> out = runWithX(m, k::Tensor(xs, x));
  return out.empty() ? std::vector<float>() : out[0].values();
}

TEST(OnnxRoiAlign, MatchesTheReference) {
  std::vector<int64_t> xs = {2, 3, 9, 11};
  std::vector<float> x = pattern(product(xs), 7);
  // Regions inside, across the edges, beyond the map and of zero height.
  std::vector<float> rois = {1.0f, 2.0f,  14.0f, 12.0f, -4.0f, -3.0f,
                             6.0f, 20.0f, 18.0f, 1.0f,  30.0f, 9.5f,
                             3.0f, 5.0f,  9.0f,  5.0f};
  std::vector<int64_t> batch = {0, 1, 1, 0};
  for (int64_t sampling : {2, 1, 0})
    for (bool halfPixel : {true, false})
      for (bool max : {false, true}) {
        Roi p;
        p.sampling = sampling;
        p.halfPixel = halfPixel;
        p.max = max;
        std::string what = "sampling " + std::to_string(sampling) +
                           (halfPixel ? " half_pixel" : " output_half_pixel") +
                           (max ? " max" : " avg");
        expectClose(runRoiAlign(xs, x, rois, batch, p),
                    roiReference(xs, x, rois, batch, p), what.c_str());
      }
}

TEST(OnnxRoiAlign, AdaptiveSamplingNeedsKnownRegions) {
  ModelBuilder m(16);
  m.input("x", kFloat, {1, 2, 8, 8});
  m.input("rois", kFloat, {2, 4});
  m.typedInts("batch", onnx::TensorProto::INT64, {2}, {0, 0});
  m.node("RoiAlign", "roi", {"x", "rois", "batch"}, {"y"});
  m.output("y", 4);
  expectImportError(m, "sampling_ratio 0 (adaptive) needs the rois known",
                    "run-time regions");
  ModelBuilder bad(16);
  bad.input("x", kFloat, {1, 2, 8, 8});
  bad.floats("rois", {2, 3});
  bad.typedInts("batch", onnx::TensorProto::INT64, {2}, {0, 0});
  bad.node("RoiAlign", "roi", {"x", "rois", "batch"}, {"y"});
  bad.output("y", 4);
  expectImportError(bad, "rois [R, 4]", "rois of 3 columns");
}

//===----------------------------------------------------------------------===//
// Det
//===----------------------------------------------------------------------===//

/// The determinant of the m x m matrix at `a` by Gaussian elimination with
/// partial pivoting, in double.
double detReference(const float *a, int64_t m) {
  std::vector<double> t(a, a + m * m);
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(t[i * m + k]) > std::fabs(t[pivot * m + k]))
        pivot = i;
    if (t[pivot * m + k] == 0)
      return 0;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j)
        std::swap(t[k * m + j], t[pivot * m + j]);
      det = -det;
    }
    det *= t[k * m + k];
    for (int64_t i = k + 1; i < m; ++i) {
      double f = t[i * m + k] / t[k * m + k];
      for (int64_t j = k; j < m; ++j)
        t[i * m + j] -= f * t[k * m + j];
    }
  }
  return det;
}

TEST(OnnxDet, MatchesEliminationUpToSixBySix) {
  for (int64_t m = 1; m <= 6; ++m) {
    std::vector<int64_t> xs = {2, 3, m, m};
    std::vector<float> x = pattern(product(xs), m);
    // The last matrix is singular: its first two rows are equal.
    if (m >= 2)
      for (int64_t j = 0; j < m; ++j)
        x[5 * m * m + m + j] = x[5 * m * m + j];
    ModelBuilder b;
    b.input("x", kFloat, xs);
    b.node("Det", "det", {"x"}, {"y"});
    b.output("y", 2);
    std::vector<k::Tensor> out = runWithX(b, k::Tensor(xs, x));
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> want;
    for (int64_t i = 0; i < 6; ++i)
      want.push_back(float(detReference(&x[i * m * m], m)));
    expectClose(out[0].values(), want, ("Det " + std::to_string(m)).c_str());
    if (m >= 2) {
      EXPECT_NEAR(out[0].values()[5], 0.0f, 1e-5f);
    }
  }
}

TEST(OnnxDet, RejectsLargeAndNonSquareMatrices) {
  ModelBuilder big;
  big.input("x", kFloat, {7, 7});
  big.node("Det", "det", {"x"}, {"y"});
  big.output("y", 0);
  expectImportError(big, "Det of 7x7 matrices is not supported", "7x7");
  ModelBuilder oblong;
  oblong.input("x", kFloat, {2, 3});
  oblong.node("Det", "det", {"x"}, {"y"});
  oblong.output("y", 0);
  expectImportError(oblong, "needs square matrices", "2x3");
}

} // namespace
