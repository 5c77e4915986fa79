//===- OnnxOpset18.cpp - Opset-18 models in their opset-17 form -----------===//
//
// What opset 18 changed, and its opset-17 form here:
// - ReduceL1/L2/LogSum/LogSumExp/Max/Mean/Min/Prod/SumSquare take their
//   axes as an input: moved to the `axes` attribute when known (an
//   initializer or a Constant), noop_with_empty_axes without axes becomes
//   an Identity;
// - Split's num_outputs: dropped, opset 17 splits equally into the
//   outputs (an uneven split is refused by shape inference later);
// - Resize's antialias, axes and keep_aspect_ratio_policy: dropped at their
//   defaults, refused otherwise; Pad's axes input: refused;
// - GroupNormalization (scale and bias per group, as opset 18 defines
//   them): x reshaped to [N, G, rest], InstanceNormalization with the
//   group scale and bias, reshaped back; Mish: x tanh(softplus(x));
// - CenterCropPad, Col2Im and the Bitwise ops: refused by name.
//
//===----------------------------------------------------------------------===//

#include "OnnxOpset18.h"
#include "OnnxTensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>
#include <vector>

namespace cleave::onnx_import {
namespace {

/// The opset 17 reads of libonnx 1.12: IR version 8.
constexpr int64_t kIrVersion = 8;

class Downgrade {
public:
  explicit Downgrade(onnx::GraphProto &graph) : graph(graph) {
    for (const onnx::TensorProto &t : graph.initializer())
      tensors[t.name()] = &t;
    for (const onnx::NodeProto &node : graph.node())
      if (node.op_type() == "Constant" && node.output_size() == 1)
        for (const onnx::AttributeProto &a : node.attribute())
          if (a.name() == "value" && a.has_t())
            tensors[node.output(0)] = &a.t();
          else if (a.name() == "value_ints")
            constantInts[node.output(0)] =
                std::vector<int64_t>(a.ints().begin(), a.ints().end());
  }

  llvm::Error run() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph.mutable_node());
    for (onnx::NodeProto &node : nodes) {
      for (onnx::AttributeProto &a : *node.mutable_attribute()) {
        if (a.has_g())
          if (llvm::Error e = Downgrade(*a.mutable_g()).run())
            return e;
        for (onnx::GraphProto &g : *a.mutable_graphs())
          if (llvm::Error e = Downgrade(g).run())
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
                                       ", opset 18): " + why);
  }

  std::optional<std::vector<int64_t>> knownInts(const std::string &name) {
    auto c = constantInts.find(name);
    if (c != constantInts.end())
      return c->second;
    auto t = tensors.find(name);
    if (t == tensors.end())
      return std::nullopt;
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
      return groupNormalization(node);
    if (op == "Mish")
      return mish(node);
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
    } else if (op == "CenterCropPad" || op == "Col2Im" ||
               llvm::StringRef(op).starts_with("Bitwise")) {
      return fail(node, "this operator has no opset-17 form cleave imports");
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

  onnx::GraphProto &graph;
  llvm::StringMap<const onnx::TensorProto *> tensors;
  llvm::StringMap<std::vector<int64_t>> constantInts;
};

} // namespace

llvm::Error downgradeOpset18(onnx::ModelProto &model) {
  if (llvm::Error e = Downgrade(*model.mutable_graph()).run())
    return e;
  for (onnx::OperatorSetIdProto &opset : *model.mutable_opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      opset.set_version(17);
  if (model.ir_version() > kIrVersion)
    model.set_ir_version(kIrVersion);
  return llvm::Error::success();
}

} // namespace cleave::onnx_import
