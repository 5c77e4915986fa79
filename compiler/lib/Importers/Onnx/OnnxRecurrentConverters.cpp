//===- OnnxRecurrentConverters.cpp - RNN, GRU and LSTM, unrolled ----------===//
//
// ONNX's recurrent layers over a sequence whose length is known at import
// (the graph dialect has no loops, and every model cleave plans has static
// shapes), unrolled into graph ops: one product of the whole sequence with
// the input weights, then per time step the recurrent product, the gates
// and the state update. Everything is differentiable graph ops, so the
// layers train (their weights are ordinary parameters) and partition like
// any matmul and element-wise op.
//
// Each direction runs over its own slices of W, R and B (forward, reverse,
// or both); `sequence_lens`, known or not at import, masks the steps past
// each sequence's end (its state stays, its output is 0), as the reference
// implementation does; `layout` 1 reads and writes batch-major tensors.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {
namespace {

enum class Cell { Rnn, Gru, Lstm };

/// Gates of a cell, in ONNX's order of W's rows: RNN one (the input), GRU
/// z, r, h, LSTM i, o, f, c.
int64_t gatesOf(Cell cell) {
  return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
}

/// One activation function of the `activations` attribute, with its alpha
/// and beta where it takes them.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

class RecurrentLayer {
public:
  RecurrentLayer(NodeContext &ctx, Cell cell) : ctx(ctx), c(ctx), cell(cell) {}
  LogicalResult convert();

private:
  /// The activations of every direction (the attribute or the defaults).
  LogicalResult readActivations(int64_t directions);
  Value activate(const Activation &f, Value x);
  /// Clamps a gate's input to [-clip, clip] when `clip` is given.
  Value clipped(Value x);
  /// Rows [begin, end) of `v` along axis 0 (all other axes whole).
  Value rows(Value v, int64_t begin, int64_t end);
  /// Direction `d`'s slice of a [directions, ...] input, without that axis.
  Value direction(Value v, int64_t d);
  /// Runs direction `d` (reverse when `reverse`); its outputs per time step
  /// in `ys` (indexed by t), its last states in `lastH` / `lastC`.
  LogicalResult run(int64_t d, bool reverse, SmallVectorImpl<Value> &ys,
                    Value &lastH, Value &lastC);

  NodeContext &ctx;
  Chain c;
  Cell cell;
  int64_t seq = 0, batch = 0, hidden = 0;
  Value x;                     // [seq, batch, input]
  Value w, r, b, h0, c0, peep; // as the node gives them (nullable)
  Value lengths;               // [batch, 1] f32, or null
  std::optional<double> clip;
  std::vector<Activation> activations;
  Type element;
};

LogicalResult RecurrentLayer::readActivations(int64_t directions) {
  std::vector<std::string> defaults =
      cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  size_t per = defaults.size();
  std::vector<std::string> names;
  if (const onnx::AttributeProto *a = ctx.getAttr("activations"))
    names.assign(a->strings().begin(), a->strings().end());
  if (names.empty())
    for (int64_t d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per * directions)
    return ctx.emitError() << "activations lists " << names.size()
                           << " functions; " << per * directions
                           << " expected (" << per << " per direction)";
  std::vector<float> alphas, betas;
  if (const onnx::AttributeProto *a = ctx.getAttr("activation_alpha"))
    alphas.assign(a->floats().begin(), a->floats().end());
  if (const onnx::AttributeProto *a = ctx.getAttr("activation_beta"))
    betas.assign(a->floats().begin(), a->floats().end());
  // alpha and beta are listed in order for the functions that take them.
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string &name : names) {
    Activation f{name};
    auto take = [&](std::vector<float> &list, size_t &next, double dflt) {
      return next < list.size() ? double(list[next++]) : dflt;
    };
    if (name == "Sigmoid" || name == "Tanh" || name == "Relu" ||
        name == "Softsign" || name == "Softplus") {
    } else if (name == "HardSigmoid") {
      f.alpha = take(alphas, nextAlpha, 0.2);
      f.beta = take(betas, nextBeta, 0.5);
    } else if (name == "LeakyRelu") {
      f.alpha = take(alphas, nextAlpha, 0.01);
    } else if (name == "Elu") {
      f.alpha = take(alphas, nextAlpha, 1.0);
    } else if (name == "Affine" || name == "ScaledTanh") {
      f.alpha = take(alphas, nextAlpha, 1.0);
      f.beta = take(betas, nextBeta, 0.0);
    } else {
      return ctx.emitError()
             << "activation '" << name
             << "' is not supported (Sigmoid, Tanh, Relu, HardSigmoid, "
                "LeakyRelu, Elu, Affine, ScaledTanh, Softsign, Softplus)";
    }
    activations.push_back(f);
  }
  return success();
}

