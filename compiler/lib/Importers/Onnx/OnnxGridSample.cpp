//===- OnnxGridSample.cpp - ONNX GridSample as gathers at run time --------===//
//
// GridSample (spatial transformers, deformable attention, optical-flow
// warping) reads the input at positions the grid computes at run time, so
// its taps are gathers with run-time indices: the input is laid out as
// rows [N*H*W, C], each output position's tap is the row at n*H*W + y*W + x,
// and the taps are weighted (bilinear: 4 corners, bicubic: 16 taps with
// Keys' kernel, A = -0.75; nearest: 1) and summed. Coordinates follow
// PyTorch's grid_sampler, whose outputs ONNX's tests hold: unnormalised by
// align_corners, then clipped (border) or reflected (reflection) before
// interpolation for bilinear and nearest, per tap for bicubic; taps outside
// the input read zero. Everything is graph arithmetic (floor, compare,
// where, cast) around graph.gather, so shapes, costs, kernels and autodiff
// (gather's gradient is a scatter-add) come with it.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include <array>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

class GridSampler {
public:
  GridSampler(Chain &c, Value rows, Value batchOffset, Shape inputShape,
              Shape outShape, StringRef padding, bool alignCorners)
      : c(c), rows(rows), batchOffset(batchOffset), in(inputShape),
        out(outShape), padding(padding), alignCorners(alignCorners) {}

  /// A grid coordinate in [-1, 1] as a position along an axis of `size`.
  Value unnormalise(Value g, int64_t size) {
    double s = double(size);
    if (alignCorners)
      return c.mul(c.add(g, c.scalar(g, 1.0)), c.scalar(g, (s - 1) / 2));
    return c.op<SubOp>(c.mul(c.add(g, c.scalar(g, 1.0)), c.scalar(g, s / 2)),
                       c.scalar(g, 0.5));
  }

  /// The padding mode applied to a position: clipped into [0, size - 1]
  /// (border), reflected at the edges and then clipped (reflection), or
  /// left as it is (zeros: outside taps read zero).
  Value pad(Value p, int64_t size) {
    if (padding == "border")
      return clip(p, size);
    if (padding == "reflection")
      return clip(alignCorners ? reflect(p, 0, 2 * (size - 1))
                               : reflect(p, -1, 2 * size - 1),
                  size);
    return p;
  }

  /// The input's C values at integer positions (x, y) (f32 tensors of the
  /// output's [N, Ho, Wo]) as [N, Ho, Wo, C], times `weight` [N, Ho, Wo];
  /// zero where (x, y) is outside the input.
  Value tap(Value x, Value y, Value weight) {
    int64_t h = in[2], w = in[3];
    Value inside = c.mul(between(x, w), between(y, h));
    Value flat = c.add(c.mul(clip(y, h), c.scalar(y, double(w))), clip(x, w));
    Type i64 = IntegerType::get(c.ctx.getContext(), 64);
    Value index = c.add(castTo(c.ctx, flat, i64), batchOffset);
    Value v = compose<GatherOp>(c.ctx, rows, index, int64_t(0));
    Value scale = c.mul(inside, weight);
    Shape s = {out[0], out[2], out[3], 1};
    Value scale4 = scale ? c.ctx.reshape(scale, s).value_or(Value()) : Value();
    return c.mul(v, scale4);
  }

  Chain &c;

private:
  Value clip(Value p, int64_t size) {
    return c.max(c.min(p, c.scalar(p, double(size - 1))), c.scalar(p, 0.0));
  }
  /// 1 where 0 <= p <= size - 1, else 0.
  Value between(Value p, int64_t size) {
    MLIRContext *m = c.ctx.getContext();
    Value one = c.scalar(p, 1.0), zero = c.scalar(p, 0.0);
    Value lo = c.op<WhereOp>(
        c.op<CompareOp>(StringAttr::get(m, "ge"), p, zero), one, zero);
    Value hi = c.op<WhereOp>(
        c.op<CompareOp>(StringAttr::get(m, "le"), p,
                        c.scalar(p, double(size - 1))),
        one, zero);
    return c.mul(lo, hi);
  }
  /// PyTorch's reflect_coordinates: p mirrored into [low/2, high/2].
  Value reflect(Value p, int64_t twiceLow, int64_t twiceHigh) {
    if (twiceLow == twiceHigh)
      return c.mul(p, c.scalar(p, 0.0));
    double lo = double(twiceLow) / 2, span = double(twiceHigh - twiceLow) / 2;
    Value d = c.op<SubOp>(p, c.scalar(p, lo));
    d = c.max(d, c.op<NegOp>(d));
    Value flips = c.op<FloorOp>(c.mul(d, c.scalar(d, 1.0 / span)));
    Value extra = c.op<SubOp>(d, c.mul(flips, c.scalar(d, span)));
    Value half = c.mul(flips, c.scalar(d, 0.5));
    Value even = c.op<CompareOp>(StringAttr::get(c.ctx.getContext(), "eq"),
                                 c.op<FloorOp>(half), half);
    return c.op<WhereOp>(even, c.add(extra, c.scalar(d, lo)),
                         c.add(c.op<SubOp>(c.scalar(d, span), extra),
                               c.scalar(d, lo)));
  }

  Value rows, batchOffset;
  Shape in, out;
  std::string padding;
  bool alignCorners;
};

