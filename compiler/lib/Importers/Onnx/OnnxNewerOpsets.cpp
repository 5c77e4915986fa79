//===- OnnxNewerOpsets.cpp - Opset 18-28 models in their opset-17 form ----===//
//
// What opsets 18 to 28 (ONNX 1.23) changed beyond types, read from ONNX's
// own operator schemas, and its opset-17 form here (types new in
// them, float8, int4 and float4, are refused where a tensor holds them):
// - 18: ReduceL1/L2/LogSum/LogSumExp/Max/Mean/Min/Prod/SumSquare take their
//   axes as an input: moved to the `axes` attribute when known (an
//   initializer or a Constant), noop_with_empty_axes without axes becomes
//   an Identity; Split's num_outputs: dropped, opset 17 splits equally into
//   the outputs (an uneven split is refused by shape inference later);
//   Resize's antialias, axes and keep_aspect_ratio_policy: dropped at their
//   defaults, refused otherwise; Pad's axes input: refused;
//   GroupNormalization (scale and bias per group, as opset 18 defines
//   them): x reshaped to [N, G, rest], InstanceNormalization with the group
//   scale and bias, reshaped back; Mish: x tanh(softplus(x)); CenterCropPad,
//   Col2Im and the Bitwise ops: refused by name;
// - 19: Cast's, CastLike's and QuantizeLinear's `saturate` (float8 only):
//   dropped; AveragePool's dilations: dropped when all 1, refused
//   otherwise; Pad's `wrap` mode: refused;
// - 20: Gelu: its definition, x/2 (1 + erf(x / sqrt 2)) (which the
//   importer fuses back into one graph.gelu) or the tanh approximation;
//   GridSample's modes `linear` and `cubic`: opset 17's `bilinear` and
//   `bicubic` (4-D inputs); DFT's axis input: the attribute (default -2);
//   AffineGrid, ImageDecoder and the string ops: refused by name;
// - 21: GroupNormalization's scale and bias per channel: normalised by
//   group as above with unit scale, then the channels' scale and bias over
//   [N, C, rest]; QuantizeLinear/DequantizeLinear's block_size and
//   output_dtype: refused when set;
// - 22: types only (bfloat16 on more ops);
// - 23: RMSNormalization: its definition, x / sqrt(mean(x^2 over the axes
//   from `axis` on) + epsilon) x scale (a negative axis); QuantizeLinear's
//   precision: refused when set;
// - 24: Swish: x sigmoid(alpha x); Cast's and CastLike's round_mode
//   (float8e8m0 only): dropped;
// - 27: Range's stash_type: dropped;
// - 28: SwiGLU: Swish(A) B; SpaceToDepth's mode: DCR (opset 17's only
//   order) dropped, CRD refused;
// - GroupNormalization's stash_type (21): not carried over (cleave
//   normalises in fp32);
// - 23: Attention and RotaryEmbedding: kept, for their converters
//   (OnnxAttentionConverters.cpp), which know the operands' types;
// - TensorScatter, BitCast, CumProd, CausalConvWithState, LinearAttention
//   (23-27): refused by name.
//
//===----------------------------------------------------------------------===//

#include "OnnxNewerOpsets.h"
#include "OnnxTensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace cleave::onnx_import {
namespace {

/// The opset 17 reads of libonnx 1.12: IR version 8.
constexpr int64_t kIrVersion = 8;

class Downgrade {
public:
  Downgrade(onnx::GraphProto &graph, int64_t opset)
      : graph(graph), opset(opset) {
    for (const onnx::TensorProto &t : graph.initializer())
      tensors[t.name()] = &t;
    for (const onnx::NodeProto &node : graph.node()) {
      for (const std::string &out : node.output())
        producer[out] = &node;
      if (node.op_type() == "Constant" && node.output_size() == 1)
        for (const onnx::AttributeProto &a : node.attribute())
          if (a.name() == "value" && a.has_t())
            tensors[node.output(0)] = &a.t();
          else if (a.name() == "value_ints")
            constantInts[node.output(0)] =
                std::vector<int64_t>(a.ints().begin(), a.ints().end());
          else if (a.name() == "value_int")
            constantInts[node.output(0)] = {a.i()};
    }
  }

