//===- OnnxSpectralConverters.cpp - ONNX DFT, STFT and MelWeightMatrix ----===//
//
// The spectral front end of speech models (Whisper's log-mel spectrogram,
// wav2vec-style feature extractors exported with their preprocessing).
// A DFT of static length N is a GEMM with constant matrices computed at
// import: for an input x = a + ib, X_k = sum_n x_n e^(-+2 pi i n k / N)
// gives real part a C + s b S and imaginary part b C - s a S, with
// C[n, k] = cos(2 pi n k / N), S[n, k] = sin(2 pi n k / N) and s = 1 for
// the forward transform, -1 (and a factor 1/N) for the inverse. That is
// O(N^2) work against an FFT's O(N log N), but it runs on the GEMM
// kernels every backend has, and spectrogram frames are short (N = 400
// for Whisper). STFT gathers its frames with one gather of constant
// indices, applies the window, and takes the DFT of each frame.
// MelWeightMatrix is a constant computed at import.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

/// A signal's real and imaginary parts (the latter null for a real
/// signal), each without the trailing complex axis.
struct Complex {
  Value re, im;
};

/// Splits x [..., 1 or 2] into its parts.
FailureOr<Complex> splitComplex(NodeContext &ctx, Value x) {
  Shape shape = shapeOf(x);
  if (shape.empty() || (shape.back() != 1 && shape.back() != 2)) {
    ctx.emitError() << "the signal's last axis must be 1 (real) or 2 "
                    << "(complex), got " << shapeToString(shape);
    return failure();
  }
  Shape part(shape.begin(), shape.end() - 1);
  auto take = [&](int64_t c) -> Value {
    Shape starts(shape.size(), 0), limits = shape, strides(shape.size(), 1);
    starts.back() = c;
    limits.back() = c + 1;
    Value s = compose<SliceOp>(ctx, x, ArrayRef<int64_t>(starts),
                               ArrayRef<int64_t>(limits),
                               ArrayRef<int64_t>(strides));
    return s ? ctx.reshape(s, part).value_or(Value()) : Value();
  };
  Complex z{take(0), shape.back() == 2 ? take(1) : Value()};
  if (!z.re || (shape.back() == 2 && !z.im))
    return failure();
  return z;
}

/// `v` [..., L] cut or padded with zeros to [..., n] along its last axis.
Value fitLength(NodeContext &ctx, Value v, int64_t n) {
  if (!v)
    return {};
  Shape shape = shapeOf(v);
  int64_t l = shape.back();
  if (l == n)
    return v;
  if (l > n) {
    Shape starts(shape.size(), 0), limits = shape, strides(shape.size(), 1);
    limits.back() = n;
    return compose<SliceOp>(ctx, v, ArrayRef<int64_t>(starts),
                            ArrayRef<int64_t>(limits),
                            ArrayRef<int64_t>(strides));
  }
  Shape zeros = shape;
  zeros.back() = n - l;
  auto type = cast<RankedTensorType>(v.getType());
  return concat(ctx, {v, ctx.createSplat(type.clone(zeros), 0.0)},
                static_cast<int64_t>(shape.size()) - 1);
}

/// [n, bins] matrix of cos (or sin) of 2 pi j k / n, times `scale`.
Value dftMatrix(NodeContext &ctx, int64_t n, int64_t bins, bool sine,
                double scale, Type element) {
  HostTensor m = HostTensor::zeros(onnx::TensorProto::FLOAT, {n, bins});
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < bins; ++k) {
      // j k mod n keeps the angle small, so that large n stay accurate.
      double angle = 2 * M_PI * double((j * k) % n) / double(n);
      m.floats[j * bins + k] = scale * (sine ? std::sin(angle) : std::cos(angle));
    }
  return castTo(ctx, ctx.createConstant(m), element);
}

/// The DFT of `z` along its last axis (length n), `bins` outputs, as
/// [..., bins, 2].
Value dftLastAxis(Chain &c, Complex z, int64_t bins, bool inverse) {
  NodeContext &ctx = c.ctx;
  Shape shape = shapeOf(z.re);
  int64_t n = shape.back();
  int64_t rows = product(ArrayRef<int64_t>(shape).drop_back());
  Type element = cast<RankedTensorType>(z.re.getType()).getElementType();
  double scale = inverse ? 1.0 / double(n) : 1.0;
  Value cosM = dftMatrix(ctx, n, bins, false, scale, element);
  Value sinM = dftMatrix(ctx, n, bins, true, scale, element);
  auto gemm = [&](Value v, Value m) -> Value {
    Value flat = v ? ctx.reshape(v, {rows, n}).value_or(Value()) : Value();
    return c.op<MatmulOp>(flat, m, false, false);
  };
  // Forward: re = a C + b S, im = b C - a S; the inverse flips the signs
  // of the S terms.
  Value re = gemm(z.re, cosM);
  Value aS = gemm(z.re, sinM);
  Value im = inverse ? aS : c.op<NegOp>(aS);
  if (z.im) {
    Value bS = gemm(z.im, sinM);
    re = inverse ? c.op<SubOp>(re, bS) : c.add(re, bS);
    im = c.add(im, gemm(z.im, cosM));
  }
  Shape out = shape;
  out.back() = bins;
  out.push_back(1);
  auto part = [&](Value v) {
    return v ? ctx.reshape(v, out).value_or(Value()) : Value();
  };
  return concat(ctx, {part(re), part(im)},
                static_cast<int64_t>(out.size()) - 1);
}

