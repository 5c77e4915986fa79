//===- OnnxRoiAlign.cpp - ONNX RoiAlign as gathers at run time ------------===//
//
// RoiAlign (Mask R-CNN and every two-stage detector) pools each region of
// interest to a fixed [output_height, output_width] grid: each bin averages
// (or takes the largest of) sampling_ratio^2 bilinear samples of the
// feature map. The regions come from the detector at run time, so, as in
// GridSample, the samples are gathers with run-time indices: the map is
// laid out as rows [N*H*W, C] and each sample's four corners are the rows
// at batch*H*W + y*W + x, weighted and summed (avg) or maxed (max). The
// sample positions are affine in the region's corners, so one [R, oh*sr]
// grid of heights and one [R, ow*sr] grid of widths serve every region.
// Coordinates and edge rules follow ONNX's reference (ONNX Runtime's
// kernel): positions below -1 or beyond the map read zero, others are
// clamped to it; half_pixel shifts by -0.5, output_half_pixel (opset 10)
// does not and keeps regions at least 1 wide; max mode takes the largest
// weighted corner, as the reference does. An adaptive sampling_ratio (0)
// depends on each region's size, so it needs the regions at import time;
// then each region is pooled with its own sample count.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

struct RoiAlignSpec {
  int64_t n, ch, h, w, oh, ow;
  double scale;
  bool halfPixel, max;
};

/// One axis of the samples: their corner indices (f32, lower and upper)
/// and weights, zero for samples off the map.
struct SampleAxis {
  Value lo, hi, wLo, wHi;
};

SampleAxis sampleAxis(Chain &c, Value p, int64_t size) {
  MLIRContext *m = c.ctx.getContext();
  Value one = c.scalar(p, 1.0), zero = c.scalar(p, 0.0);
  Value last = c.scalar(p, double(size - 1));
  Value onMap = c.mul(c.op<WhereOp>(c.op<CompareOp>(StringAttr::get(m, "ge"), p,
                                                    c.scalar(p, -1.0)),
                                    one, zero),
                      c.op<WhereOp>(c.op<CompareOp>(StringAttr::get(m, "le"), p,
                                                    c.scalar(p, double(size))),
                                    one, zero));
  // Clamped into [0, size - 1]; at the last row both corners are it.
  Value q = c.min(c.max(p, zero), last);
  Value lo = c.op<FloorOp>(q);
  Value hi = c.min(c.add(lo, one), last);
  Value wHi = c.op<SubOp>(q, lo);
  Value wLo = c.op<SubOp>(one, wHi);
  return {lo, hi, c.mul(wLo, onMap), c.mul(wHi, onMap)};
}

/// Sample offsets along an axis in units of bins: bin b, sample i of sr
/// at b + (i + 1/2) / sr, as a [1, bins * sr] f32 constant.
Value binOffsets(NodeContext &ctx, int64_t bins, int64_t sr) {
  HostTensor t = HostTensor::zeros(onnx::TensorProto::FLOAT, {1, bins * sr});
  for (int64_t b = 0; b < bins; ++b)
    for (int64_t i = 0; i < sr; ++i)
      t.floats[b * sr + i] = double(b) + (double(i) + 0.5) / double(sr);
  return ctx.createConstant(t);
}