Value RecurrentLayer::activate(const Activation &f, Value v) {
  if (!v)
    return {};
  if (f.name == "Sigmoid")
    return c.op<SigmoidOp>(v);
  if (f.name == "Tanh")
    return c.op<TanhOp>(v);
  if (f.name == "Relu")
    return c.op<ReluOp>(v);
  if (f.name == "HardSigmoid")
    return c.hardSigmoid(v, f.alpha, f.beta);
  if (f.name == "LeakyRelu")
    return c.leaky(v, c.scalar(v, f.alpha));
  if (f.name == "Softplus")
    return c.softplus(v);
  if (f.name == "Softsign") {
    Value abs = c.max(v, c.op<NegOp>(v));
    return c.op<DivOp>(v, c.add(c.scalar(v, 1.0), abs));
  }
  if (f.name == "Elu") {
    // relu(x) + alpha (e^min(x, 0) - 1).
    Value tail = c.op<SubOp>(c.op<ExpOp>(c.min(v, c.scalar(v, 0.0))),
                             c.scalar(v, 1.0));
    return c.add(c.op<ReluOp>(v), c.mul(tail, c.scalar(v, f.alpha)));
  }
  if (f.name == "Affine")
    return c.add(c.mul(v, c.scalar(v, f.alpha)), c.scalar(v, f.beta));
  // ScaledTanh: alpha tanh(beta x).
  return c.mul(c.op<TanhOp>(c.mul(v, c.scalar(v, f.beta))),
               c.scalar(v, f.alpha));
}

Value RecurrentLayer::clipped(Value v) {
  if (!v || !clip)
    return v;
  return c.max(c.min(v, c.scalar(v, *clip)), c.scalar(v, -*clip));
}

Value RecurrentLayer::rows(Value v, int64_t begin, int64_t end) {
  if (!v)
    return {};
  Shape s = shapeOf(v);
  SmallVector<int64_t> starts(s.size(), 0), limits(s.begin(), s.end()),
      strides(s.size(), 1);
  starts[0] = begin;
  limits[0] = end;
  if (begin == 0 && end == s[0])
    return v;
  return c.op<SliceOp>(v, ArrayRef<int64_t>(starts), ArrayRef<int64_t>(limits),
                       ArrayRef<int64_t>(strides));
}

Value RecurrentLayer::direction(Value v, int64_t d) {
  Value slice = rows(v, d, d + 1);
  if (!slice)
    return {};
  Shape s = shapeOf(slice);
  return ctx.reshape(slice, ArrayRef<int64_t>(s).drop_front()).value_or(Value());
}