/// Keys' cubic convolution weights (A = -0.75) of the 4 taps around a
/// position with fractional part t: taps at -1, 0, 1, 2.
std::array<Value, 4> cubicWeights(Chain &c, Value t) {
  const double a = -0.75;
  auto near = [&](Value x) { // |x| <= 1: ((A + 2) x - (A + 3)) x^2 + 1
    Value p = c.op<SubOp>(c.mul(x, c.scalar(x, a + 2)), c.scalar(x, a + 3));
    return c.add(c.mul(c.mul(p, x), x), c.scalar(x, 1.0));
  };
  auto far = [&](Value x) { // 1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A
    Value p = c.op<SubOp>(c.mul(x, c.scalar(x, a)), c.scalar(x, 5 * a));
    p = c.add(c.mul(p, x), c.scalar(x, 8 * a));
    return c.op<SubOp>(c.mul(p, x), c.scalar(x, 4 * a));
  };
  Value one = c.scalar(t, 1.0);
  return {far(c.add(t, one)), near(t), near(c.op<SubOp>(one, t)),
          far(c.op<SubOp>(c.scalar(t, 2.0), t))};
}

LogicalResult convertGridSample(NodeContext &ctx) {
  Chain c(ctx);
  Value x = floatOperand(ctx, 0, "the input");
  Value grid = x ? floatOperand(ctx, 1, "the grid") : Value();
  if (!grid)
    return failure();
  Shape in = shapeOf(x), g = shapeOf(grid);
  if (in.size() != 4 || g.size() != 4 || g[3] != 2 || g[0] != in[0])
    return ctx.emitError() << "needs an input [N, C, H, W] and a grid [N, "
                              "H_out, W_out, 2], got "
                           << shapeToString(in) << " and "
                           << shapeToString(g);
  std::string mode = ctx.getString("mode", "bilinear");
  std::string padding = ctx.getString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return ctx.emitError() << "mode '" << mode
                           << "' is not one of bilinear, nearest, bicubic";
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return ctx.emitError() << "padding_mode '" << padding
                           << "' is not one of zeros, border, reflection";
  bool align = ctx.getInt("align_corners", 0) != 0;
  int64_t n = in[0], ch = in[1], h = in[2], w = in[3];
  Shape out = {n, ch, g[1], g[2]};
  // The input as rows [N*H*W, C], one per position.
  Value rows = compose<TransposeOp>(ctx, x, ArrayRef<int64_t>{0, 2, 3, 1});
  rows = rows ? ctx.reshape(rows, {n * h * w, ch}).value_or(Value())
              : Value();
  HostTensor offsets = HostTensor::zeros(onnx::TensorProto::INT64, {n, 1, 1});
  for (int64_t b = 0; b < n; ++b)
    offsets.ints[b] = b * h * w;
  GridSampler s(c, rows, ctx.createConstant(offsets), in, out, padding,
                align);
  // The grid's x (width) and y (height) coordinates, [N, Ho, Wo].
  auto coord = [&](int64_t k) -> Value {
    Value part = compose<SliceOp>(ctx, grid, ArrayRef<int64_t>{0, 0, 0, k},
                                  ArrayRef<int64_t>{n, g[1], g[2], k + 1},
                                  ArrayRef<int64_t>{1, 1, 1, 1});
    return part ? ctx.reshape(part, {n, g[1], g[2]}).value_or(Value())
                : Value();
  };
  Value px = s.unnormalise(coord(0), w), py = s.unnormalise(coord(1), h);
  Value sum;
  auto accumulate = [&](Value v) { sum = sum ? c.add(sum, v) : v; };
  if (mode == "nearest") {
    px = c.roundHalfEven(s.pad(px, w));
    py = c.roundHalfEven(s.pad(py, h));
    accumulate(s.tap(px, py, c.scalar(px, 1.0)));
  } else if (mode == "bilinear") {
    px = s.pad(px, w);
    py = s.pad(py, h);
    Value x0 = c.op<FloorOp>(px), y0 = c.op<FloorOp>(py);
    Value one = c.scalar(px, 1.0);
    Value x1 = c.add(x0, one), y1 = c.add(y0, one);
    Value wx1 = c.op<SubOp>(px, x0), wy1 = c.op<SubOp>(py, y0);
    Value wx0 = c.op<SubOp>(one, wx1), wy0 = c.op<SubOp>(one, wy1);
    accumulate(s.tap(x0, y0, c.mul(wx0, wy0)));
    accumulate(s.tap(x1, y0, c.mul(wx1, wy0)));
    accumulate(s.tap(x0, y1, c.mul(wx0, wy1)));
    accumulate(s.tap(x1, y1, c.mul(wx1, wy1)));
  } else {
    // Bicubic: the padding applies to each of the 4x4 taps.
    Value x0 = c.op<FloorOp>(px), y0 = c.op<FloorOp>(py);
    std::array<Value, 4> wx = cubicWeights(c, c.op<SubOp>(px, x0));
    std::array<Value, 4> wy = cubicWeights(c, c.op<SubOp>(py, y0));
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        Value tx = s.pad(c.add(x0, c.scalar(x0, double(i - 1))), w);
        Value ty = s.pad(c.add(y0, c.scalar(y0, double(j - 1))), h);
        accumulate(s.tap(tx, ty, c.mul(wx[i], wy[j])));
      }
  }
  return c.result(sum ? compose<TransposeOp>(ctx, sum,
                                             ArrayRef<int64_t>{0, 3, 1, 2})
                      : Value());
}

} // namespace

void addGridSampleConverter(ConverterTable &table) {
  table.add("GridSample", convertGridSample);
}

} // namespace cleave::onnx_import