/// Regions `rois` [R, 4] of the map `rows` [N*H*W, C] (their images
/// `batch`, int64 [R]) pooled with srH x srW samples per bin, as [R, oh,
/// ow, C].
Value alignRegions(Chain &c, const RoiAlignSpec &s, Value rows, Value rois,
                   Value batch, int64_t r, int64_t srH, int64_t srW) {
  NodeContext &ctx = c.ctx;
  double offset = s.halfPixel ? 0.5 : 0.0;
  auto corner = [&](int64_t k) -> Value {
    Value col =
        compose<SliceOp>(ctx, rois, ArrayRef<int64_t>{0, k},
                         ArrayRef<int64_t>{r, k + 1}, ArrayRef<int64_t>{1, 1});
    return c.op<SubOp>(c.mul(col, c.scalar(rois, s.scale)),
                       c.scalar(rois, offset));
  };
  Value x0 = corner(0), y0 = corner(1), x1 = corner(2), y1 = corner(3);
  Value width = c.op<SubOp>(x1, x0), height = c.op<SubOp>(y1, y0);
  if (!s.halfPixel) {
    width = c.max(width, c.scalar(width, 1.0));
    height = c.max(height, c.scalar(height, 1.0));
  }
  Value binW = c.mul(width, c.scalar(width, 1.0 / double(s.ow)));
  Value binH = c.mul(height, c.scalar(height, 1.0 / double(s.oh)));
  // Sample positions, [R, oh*srH] and [R, ow*srW].
  Value ys = c.add(y0, c.mul(binH, binOffsets(ctx, s.oh, srH)));
  Value xs = c.add(x0, c.mul(binW, binOffsets(ctx, s.ow, srW)));
  int64_t hs = s.oh * srH, ws = s.ow * srW;
  SampleAxis ay = sampleAxis(c, ys, s.h), ax = sampleAxis(c, xs, s.w);
  auto column = [&](Value v) { // [R, hs] -> [R, hs, 1]
    return v ? ctx.reshape(v, {r, hs, 1}).value_or(Value()) : Value();
  };
  auto row = [&](Value v) { // [R, ws] -> [R, 1, ws]
    return v ? ctx.reshape(v, {r, 1, ws}).value_or(Value()) : Value();
  };
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  Value base =
      batch ? ctx.reshape(batch, {r, 1, 1}).value_or(Value()) : Value();
  Value hw =
      base ? ctx.createSplat(RankedTensorType::get({}, i64), double(s.h * s.w))
           : Value();
  base = c.mul(base, hw);
  auto tap = [&](Value y, Value wy, Value x, Value wx) {
    Value flat = c.add(c.mul(column(y), c.scalar(y, double(s.w))), row(x));
    Value index = c.add(castTo(ctx, flat, i64), base);
    Value v = compose<GatherOp>(ctx, rows, index, int64_t(0));
    Value weight = c.mul(column(wy), row(wx));
    weight = weight ? ctx.reshape(weight, {r, hs, ws, 1}).value_or(Value())
                    : Value();
    return c.mul(v, weight);
  };
  Value taps[4] = {
      tap(ay.lo, ay.wLo, ax.lo, ax.wLo), tap(ay.lo, ay.wLo, ax.hi, ax.wHi),
      tap(ay.hi, ay.wHi, ax.lo, ax.wLo), tap(ay.hi, ay.wHi, ax.hi, ax.wHi)};
  Value samples = taps[0];
  for (int i = 1; i < 4; ++i)
    samples = s.max ? c.max(samples, taps[i]) : c.add(samples, taps[i]);
  // [R, oh, srH, ow, srW, C], pooled over the samples of each bin.
  samples = samples ? ctx.reshape(samples, {r, s.oh, srH, s.ow, srW, s.ch})
                          .value_or(Value())
                    : Value();
  SmallVector<int64_t> binAxes{2, 4};
  ArrayRef<int64_t> bins(binAxes);
  return s.max ? c.op<ReduceMaxOp>(samples, bins, false)
               : c.op<ReduceMeanOp>(samples, bins, false);
}