LogicalResult RecurrentLayer::run(int64_t d, bool reverse,
                                  SmallVectorImpl<Value> &ys, Value &lastH,
                                  Value &lastC) {
  int64_t gates = gatesOf(cell), H = hidden;
  const Activation *f = &activations[d * (cell == Cell::Rnn   ? 1
                                          : cell == Cell::Gru ? 2
                                                              : 3)];
  Value wd = direction(w, d), rd = direction(r, d); // [G H, in], [G H, H]
  // The input's product for every step at once: [seq batch, G H].
  Value flat = ctx.reshape(x, {seq * batch, shapeOf(x)[2]}).value_or(Value());
  Value xw = c.op<MatmulOp>(flat, wd, false, true);
  Value wb, rb; // [G H] each, or null
  if (b) {
    Value bd = direction(b, d); // [2 G H]
    wb = rows(bd, 0, gates * H);
    rb = rows(bd, gates * H, 2 * gates * H);
    xw = c.add(xw, wb);
  }
  auto zeros = [&] {
    return ctx.createSplat(RankedTensorType::get({batch, H}, element), 0.0);
  };
  Value h = h0 ? direction(h0, d) : zeros();
  Value cState = cell == Cell::Lstm ? (c0 ? direction(c0, d) : zeros()) : Value();
  // Peepholes: i, o, f, each [H].
  Value pi, po, pf;
  if (peep) {
    Value pd = direction(peep, d);
    pi = rows(pd, 0, H);
    po = rows(pd, H, 2 * H);
    pf = rows(pd, 2 * H, 3 * H);
  }
  ys.assign(seq, Value());
  for (int64_t step = 0; step < seq; ++step) {
    int64_t t = reverse ? seq - 1 - step : step;
    Value xt = rows(xw, t * batch, (t + 1) * batch); // [batch, G H]
    // The recurrent product; GRU's candidate gate reads it separately.
    Value hr = c.op<MatmulOp>(h, rd, false, true);
    if (rb)
      hr = c.add(hr, rb);
    auto gate = [&](Value v, int64_t g) {
      if (!v)
        return Value();
      Shape s = shapeOf(v);
      SmallVector<int64_t> starts = {0, g * H}, limits = {s[0], (g + 1) * H},
                           strides = {1, 1};
      return c.op<SliceOp>(v, ArrayRef<int64_t>(starts),
                           ArrayRef<int64_t>(limits),
                           ArrayRef<int64_t>(strides));
    };
    Value newH, newC;
    if (cell == Cell::Rnn) {
      newH = activate(f[0], clipped(c.add(xt, hr)));
    } else if (cell == Cell::Gru) {
      Value z = activate(f[0], clipped(c.add(gate(xt, 0), gate(hr, 0))));
      Value rg = activate(f[0], clipped(c.add(gate(xt, 1), gate(hr, 1))));
      Value candidate;
      if (ctx.getInt("linear_before_reset", 0) != 0) {
        // r (.) (H R_h^T + Rb_h).
        candidate = c.add(gate(xt, 2), c.mul(rg, gate(hr, 2)));
      } else {
        // (r (.) H) R_h^T + Rb_h.
        Value rh = rows(rd, 2 * H, 3 * H); // [H, H]
        Value prod = c.op<MatmulOp>(c.mul(rg, h), rh, false, true);
        if (rb)
          prod = c.add(prod, rows(rb, 2 * H, 3 * H));
        candidate = c.add(gate(xt, 2), prod);
      }
      Value hh = activate(f[1], clipped(candidate));
      // (1 - z) (.) hh + z (.) H = hh + z (.) (H - hh).
      newH = c.add(hh, c.mul(z, c.op<SubOp>(h, hh)));
    } else {
      Value pre_i = c.add(gate(xt, 0), gate(hr, 0));
      Value pre_o = c.add(gate(xt, 1), gate(hr, 1));
      Value pre_f = c.add(gate(xt, 2), gate(hr, 2));
      Value pre_c = c.add(gate(xt, 3), gate(hr, 3));
      if (peep) {
        pre_i = c.add(pre_i, c.mul(pi, cState));
        pre_f = c.add(pre_f, c.mul(pf, cState));
      }
      Value ig = activate(f[0], clipped(pre_i));
      Value fg = ctx.getInt("input_forget", 0) != 0
                     ? c.op<SubOp>(c.scalar(ig, 1.0), ig)
                     : activate(f[0], clipped(pre_f));
      Value cand = activate(f[1], clipped(pre_c));
      newC = c.add(c.mul(fg, cState), c.mul(ig, cand));
      if (peep)
        pre_o = c.add(pre_o, c.mul(po, newC));
      Value og = activate(f[0], clipped(pre_o));
      newH = c.mul(og, activate(f[2], newC));
    }
    if (!newH || (cell == Cell::Lstm && !newC))
      return failure();
    if (lengths) {
      // 1 while t is inside the sequence, else 0: min(max(len - t, 0), 1)
      // for whole lengths. Past the end the state stays and Y is 0.
      Value left = c.op<SubOp>(lengths, c.scalar(lengths, double(t)));
      Value mask = c.min(c.max(left, c.scalar(left, 0.0)), c.scalar(left, 1.0));
      ys[t] = c.mul(newH, mask);
      newH = c.add(h, c.mul(mask, c.op<SubOp>(newH, h)));
      if (newC)
        newC = c.add(cState, c.mul(mask, c.op<SubOp>(newC, cState)));
    } else {
      ys[t] = newH;
    }
    h = newH;
    cState = newC;
    if (!h || !ys[t])
      return failure();
  }
  lastH = h;
  lastC = cState;
  return success();
}