/// A scalar integer input known at import (a length or a step), or
/// `dflt` when absent.
FailureOr<int64_t> knownScalar(NodeContext &ctx, unsigned i, const char *what,
                               std::optional<int64_t> dflt) {
  if (!ctx.hasInput(i)) {
    if (dflt)
      return *dflt;
    ctx.emitError() << what << " is required";
    return failure();
  }
  const HostTensor *v = ctx.getConstant(i);
  if (!v || v->size() != 1) {
    ctx.emitError() << what << " must be a scalar known at import time";
    return failure();
  }
  int64_t n = v->getInt(0);
  if (n < 1) {
    ctx.emitError() << what << " must be positive, got " << n;
    return failure();
  }
  return n;
}

LogicalResult convertDft(NodeContext &ctx) {
  Chain c(ctx);
  Value x = c.input();
  if (!x)
    return failure();
  Shape shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = ctx.getInt("axis", 1);
  // The last axis holds the complex parts; a batch axis comes first.
  if (axis < 0)
    axis += rank;
  if (axis < 1 || axis >= rank - 1)
    return ctx.emitError() << "axis " << ctx.getInt("axis", 1)
                           << " must name a signal axis (1 to " << rank - 2
                           << ") of the input " << shapeToString(shape);
  bool inverse = ctx.getInt("inverse", 0) != 0;
  bool onesided = ctx.getInt("onesided", 0) != 0;
  FailureOr<Complex> z = splitComplex(ctx, x);
  if (failed(z))
    return failure();
  if (onesided && (inverse || z->im))
    return ctx.emitError() << "onesided applies to the forward transform of "
                              "a real signal";
  FailureOr<int64_t> n = knownScalar(ctx, 1, "dft_length", shape[axis]);
  if (failed(n))
    return failure();
  // The signal axis goes last for the GEMM and back afterwards.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  auto toLast = [&](Value v) -> Value {
    return fitLength(ctx, v ? compose<TransposeOp>(ctx, v, ArrayRef<int64_t>(perm))
                            : Value(),
                     *n);
  };
  Complex last{toLast(z->re), z->im ? toLast(z->im) : Value()};
  int64_t bins = onesided ? *n / 2 + 1 : *n;
  Value y = dftLastAxis(c, last, bins, inverse);
  // [..., bins, 2] back to the input's order of axes.
  SmallVector<int64_t> back(rank);
  for (int64_t d = 0; d < rank - 1; ++d)
    back[perm[d]] = d;
  back[rank - 1] = rank - 1;
  return c.result(compose<TransposeOp>(ctx, y, ArrayRef<int64_t>(back)));
}

LogicalResult convertStft(NodeContext &ctx) {
  Chain c(ctx);
  Value signal = c.input();
  if (!signal)
    return failure();
  Shape shape = shapeOf(signal);
  if (shape.size() != 3)
    return ctx.emitError() << "the signal must be [batch, length, 1 or 2], "
                           << "got " << shapeToString(shape);
  FailureOr<int64_t> step = knownScalar(ctx, 1, "frame_step", std::nullopt);
  if (failed(step))
    return failure();
  Value window;
  std::optional<int64_t> windowLength;
  if (ctx.hasInput(2)) {
    window = ctx.getValue(2, ParamUse::Frozen);
    if (!window)
      return failure();
    Shape w = shapeOf(window);
    if (w.size() != 1)
      return ctx.emitError() << "the window must be 1-D, got "
                             << shapeToString(w);
    windowLength = w[0];
  }
  FailureOr<int64_t> length =
      knownScalar(ctx, 3, "frame_length", windowLength);
  if (failed(length))
    return failure();
  if (windowLength && *windowLength != *length)
    return ctx.emitError() << "the window has " << *windowLength
                           << " values, frame_length is " << *length;
  if (*length > shape[1])
    return ctx.emitError() << "frame_length " << *length
                           << " is longer than the signal (" << shape[1]
                           << ")";
  bool onesided = ctx.getInt("onesided", 1) != 0;
  FailureOr<Complex> z = splitComplex(ctx, signal);
  if (failed(z))
    return failure();
  if (onesided && z->im)
    return ctx.emitError() << "onesided applies to a real signal";
  // Frame f holds samples f step .. f step + length - 1.
  int64_t frames = 1 + (shape[1] - *length) / *step;
  HostTensor indices = HostTensor::zeros(onnx::TensorProto::INT64,
                                         {frames, *length});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < *length; ++j)
      indices.ints[f * *length + j] = f * *step + j;
  Value map = ctx.createConstant(indices);
  auto framed = [&](Value v) -> Value {
    if (!v)
      return {};
    Value f = compose<GatherOp>(ctx, v, map, int64_t(1));
    if (window)
      f = c.mul(f, castTo(ctx, window,
                          cast<RankedTensorType>(v.getType()).getElementType()));
    return f;
  };
  Complex frame{framed(z->re), framed(z->im)};
  return c.result(
      dftLastAxis(c, frame, onesided ? *length / 2 + 1 : *length, false));
}

