//===- OnnxShapeArithmetic.cpp - Fold shape arithmetic in a model ---------===//

#include "OnnxShapeArithmetic.h"

#include "OnnxConstantFolding.h"
#include "OnnxShapeRules.h"
#include "OnnxTensors.h"

#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace cleave::onnx_import {
namespace {

/// A static shape from a value's type, if it has one.
std::optional<Shape> staticShape(const onnx::TypeProto &type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return std::nullopt;
  Shape shape;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    if (!dim.has_dim_value())
      return std::nullopt;
    shape.push_back(dim.dim_value());
  }
  return shape;
}

const onnx::AttributeProto *attribute(const onnx::NodeProto &node,
                                      const char *name) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t intAttribute(const onnx::NodeProto &node, const char *name,
                     int64_t otherwise) {
  const onnx::AttributeProto *a = attribute(node, name);
  return a ? a->i() : otherwise;
}

/// What a node computes from known inputs, or nothing (not foldable).
std::optional<HostTensor>
evaluate(const onnx::NodeProto &node,
         const std::map<std::string, HostTensor> &known,
         const std::map<std::string, Shape> &shapes) {
  const std::string &op = node.op_type();
  std::vector<const HostTensor *> in;
  for (const std::string &name : node.input()) {
    auto it = known.find(name);
    in.push_back(name.empty() || it == known.end() ? nullptr : &it->second);
  }
  auto allKnown = [&](size_t n) {
    if (in.size() < n)
      return false;
    for (size_t i = 0; i < n; ++i)
      if (!in[i])
        return false;
    return true;
  };
  auto value = [](llvm::Expected<HostTensor> v) -> std::optional<HostTensor> {
    if (!v) {
      llvm::consumeError(v.takeError());
      return std::nullopt;
    }
    return std::move(*v);
  };
  if (op == "Constant") {
    const onnx::AttributeProto *a = attribute(node, "value");
    if (!a || !a->has_t() || a->t().data_type() != onnx::TensorProto::INT64)
      return std::nullopt;
    return value(readTensor(a->t()));
  }
  if (op == "Shape") {
    if (node.input_size() < 1)
      return std::nullopt;
    auto it = shapes.find(node.input(0));
    if (it == shapes.end() || attribute(node, "start") ||
        attribute(node, "end"))
      return std::nullopt;
    return HostTensor::int64Vector(it->second);
  }
  if (op == "Gather" && allKnown(2)) {
    int64_t axis = intAttribute(node, "axis", 0);
    if (axis < 0)
      axis += static_cast<int64_t>(in[0]->shape.size());
    return value(foldGather(*in[0], *in[1], axis));
  }
  if (op == "Concat" && allKnown(in.size()) && !in.empty()) {
    int64_t axis = intAttribute(node, "axis", 0);
    if (axis < 0)
      axis += static_cast<int64_t>(in[0]->shape.size());
    return value(foldConcat(in, axis));
  }
  if ((op == "Unsqueeze" || op == "Squeeze") && allKnown(1)) {
    // Axes: an attribute before opset 13, an input after.
    std::optional<Shape> axes;
    if (const onnx::AttributeProto *a = attribute(node, "axes"))
      axes = Shape(a->ints().begin(), a->ints().end());
    else if (in.size() > 1 && in[1])
      axes = Shape(in[1]->ints.begin(), in[1]->ints.end());
    else if (in.size() > 1)
      return std::nullopt;
    HostTensor out = *in[0];
    llvm::Expected<Shape> shape =
        op == "Unsqueeze"
            ? (axes ? computeUnsqueeze(out.shape, *axes)
                    : llvm::Expected<Shape>(llvm::createStringError(
                          llvm::inconvertibleErrorCode(), "no axes")))
            : computeSqueeze(out.shape, axes ? &*axes : nullptr);
    if (!shape) {
      llvm::consumeError(shape.takeError());
      return std::nullopt;
    }
    out.shape = *shape;
    return out;
  }
  if (op == "Cast" && allKnown(1)) {
    int64_t to = intAttribute(node, "to", 0);
    if (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32)
      return std::nullopt;
    return value(foldCast(*in[0], static_cast<int32_t>(to)));
  }
  static const std::map<std::string, HostBinaryOp> binary = {
      {"Add", HostBinaryOp::Add},
      {"Sub", HostBinaryOp::Sub},
      {"Mul", HostBinaryOp::Mul},
      {"Div", HostBinaryOp::Div}};
  if (auto it = binary.find(op); it != binary.end() && allKnown(2) &&
                                 !in[0]->isFloat() && !in[1]->isFloat())
    return value(foldBinary(it->second, *in[0], *in[1]));
  return std::nullopt;
}

onnx::TensorProto toInitializer(const std::string &name,
                                const HostTensor &value) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(value.dtype == onnx::TensorProto::INT32
                      ? onnx::TensorProto::INT32
                      : onnx::TensorProto::INT64);
  for (int64_t d : value.shape)
    t.add_dims(d);
  for (int64_t v : value.ints) {
    if (t.data_type() == onnx::TensorProto::INT32)
      t.add_int32_data(static_cast<int32_t>(v));
    else
      t.add_int64_data(v);
  }
  return t;
}

} // namespace

int foldShapeArithmetic(onnx::ModelProto &model) {
  int folded = 0;
  for (int round = 0; round < 8; ++round) {
    try {
      onnx::shape_inference::InferShapes(model);
    } catch (const std::exception &) {
    }
    onnx::GraphProto &graph = *model.mutable_graph();
    std::map<std::string, Shape> shapes;
    std::map<std::string, HostTensor> known;
    for (const onnx::ValueInfoProto &v : graph.input())
      if (std::optional<Shape> s = staticShape(v.type()))
        shapes[v.name()] = *s;
    for (const onnx::ValueInfoProto &v : graph.value_info())
      if (std::optional<Shape> s = staticShape(v.type()))
        shapes[v.name()] = *s;
    for (const onnx::TensorProto &t : graph.initializer()) {
      shapes[t.name()] = Shape(t.dims().begin(), t.dims().end());
      if (t.data_type() == onnx::TensorProto::INT64 ||
          t.data_type() == onnx::TensorProto::INT32)
        if (llvm::Expected<HostTensor> v = readTensor(t))
          known[t.name()] = std::move(*v);
        else
          llvm::consumeError(v.takeError());
    }
    std::set<int> done;
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto &node = graph.node(i);
      if (node.output_size() != 1 || !node.domain().empty())
        continue;
      std::optional<HostTensor> v = evaluate(node, known, shapes);
      if (!v || v->isFloat() || !fitsOnHost(v->shape))
        continue;
      shapes[node.output(0)] = v->shape;
      known[node.output(0)] = std::move(*v);
      done.insert(i);
    }
    if (done.empty())
      break;
    // The folded nodes' results become initializers (those still read),
    // and the nodes go.
    std::set<std::string> read;
    for (int i = 0; i < graph.node_size(); ++i)
      if (!done.count(i))
        for (const std::string &name : graph.node(i).input())
          read.insert(name);
    for (const onnx::ValueInfoProto &v : graph.output())
      read.insert(v.name());
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < graph.node_size(); ++i) {
      if (!done.count(i)) {
        *kept.Add() = graph.node(i);
        continue;
      }
      const std::string &out = graph.node(i).output(0);
      if (read.count(out))
        *graph.add_initializer() = toInitializer(out, known[out]);
    }
    graph.mutable_node()->Swap(&kept);
    folded += static_cast<int>(done.size());
  }
  return folded;
}

} // namespace cleave::onnx_import