LogicalResult RecurrentLayer::convert() {
  x = floatOperand(ctx, 0, "X");
  if (!x)
    return failure();
  element = cast<RankedTensorType>(x.getType()).getElementType();
  Shape xs = shapeOf(x);
  if (xs.size() != 3)
    return ctx.emitError() << "X must be rank 3, got " << shapeToString(xs);
  int64_t layout = ctx.getInt("layout", 0);
  if (layout != 0 && layout != 1)
    return ctx.emitError() << "layout must be 0 or 1, got " << layout;
  if (layout == 1) {
    x = c.op<TransposeOp>(x, ArrayRef<int64_t>{1, 0, 2});
    if (!x)
      return failure();
    xs = shapeOf(x);
  }
  seq = xs[0];
  batch = xs[1];
  hidden = ctx.getInt("hidden_size", 0);
  std::string dir = ctx.getString("direction", "forward");
  int64_t directions = dir == "bidirectional" ? 2 : 1;
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return ctx.emitError() << "direction '" << dir
                           << "' (expected forward, reverse or bidirectional)";
  if (const onnx::AttributeProto *a = ctx.getAttr("clip"))
    clip = a->f();
  if (failed(readActivations(directions)))
    return failure();
  auto optional = [&](unsigned i) {
    return ctx.hasInput(i) ? floatOperand(ctx, i, "a weight or state")
                           : Value();
  };
  w = floatOperand(ctx, 1, "W");
  r = floatOperand(ctx, 2, "R");
  b = optional(3);
  unsigned initialH = 5, initialC = 6, peepholes = 7;
  h0 = optional(initialH);
  if (cell == Cell::Lstm) {
    c0 = optional(initialC);
    peep = optional(peepholes);
  }
  if (!w || !r || (ctx.hasInput(3) && !b) ||
      (ctx.hasInput(initialH) && !h0))
    return failure();
  int64_t G = gatesOf(cell), inputSize = xs[2];
  // Every operand's shape, checked before any op is built on it.
  struct Expect {
    Value v;
    const char *name;
    Shape shape;
  };
  SmallVector<Expect> expected = {
      {w, "W", {directions, G * hidden, inputSize}},
      {r, "R", {directions, G * hidden, hidden}},
      {b, "B", {directions, 2 * G * hidden}},
      {h0, "initial_h", {directions, batch, hidden}},
      {c0, "initial_c", {directions, batch, hidden}},
      {peep, "P", {directions, 3 * hidden}}};
  if (hidden <= 0)
    return ctx.emitError() << "hidden_size must be given and positive";
  for (const Expect &e : expected) {
    if (!e.v)
      continue;
    // initial_h/initial_c follow the layout too.
    Value v = e.v;
    if (layout == 1 && (e.v == h0 || e.v == c0)) {
      v = c.op<TransposeOp>(e.v, ArrayRef<int64_t>{1, 0, 2});
      if (!v)
        return failure();
      (e.v == h0 ? h0 : c0) = v;
    }
    if (shapeOf(v) != e.shape)
      return ctx.emitError() << e.name << " is " << shapeToString(shapeOf(v))
                             << ", expected " << shapeToString(e.shape);
  }
  if (ctx.hasInput(4)) {
    // sequence_lens [batch]: masks the steps past each sequence's end.
    const HostTensor *known = ctx.getConstant(4);
    if (known && known->size() != batch)
      return ctx.emitError() << "sequence_lens has " << known->size()
                             << " entries for a batch of " << batch;
    bool whole = known != nullptr;
    for (int64_t i = 0; known && i < known->size(); ++i)
      whole &= known->getInt(i) == seq;
    if (!whole) {
      Value lens = ctx.getValue(4, ParamUse::Frozen);
      if (!lens)
        return failure();
      if (shapeOf(lens) != Shape{batch})
        return ctx.emitError()
               << "sequence_lens is " << shapeToString(shapeOf(lens))
               << ", expected [" << batch << "]";
      auto type = RankedTensorType::get({batch}, element);
      if (!isa<FloatType>(
              cast<RankedTensorType>(lens.getType()).getElementType()))
        lens = c.op<CastOp>(type, lens);
      lengths = lens ? ctx.reshape(lens, {batch, 1}).value_or(Value()) : Value();
      if (!lengths)
        return failure();
    }
  }

  // Y [seq, directions, batch, H], Y_h and Y_c [directions, batch, H].
  SmallVector<Value> perDirection, lastHs, lastCs;
  for (int64_t d = 0; d < directions; ++d) {
    bool reverse = dir == "reverse" || d == 1;
    SmallVector<Value> ys;
    Value lastH, lastC;
    if (failed(run(d, reverse, ys, lastH, lastC)))
      return failure();
    SmallVector<Value> steps;
    for (Value y : ys)
      steps.push_back(ctx.reshape(y, {1, 1, batch, hidden}).value_or(Value()));
    perDirection.push_back(concat(ctx, steps, 0));
    lastHs.push_back(ctx.reshape(lastH, {1, batch, hidden}).value_or(Value()));
    if (lastC)
      lastCs.push_back(ctx.reshape(lastC, {1, batch, hidden}).value_or(Value()));
  }
  Value y = concat(ctx, perDirection, 1);
  Value yh = concat(ctx, lastHs, 0);
  Value yc = cell == Cell::Lstm ? concat(ctx, lastCs, 0) : Value();
  if (!y || !yh || (cell == Cell::Lstm && !yc))
    return failure();
  if (layout == 1) {
    y = c.op<TransposeOp>(y, ArrayRef<int64_t>{2, 0, 1, 3});
    yh = c.op<TransposeOp>(yh, ArrayRef<int64_t>{1, 0, 2});
    if (yc)
      yc = c.op<TransposeOp>(yc, ArrayRef<int64_t>{1, 0, 2});
  }
  Value outputs[3] = {y, yh, yc};
  for (unsigned i = 0; i < ctx.getNumOutputs() && i < 3; ++i)
    if (!ctx.getNode().output(i).empty() &&
        (!outputs[i] || failed(ctx.setResult(i, outputs[i]))))
      return failure();
  return success();
}

LogicalResult convertRnn(NodeContext &ctx) {
  return RecurrentLayer(ctx, Cell::Rnn).convert();
}
LogicalResult convertGru(NodeContext &ctx) {
  return RecurrentLayer(ctx, Cell::Gru).convert();
}
LogicalResult convertLstm(NodeContext &ctx) {
  return RecurrentLayer(ctx, Cell::Lstm).convert();
}

} // namespace

void addRecurrentConverters(ConverterTable &table) {
  table.add("RNN", convertRnn);
  table.add("GRU", convertGru);
  table.add("LSTM", convertLstm);
}

} // namespace cleave::onnx_import