/// A scalar input known at import as a double.
FailureOr<double> knownNumber(NodeContext &ctx, unsigned i, const char *what) {
  const HostTensor *v = ctx.getImportValue(i);
  if (!v || v->size() != 1) {
    ctx.emitError() << what << " must be a scalar known at import time";
    return failure();
  }
  return v->getDouble(0);
}

/// The [dft_length / 2 + 1, num_mel_bins] triangular filters of the mel
/// scale (2595 log10(1 + f / 700)), as ONNX's reference computes them:
/// band edges equally spaced in mels, rounded down to DFT bins.
LogicalResult convertMelWeightMatrix(NodeContext &ctx) {
  FailureOr<double> mels = knownNumber(ctx, 0, "num_mel_bins");
  FailureOr<double> dftLength = knownNumber(ctx, 1, "dft_length");
  FailureOr<double> rate = knownNumber(ctx, 2, "sample_rate");
  FailureOr<double> lower = knownNumber(ctx, 3, "lower_edge_hertz");
  FailureOr<double> upper = knownNumber(ctx, 4, "upper_edge_hertz");
  if (failed(mels) || failed(dftLength) || failed(rate) || failed(lower) ||
      failed(upper))
    return failure();
  int64_t numMels = static_cast<int64_t>(*mels);
  auto hertz = [](double f) {
    std::ostringstream os;
    os << f;
    return os.str();
  };
  int64_t bins = static_cast<int64_t>(*dftLength) / 2 + 1;
  if (numMels < 1 || *dftLength < 1 || *rate <= 0 || *lower < 0 ||
      *upper <= *lower || *upper > *rate / 2)
    return ctx.emitError() << "needs num_mel_bins, dft_length and "
                              "sample_rate positive and 0 <= "
                              "lower_edge_hertz < upper_edge_hertz <= "
                              "sample_rate / 2, got "
                           << numMels << ", " << int64_t(*dftLength) << ", "
                           << int64_t(*rate) << ", " << hertz(*lower) << ", "
                           << hertz(*upper);
  int32_t dtype = ctx.getInt("output_datatype", onnx::TensorProto::FLOAT);
  if (!isFloatType(dtype))
    return ctx.emitError() << "output_datatype " << dtype
                           << " is not a floating-point type";
  auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  double lowMel = toMel(*lower), highMel = toMel(*upper);
  // The reference spaces the num_mel_bins + 2 edges by 1 / (their count),
  // not 1 / (their count - 1): the last edge falls short of the upper one.
  double stepMel = (highMel - lowMel) / double(numMels + 2);
  std::vector<int64_t> edge(numMels + 2);
  for (int64_t i = 0; i < numMels + 2; ++i) {
    double hz = 700.0 * (std::pow(10.0, (double(i) * stepMel + lowMel) /
                                            2595.0) -
                         1.0);
    edge[i] = static_cast<int64_t>(
        std::floor((*dftLength + 1) * hz / *rate));
  }
  HostTensor m = HostTensor::zeros(dtype, {bins, numMels});
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < bins)
      m.floats[j * numMels + i] = v;
  };
  for (int64_t i = 0; i < numMels; ++i) {
    int64_t lo = edge[i], centre = edge[i + 1], hi = edge[i + 2];
    if (centre == lo)
      set(centre, i, 1.0);
    else
      for (int64_t j = lo; j <= centre; ++j)
        set(j, i, double(j - lo) / double(centre - lo));
    for (int64_t j = centre; j < hi; ++j)
      set(j, i, double(hi - j) / double(hi - centre));
  }
  return ctx.setResult(0, std::move(m));
}

} // namespace

void addSpectralConverters(ConverterTable &table) {
  table.add("DFT", convertDft);
  table.add("STFT", convertStft);
  table.add("MelWeightMatrix", convertMelWeightMatrix);
}

} // namespace cleave::onnx_import