  llvm::Error run() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph.mutable_node());
    for (onnx::NodeProto &node : nodes) {
      for (onnx::AttributeProto &a : *node.mutable_attribute()) {
        if (a.has_g())
          if (llvm::Error e = Downgrade(*a.mutable_g(), opset).run())
            return e;
        for (onnx::GraphProto &g : *a.mutable_graphs())
          if (llvm::Error e = Downgrade(g, opset).run())
            return e;
      }
      if (llvm::Error e = rewrite(node))
        return e;
    }
    return llvm::Error::success();
  }

private:
  llvm::Error fail(const onnx::NodeProto &node, const llvm::Twine &why) {
    std::string name = node.name().empty() && node.output_size()
                           ? "<unnamed, output " + node.output(0) + ">"
                           : node.name();
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "node '" + name + "' (" + node.op_type() +
                                       ", opset " + llvm::Twine(opset) +
                                       "): " + why);
  }

  /// The values of integer tensor `name` when the model fixes them: an
  /// initializer, a Constant, or one of those through ops that only
  /// reshape or retype them (PyTorch's exporter without its optimiser
  /// writes a reduction's axes as a Constant reshaped).
  std::optional<std::vector<int64_t>> knownInts(const std::string &name,
                                                int depth = 0) {
    auto c = constantInts.find(name);
    if (c != constantInts.end())
      return c->second;
    auto t = tensors.find(name);
    if (t == tensors.end()) {
      static const llvm::StringSet<> passThrough = {
          "Reshape", "Squeeze", "Unsqueeze", "Identity", "Flatten", "Cast",
          "CastLike"};
      auto p = producer.find(name);
      if (p == producer.end() || depth > 8 || p->second->input_size() < 1 ||
          !passThrough.contains(p->second->op_type()))
        return std::nullopt;
      if (p->second->op_type() == "Cast")
        for (const onnx::AttributeProto &a : p->second->attribute())
          if (a.name() == "to" && isFloatType(a.i()))
            return std::nullopt;
      return knownInts(p->second->input(0), depth + 1);
    }
    llvm::Expected<HostTensor> value = readTensor(*t->second);
    if (!value) {
      llvm::consumeError(value.takeError());
      return std::nullopt;
    }
    if (value->isFloat())
      return std::nullopt;
    return value->ints;
  }

  static void eraseAttr(onnx::NodeProto &node, llvm::StringRef name) {
    auto *attrs = node.mutable_attribute();
    for (int i = attrs->size() - 1; i >= 0; --i)
      if (attrs->Get(i).name() == name)
        attrs->DeleteSubrange(i, 1);
  }
  static const onnx::AttributeProto *attr(const onnx::NodeProto &node,
                                          llvm::StringRef name) {
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  static onnx::AttributeProto *mutableAttr(onnx::NodeProto &node,
                                           llvm::StringRef name) {
    for (onnx::AttributeProto &a : *node.mutable_attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  /// Operators that exporters write as compositions at opset 22.
  static const llvm::StringSet<> &newIn23() {
    static const llvm::StringSet<> ops = {"TensorScatter"};
    return ops;
  }
  /// Operators of opsets 18-28 with no opset-17 form here.
  static const llvm::StringSet<> &noOpset17Form() {
    static const llvm::StringSet<> ops = {
        "CenterCropPad", "Col2Im", "BitwiseAnd", "BitwiseNot", "BitwiseOr",
        "BitwiseXor", "AffineGrid", "ImageDecoder", "RegexFullMatch",
        "StringConcat", "StringSplit", "TensorScatter", "BitCast", "CumProd", "CausalConvWithState",
        "LinearAttention"};
    return ops;
  }
  static void dropTrailingInputs(onnx::NodeProto &node, int keep) {
    while (node.input_size() > keep)
      node.mutable_input()->RemoveLast();
  }

  /// A node of the opset-17 form of `from`, named after it.
  onnx::NodeProto &addNode(const onnx::NodeProto &from, const char *op,
                           const std::vector<std::string> &inputs,
                           const std::string &output) {
    onnx::NodeProto &n = *graph.add_node();
    n.set_op_type(op);
    n.set_name(from.name().empty() ? "" : from.name() + "/" + op);
    for (const std::string &i : inputs)
      n.add_input(i);
    n.add_output(output);
    return n;
  }

  onnx::NodeProto &emit(const onnx::NodeProto &node) {
    return *graph.add_node() = node;
  }

  llvm::Error rewrite(onnx::NodeProto &node) {
    const std::string &op = node.op_type();
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!defaultDomain) {
      emit(node);
      return llvm::Error::success();
    }
    static const llvm::StringSet<> reductions = {
        "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp",
        "ReduceMax",  "ReduceMean", "ReduceMin",   "ReduceProd",
        "ReduceSumSquare"};
    if (reductions.contains(op))
      return reduction(node);
    if (op == "GroupNormalization")
      return opset >= 21 ? groupNormalizationPerChannel(node)
                         : groupNormalization(node);
    if (op == "Mish")
      return mish(node);
    if (op == "Gelu")
      return gelu(node);
    if (op == "Swish")
      return swish(node, node.input(0), node.output(0));
    if (op == "SwiGLU")
      return swiglu(node);
    if (op == "RMSNormalization")
      return rmsNormalization(node);
    if (op == "Attention" || op == "RotaryEmbedding") {
      onnx::NodeProto &kept = emit(node);
      kept.set_domain(kOpset23Domain);
      return llvm::Error::success();
    }
    if (op == "Range") {
      eraseAttr(node, "stash_type");
    } else if (op == "SpaceToDepth") {
      if (const onnx::AttributeProto *a = attr(node, "mode");
          a && a->s() != "DCR")
        return fail(node, "mode '" + a->s() + "' has no opset-17 form");
      eraseAttr(node, "mode");
    } else if (op == "Cast" || op == "CastLike") {
      eraseAttr(node, "saturate");
      eraseAttr(node, "round_mode");
    } else if (op == "QuantizeLinear" || op == "DequantizeLinear") {
      if (const onnx::AttributeProto *a = attr(node, "block_size"); a && a->i())
        return fail(node, "blocked quantization has no opset-17 form");
      if (const onnx::AttributeProto *a = attr(node, "output_dtype");
          a && a->i())
        return fail(node, "output_dtype has no opset-17 form; give a zero "
                          "point of the output type instead");
      if (const onnx::AttributeProto *a = attr(node, "precision"); a && a->i())
        return fail(node, "precision has no opset-17 form");
      eraseAttr(node, "saturate");
      eraseAttr(node, "block_size");
      eraseAttr(node, "output_dtype");
      eraseAttr(node, "precision");
    } else if (op == "AveragePool") {
      if (const onnx::AttributeProto *a = attr(node, "dilations")) {
        if (llvm::any_of(a->ints(), [](int64_t d) { return d != 1; }))
          return fail(node, "dilations other than 1 have no opset-17 form");
        eraseAttr(node, "dilations");
      }
    } else if (op == "GridSample") {
      if (onnx::AttributeProto *a = mutableAttr(node, "mode"))
        if (opset >= 20) {
          if (a->s() == "linear")
            a->set_s("bilinear");
          else if (a->s() == "cubic")
            a->set_s("bicubic");
        }
    } else if (op == "DFT" && opset >= 20) {
      return dftAxisInput(node);
    }
    if (op == "Split") {
      eraseAttr(node, "num_outputs");
    } else if (op == "Resize") {
      if (const onnx::AttributeProto *a = attr(node, "antialias"); a && a->i())
        return fail(node, "antialias has no opset-17 form");
      if (attr(node, "axes"))
        return fail(node, "axes has no opset-17 form");
      if (const onnx::AttributeProto *a =
              attr(node, "keep_aspect_ratio_policy");
          a && a->s() != "stretch")
        return fail(node, "keep_aspect_ratio_policy '" + a->s() +
                              "' has no opset-17 form");
      eraseAttr(node, "antialias");
      eraseAttr(node, "keep_aspect_ratio_policy");
    } else if (op == "Pad") {
      if (node.input_size() > 3 && !node.input(3).empty())
        return fail(node, "the axes input is not supported; pad every axis");
      if (const onnx::AttributeProto *a = attr(node, "mode");
          a && a->s() == "wrap")
        return fail(node, "mode 'wrap' has no opset-17 form");
    } else if (noOpset17Form().contains(op)) {
      return fail(node, "this operator has no opset-17 form cleave imports" +
                            llvm::Twine(opset >= 23 && newIn23().contains(op)
                                            ? "; export the model at opset "
                                              "22, where it is written as "
                                              "its composition"
                                            : ""));
    }
    emit(node);
    return llvm::Error::success();
  }

  llvm::Error reduction(onnx::NodeProto &node) {
    const onnx::AttributeProto *noop = attr(node, "noop_with_empty_axes");
    bool noopEmpty = noop && noop->i() != 0;
    std::optional<std::vector<int64_t>> axes;
    if (node.input_size() > 1 && !node.input(1).empty()) {
      axes = knownInts(node.input(1));
      if (!axes)
        return fail(node, "the axes input '" + node.input(1) +
                              "' must be known at import time (an "
                              "initializer or a Constant)");
    }
    eraseAttr(node, "noop_with_empty_axes");
    dropTrailingInputs(node, 1);
    if ((!axes || axes->empty()) && noopEmpty) {
      onnx::NodeProto &identity = emit(node);
      identity.set_op_type("Identity");
      identity.clear_attribute();
      return llvm::Error::success();
    }
    onnx::NodeProto &out = emit(node);
    if (axes && !axes->empty()) {
      onnx::AttributeProto *a = out.add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : *axes)
        a->add_ints(v);
    }
    return llvm::Error::success();
  }

  llvm::Error groupNormalization(const onnx::NodeProto &node) {
    const onnx::AttributeProto *groups = attr(node, "num_groups");
    if (!groups || groups->i() < 1)
      return fail(node, "needs a positive num_groups");
    if (node.input_size() != 3 || node.output_size() != 1)
      return fail(node, "needs X, scale and bias, and one output");
    const std::string &out = node.output(0);
    std::string shape = out + "/groups_shape", grouped = out + "/grouped",
                normed = out + "/normalised", xShape = out + "/x_shape";
    auto add = [&](const char *op, std::vector<std::string> inputs,
                   const std::string &output) -> onnx::NodeProto & {
      return addNode(node, op, inputs, output);
    };
    // [N, G, rest]: Reshape's 0 keeps N, -1 takes the rest.
    onnx::AttributeProto *target =
        add("Constant", {}, shape).add_attribute();
    target->set_name("value_ints");
    target->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : {int64_t(0), groups->i(), int64_t(-1)})
      target->add_ints(v);
    add("Reshape", {node.input(0), shape}, grouped);
    onnx::NodeProto &norm =
        add("InstanceNormalization", {grouped, node.input(1), node.input(2)},
            normed);
    if (const onnx::AttributeProto *eps = attr(node, "epsilon"))
      *norm.add_attribute() = *eps;
    add("Shape", {node.input(0)}, xShape);
    add("Reshape", {normed, xShape}, out);
    return llvm::Error::success();
  }

  /// Mish (new in 18): x tanh(softplus(x)).
  llvm::Error mish(const onnx::NodeProto &node) {
    if (node.input_size() != 1 || node.output_size() != 1)
      return fail(node, "needs one input and one output");
    const std::string &x = node.input(0), &out = node.output(0);
    std::string soft = out + "/softplus", tanh = out + "/tanh";
    auto add = [&](const char *op, std::vector<std::string> inputs,
                   const std::string &output) {
      addNode(node, op, inputs, output);
    };
    add("Softplus", {x}, soft);
    add("Tanh", {soft}, tanh);
    add("Mul", {x, tanh}, out);
    return llvm::Error::success();
  }

  /// A Constant node holding one float.
  void scalar(const onnx::NodeProto &from, const std::string &output,
              float value) {
    onnx::NodeProto &c = addNode(from, "Constant", {}, output);
    onnx::AttributeProto *a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(value);
  }

  /// A Constant node holding int64 values, of shape [values.size()].
  void int64s(const onnx::NodeProto &from, const std::string &output,
              std::vector<int64_t> values) {
    onnx::NodeProto &c = addNode(from, "Constant", {}, output);
    onnx::AttributeProto *a = c.add_attribute();
    a->set_name("value_ints");
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values)
      a->add_ints(v);
  }

  /// Gelu (new in 20) as its definition: x/2 (1 + erf(x / sqrt 2)), the
  /// composition exporters wrote before it (and the importer fuses into
  /// graph.gelu); approximate="tanh": x/2 (1 + tanh(sqrt(2/pi)
  /// (x + 0.044715 x^3))).
  llvm::Error gelu(const onnx::NodeProto &node) {
    if (node.input_size() != 1 || node.output_size() != 1)
      return fail(node, "needs one input and one output");
    const onnx::AttributeProto *approx = attr(node, "approximate");
    std::string mode = approx ? approx->s() : "none";
    if (mode != "none" && mode != "tanh")
      return fail(node, "approximate '" + mode + "' is not 'none' or 'tanh'");
    const std::string &x = node.input(0), &out = node.output(0);
    auto name = [&](const char *what) { return out + "/gelu_" + what; };
    auto add = [&](const char *op, std::vector<std::string> inputs,
                   const std::string &output) {
      addNode(node, op, inputs, output);
    };
    if (mode == "none") {
      scalar(node, name("sqrt2"), float(std::sqrt(2.0)));
      scalar(node, name("one"), 1.0f);
      scalar(node, name("half"), 0.5f);
      add("Div", {x, name("sqrt2")}, name("scaled"));
      add("Erf", {name("scaled")}, name("erf"));
      add("Add", {name("erf"), name("one")}, name("plus_one"));
      add("Mul", {x, name("plus_one")}, name("times_x"));
      add("Mul", {name("times_x"), name("half")}, out);
      return llvm::Error::success();
    }
    scalar(node, name("c"), float(std::sqrt(2.0 / M_PI)));
    scalar(node, name("k"), 0.044715f);
    scalar(node, name("one"), 1.0f);
    scalar(node, name("half"), 0.5f);
    add("Mul", {x, x}, name("x2"));
    add("Mul", {name("x2"), x}, name("x3"));
    add("Mul", {name("x3"), name("k")}, name("kx3"));
    add("Add", {x, name("kx3")}, name("inner"));
    add("Mul", {name("inner"), name("c")}, name("scaled"));
    add("Tanh", {name("scaled")}, name("tanh"));
    add("Add", {name("tanh"), name("one")}, name("plus_one"));
    add("Mul", {x, name("plus_one")}, name("times_x"));
    add("Mul", {name("times_x"), name("half")}, out);
    return llvm::Error::success();
  }

  /// Swish (new in 24): x sigmoid(alpha x), into `out`.
  llvm::Error swish(const onnx::NodeProto &node, const std::string &x,
                    const std::string &out) {
    const onnx::AttributeProto *alpha = attr(node, "alpha");
    float a = alpha ? alpha->f() : 1.0f;
    std::string scaled = x;
    if (a != 1.0f) {
      scalar(node, out + "/swish_alpha", a);
      addNode(node, "Mul", {x, out + "/swish_alpha"}, out + "/swish_ax");
      scaled = out + "/swish_ax";
    }
    addNode(node, "Sigmoid", {scaled}, out + "/swish_sigmoid");
    addNode(node, "Mul", {x, out + "/swish_sigmoid"}, out);
    return llvm::Error::success();
  }

  /// SwiGLU (new in 28): Swish(A) B.
  llvm::Error swiglu(const onnx::NodeProto &node) {
    if (node.input_size() != 2 || node.output_size() != 1)
      return fail(node, "needs A and B, and one output");
    const std::string &out = node.output(0);
    if (llvm::Error e = swish(node, node.input(0), out + "/swiglu_gate"))
      return e;
    addNode(node, "Mul", {out + "/swiglu_gate", node.input(1)}, out);
    return llvm::Error::success();
  }

  /// RMSNormalization (new in 23): X / sqrt(mean(X^2) + epsilon) x scale,
  /// the mean over the axes from `axis` to the last (given from the end:
  /// the rank is not known here).
  llvm::Error rmsNormalization(const onnx::NodeProto &node) {
    if (node.input_size() != 2 || node.output_size() != 1)
      return fail(node, "needs X and scale, and one output");
    const onnx::AttributeProto *axisAttr = attr(node, "axis");
    int64_t axis = axisAttr ? axisAttr->i() : -1;
    if (axis >= 0)
      return fail(node, "axis " + llvm::Twine(axis) +
                            " counted from the front has no opset-17 form "
                            "here; export with a negative axis");
    const onnx::AttributeProto *epsAttr = attr(node, "epsilon");
    float eps = epsAttr ? epsAttr->f() : 1e-5f;
    const std::string &x = node.input(0), &out = node.output(0);
    auto name = [&](const char *what) { return out + "/rms_" + what; };
    addNode(node, "Mul", {x, x}, name("squared"));
    onnx::NodeProto &mean =
        addNode(node, "ReduceMean", {name("squared")}, name("mean"));
    onnx::AttributeProto *axes = mean.add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    for (int64_t a = axis; a < 0; ++a)
      axes->add_ints(a);
    scalar(node, name("epsilon"), eps);
    addNode(node, "CastLike", {name("epsilon"), x}, name("epsilon_t"));
    addNode(node, "Add", {name("mean"), name("epsilon_t")}, name("plus_eps"));
    addNode(node, "Sqrt", {name("plus_eps")}, name("rms"));
    addNode(node, "Div", {x, name("rms")}, name("normalised"));
    addNode(node, "Mul", {name("normalised"), node.input(1)}, out);
    return llvm::Error::success();
  }

  /// GroupNormalization of opset 21 (scale and bias per channel):
  /// normalised by group with unit scale and zero bias, then each
  /// channel's scale and bias applied over [N, C, rest].
  llvm::Error groupNormalizationPerChannel(const onnx::NodeProto &node) {
    const onnx::AttributeProto *groups = attr(node, "num_groups");
    if (!groups || groups->i() < 1)
      return fail(node, "needs a positive num_groups");
    if (node.input_size() != 3 || node.output_size() != 1)
      return fail(node, "needs X, scale and bias, and one output");
    const std::string &x = node.input(0), &out = node.output(0);
    auto name = [&](const char *what) { return out + "/gn_" + what; };
    auto add = [&](const char *op, std::vector<std::string> inputs,
                   const std::string &output) -> onnx::NodeProto & {
      return addNode(node, op, inputs, output);
    };
    int64_t g = groups->i();
    // Unit scale and zero bias per group, in the input's type.
    for (auto [what, value] : {std::pair{"ones", 1.0f}, {"zeros", 0.0f}}) {
      onnx::NodeProto &c = add("Constant", {}, name(what) + "_f32");
      onnx::AttributeProto *a = c.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      onnx::TensorProto *t = a->mutable_t();
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_dims(g);
      for (int64_t i = 0; i < g; ++i)
        t->add_float_data(value);
      add("CastLike", {name(what) + "_f32", node.input(1)}, name(what));
    }
    int64s(node, name("groups_shape"), {0, g, -1});
    add("Reshape", {x, name("groups_shape")}, name("grouped"));
    onnx::NodeProto &norm = add(
        "InstanceNormalization",
        {name("grouped"), name("ones"), name("zeros")}, name("normalised"));
    if (const onnx::AttributeProto *eps = attr(node, "epsilon"))
      *norm.add_attribute() = *eps;
    add("Shape", {x}, name("x_shape"));
    add("Reshape", {name("normalised"), name("x_shape")}, name("ungrouped"));
    int64s(node, name("channels_shape"), {0, 0, -1});
    add("Reshape", {name("ungrouped"), name("channels_shape")},
        name("channels"));
    int64s(node, name("axis"), {1});
    add("Unsqueeze", {node.input(1), name("axis")}, name("scale"));
    add("Unsqueeze", {node.input(2), name("axis")}, name("bias"));
    add("Mul", {name("channels"), name("scale")}, name("scaled"));
    add("Add", {name("scaled"), name("bias")}, name("affine"));
    add("Reshape", {name("affine"), name("x_shape")}, out);
    return llvm::Error::success();
  }

  /// DFT of opset 20 takes its axis as an input (default -2): opset 17's
  /// attribute.
  llvm::Error dftAxisInput(onnx::NodeProto &node) {
    int64_t axis = -2;
    if (node.input_size() > 2 && !node.input(2).empty()) {
      std::optional<std::vector<int64_t>> known = knownInts(node.input(2));
      if (!known || known->size() != 1)
        return fail(node, "the axis input '" + node.input(2) +
                              "' must be one integer known at import time");
      axis = known->front();
    }
    dropTrailingInputs(node, 2);
    onnx::NodeProto &out = emit(node);
    onnx::AttributeProto *a = out.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
    return llvm::Error::success();
  }

  onnx::GraphProto &graph;
  int64_t opset;
  llvm::StringMap<const onnx::TensorProto *> tensors;
  llvm::StringMap<std::vector<int64_t>> constantInts;
  /// The node computing each value (the graph's own nodes, which run()
  /// keeps alive while it rewrites).
  llvm::StringMap<const onnx::NodeProto *> producer;
};

/// Whether a node of `graph` or of its subgraphs is in `domain`.
bool usesDomain(const onnx::GraphProto &graph, llvm::StringRef domain) {
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.domain() == domain)
      return true;
    for (const onnx::AttributeProto &a : node.attribute()) {
      if (a.has_g() && usesDomain(a.g(), domain))
        return true;
      for (const onnx::GraphProto &g : a.graphs())
        if (usesDomain(g, domain))
          return true;
    }
  }
  return false;
}

} // namespace

llvm::Error downgradeToOpset17(onnx::ModelProto &model, int64_t opset) {
  if (llvm::Error e = Downgrade(*model.mutable_graph(), opset).run())
    return e;
  if (usesDomain(model.graph(), kOpset23Domain)) {
    onnx::OperatorSetIdProto *import = model.add_opset_import();
    import->set_domain(kOpset23Domain);
    import->set_version(1);
  }
  for (onnx::OperatorSetIdProto &o : *model.mutable_opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      o.set_version(17);
  if (model.ir_version() > kIrVersion)
    model.set_ir_version(kIrVersion);
  return llvm::Error::success();
}

} // namespace cleave::onnx_import