LogicalResult convertRoiAlign(NodeContext &ctx) {
  Chain c(ctx);
  Value x = floatOperand(ctx, 0, "the input");
  Value rois = x ? ctx.getValue(1, ParamUse::Frozen) : Value();
  Value batch = rois ? ctx.getValue(2, ParamUse::Frozen) : Value();
  if (!batch)
    return failure();
  Shape in = shapeOf(x), rs = shapeOf(rois), bs = shapeOf(batch);
  if (in.size() != 4 || rs.size() != 2 || rs[1] != 4 || bs.size() != 1 ||
      bs[0] != rs[0])
    return ctx.emitError() << "needs an input [N, C, H, W], rois [R, 4] and "
                              "batch_indices [R], got "
                           << shapeToString(in) << ", " << shapeToString(rs)
                           << " and " << shapeToString(bs);
  if (!isa<FloatType>(cast<RankedTensorType>(rois.getType()).getElementType()))
    return ctx.emitError() << "rois must be floating point";
  if (!isa<IntegerType>(
          cast<RankedTensorType>(batch.getType()).getElementType()))
    return ctx.emitError() << "batch_indices must be integers";
  std::string mode = ctx.getString("mode", "avg");
  std::string transform =
      ctx.getString("coordinate_transformation_mode", "half_pixel");
  if (mode != "avg" && mode != "max")
    return ctx.emitError() << "mode '" << mode << "' is not one of avg, max";
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return ctx.emitError() << "coordinate_transformation_mode '" << transform
                           << "' is not one of half_pixel, output_half_pixel";
  RoiAlignSpec s{in[0],
                 in[1],
                 in[2],
                 in[3],
                 ctx.getInt("output_height", 1),
                 ctx.getInt("output_width", 1),
                 ctx.getFloat("spatial_scale", 1.0),
                 transform == "half_pixel",
                 mode == "max"};
  int64_t sr = ctx.getInt("sampling_ratio", 0);
  if (s.oh < 1 || s.ow < 1 || sr < 0)
    return ctx.emitError() << "output_height and output_width must be "
                              "positive and sampling_ratio not negative, "
                              "got "
                           << s.oh << ", " << s.ow << " and " << sr;
  int64_t r = rs[0];
  if (r == 0)
    return ctx.emitError() << "needs at least one region";
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  batch = castTo(ctx, batch, i64);
  // The map as rows [N*H*W, C], one per position.
  Value rows = compose<TransposeOp>(ctx, x, ArrayRef<int64_t>{0, 2, 3, 1});
  rows = rows ? ctx.reshape(rows, {s.n * s.h * s.w, s.ch}).value_or(Value())
              : Value();
  Value pooled;
  if (sr > 0) {
    pooled = alignRegions(c, s, rows, rois, batch, r, sr, sr);
  } else {
    // Adaptive: ceil(region size / bins) samples, per region.
    const HostTensor *known = ctx.getImportValue(1);
    if (!known)
      return ctx.emitError()
             << "sampling_ratio 0 (adaptive) needs the rois known at import "
                "time; give a positive sampling_ratio for run-time regions";
    SmallVector<Value> parts;
    for (int64_t i = 0; i < r; ++i) {
      double offset = s.halfPixel ? 0.5 : 0.0;
      auto at = [&](int k) {
        return known->getDouble(i * 4 + k) * s.scale - offset;
      };
      double width = at(2) - at(0), height = at(3) - at(1);
      if (!s.halfPixel) {
        width = std::max(width, 1.0);
        height = std::max(height, 1.0);
      }
      int64_t srH = int64_t(std::ceil(height / double(s.oh)));
      int64_t srW = int64_t(std::ceil(width / double(s.ow)));
      if (srH <= 0 || srW <= 0) { // An empty region pools to zeros.
        parts.push_back(ctx.createSplat(
            RankedTensorType::get(
                {1, s.oh, s.ow, s.ch},
                cast<RankedTensorType>(x.getType()).getElementType()),
            0.0));
        continue;
      }
      Value roi = compose<SliceOp>(ctx, rois, ArrayRef<int64_t>{i, 0},
                                   ArrayRef<int64_t>{i + 1, 4},
                                   ArrayRef<int64_t>{1, 1});
      Value image =
          compose<SliceOp>(ctx, batch, ArrayRef<int64_t>{i},
                           ArrayRef<int64_t>{i + 1}, ArrayRef<int64_t>{1});
      parts.push_back(alignRegions(c, s, rows, roi, image, 1, srH, srW));
    }
    pooled = concat(ctx, parts, 0);
  }
  return c.result(
      pooled ? compose<TransposeOp>(ctx, pooled, ArrayRef<int64_t>{0, 3, 1, 2})
             : Value());
}

} // namespace

void addRoiAlignConverter(ConverterTable &table) {
  table.add("RoiAlign", convertRoiAlign);
}

} // namespace cleave::onnx_import
