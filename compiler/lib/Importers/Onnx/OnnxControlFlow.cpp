//===- OnnxControlFlow.cpp - ONNX If, Loop and Scan, resolved at import ---===//
//
// cleave plans static graphs: every tensor's shape fixed, every op run
// once per step. ONNX's control flow fits that when what steers it is
// known at import, which is how exporters leave it for fixed-size
// models: an If on a flag folded from shapes, a Loop over a trip count
// the export fixed, a Scan over a sequence of static length. Then If
// imports the branch taken, and Loop and Scan unroll their body once per
// iteration (RNN-style, as OnnxRecurrentConverters.cpp does for RNN, GRU
// and LSTM), each copy under its own names; loop-carried values that stay
// known at import (counters, conditions) fold as they go. Control flow
// steered by run-time values is refused with the reason. The subgraph
// import itself (GraphImporter::importBody) is defined here too.
//
//===----------------------------------------------------------------------===//

#include "OnnxCompose.h"
#include "OnnxGraphImporter.h"
#include "OnnxTensors.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {

//===----------------------------------------------------------------------===//
// Subgraph import
//===----------------------------------------------------------------------===//

/// Renames the references of `g`'s nodes (and of their subgraphs') by
/// `rename`; `g`'s own inputs and node outputs too when `defines`.
static void renameGraph(onnx::GraphProto &g,
                        llvm::function_ref<std::string(const std::string &)>
                            rename,
                        bool defines) {
  if (defines)
    for (onnx::ValueInfoProto &input : *g.mutable_input())
      input.set_name(rename(input.name()));
  for (onnx::NodeProto &node : *g.mutable_node()) {
    for (std::string &input : *node.mutable_input())
      if (!input.empty())
        input = rename(input);
    if (defines)
      for (std::string &output : *node.mutable_output())
        if (!output.empty())
          output = rename(output);
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_g())
        renameGraph(*attr.mutable_g(), rename, false);
      for (onnx::GraphProto &sub : *attr.mutable_graphs())
        renameGraph(sub, rename, false);
    }
  }
  for (onnx::ValueInfoProto &output : *g.mutable_output())
    output.set_name(rename(output.name()));
}

FailureOr<SmallVector<BodyValue>>
GraphImporter::importBody(const onnx::GraphProto &body,
                          ArrayRef<BodyValue> inputs, StringRef prefix) {
  if (static_cast<size_t>(body.input_size()) != inputs.size())
    return emitError(fileLoc) << "the subgraph '" << body.name() << "' has "
                              << body.input_size() << " inputs, "
                              << inputs.size() << " are given";
  // The names the body defines get the prefix; the rest are outer values.
  llvm::StringSet<> local;
  for (const onnx::ValueInfoProto &input : body.input())
    local.insert(input.name());
  for (const onnx::NodeProto &node : body.node())
    for (const std::string &output : node.output())
      if (!output.empty())
        local.insert(output);
  std::string pre = prefix.str();
  auto rename = [&](const std::string &name) {
    return local.contains(name) ? pre + name : name;
  };
  // Kept alive while its nodes convert (NodeContext refers to them).
  auto copy = std::make_unique<onnx::GraphProto>(body);
  renameGraph(*copy, rename, true);
  countUses(*copy);
  for (auto [info, value] : llvm::zip(copy->input(), inputs)) {
    if (value.constant)
      bind(info.name(), value.constant);
    else
      bind(info.name(), value.value);
  }
  for (const onnx::NodeProto &node : copy->node())
    if (failed(convertNode(node)))
      return failure();
  SmallVector<BodyValue> outputs;
  for (const onnx::ValueInfoProto &output : copy->output()) {
    Entry *entry = lookup(output.name());
    if (!entry)
      return emitError(fileLoc) << "subgraph output '" << output.name()
                                << "' is never computed";
    if (entry->constant && !entry->value)
      outputs.push_back({Value(), entry->constant});
    else if (Value v = getValue(output.name(), ParamUse::Frozen))
      outputs.push_back({v, nullptr});
    else
      return failure();
  }
  return outputs;
}

FailureOr<SmallVector<BodyValue>>
NodeContext::importBody(const onnx::GraphProto &body,
                        ArrayRef<BodyValue> inputs, StringRef prefix) {
  return importer.importBody(body, inputs, prefix);
}

//===----------------------------------------------------------------------===//
// If, Loop, Scan
//===----------------------------------------------------------------------===//

namespace {

/// Bodies are unrolled into the graph: past this many copies a model is
/// better served by fixing the loop in the export.
constexpr int64_t kMaxIterations = 4096;

/// The subgraph attribute `name`, or an error.
const onnx::GraphProto *getBody(NodeContext &ctx, StringRef name) {
  const onnx::AttributeProto *attr = ctx.getAttr(name);
  if (!attr || !attr->has_g()) {
    ctx.emitError() << "needs the subgraph attribute '" << name << "'";
    return nullptr;
  }
  return &attr->g();
}

/// The prefix of the names in copy `k` of this node's body.
std::string bodyPrefix(NodeContext &ctx, StringRef what, int64_t k) {
  const onnx::NodeProto &node = ctx.getNode();
  std::string base = node.name().empty() ? node.output(0) : node.name();
  return base + "/" + what.str() + std::to_string(k) + "/";
}

BodyValue scalarConstant(int32_t dtype, int64_t v) {
  HostTensor t = HostTensor::zeros(dtype, {});
  t.ints[0] = v;
  return {Value(), std::make_shared<const HostTensor>(std::move(t))};
}

/// A body value as an MLIR value (constants materialised).
Value asValue(NodeContext &ctx, const BodyValue &v) {
  return v.constant ? ctx.createConstant(*v.constant) : v.value;
}

/// Shape of a body value.
Shape shapeOfBody(const BodyValue &v) {
  return v.constant ? v.constant->shape : shapeOf(v.value);
}

/// The values of one scan output, one per iteration, stacked along `axis`
/// (a new axis of size `values.size()`).
Value stack(NodeContext &ctx, ArrayRef<BodyValue> values, int64_t axis) {
  SmallVector<Value> parts;
  for (const BodyValue &v : values) {
    Shape shape = shapeOfBody(v);
    if (axis < 0 || axis > static_cast<int64_t>(shape.size())) {
      ctx.emitError() << "scan output axis " << axis
                      << " is out of range for a per-iteration value of rank "
                      << shape.size();
      return {};
    }
    shape.insert(shape.begin() + axis, 1);
    Value x = asValue(ctx, v);
    parts.push_back(x ? ctx.reshape(x, shape).value_or(Value()) : Value());
  }
  return concat(ctx, parts, axis);
}

/// If: the branch the condition, known at import, selects.
LogicalResult convertIf(NodeContext &ctx) {
  const HostTensor *cond = ctx.getConstant(0);
  if (!cond || cond->size() != 1)
    return ctx.emitError() << "the condition must be known at import time "
                              "(its branches may compute different shapes); "
                              "export with it folded, or bind the dimensions "
                              "it depends on with --dim";
  bool taken = cond->getInt(0) != 0;
  const onnx::GraphProto *branch =
      getBody(ctx, taken ? "then_branch" : "else_branch");
  if (!branch)
    return failure();
  FailureOr<SmallVector<BodyValue>> outputs =
      ctx.importBody(*branch, {}, bodyPrefix(ctx, taken ? "then" : "else", 0));
  if (failed(outputs))
    return failure();
  if (outputs->size() != ctx.getNumOutputs())
    return ctx.emitError() << "the branch has " << outputs->size()
                           << " outputs, the node " << ctx.getNumOutputs();
  for (auto [i, v] : llvm::enumerate(*outputs))
    if (failed(ctx.setResult(i, v)))
      return failure();
  return success();
}

/// Loop: for (i = 0; i < M && cond; ++i) body, unrolled; M and the
/// conditions the body computes must be known at import.
LogicalResult convertLoop(NodeContext &ctx) {
  const onnx::GraphProto *body = getBody(ctx, "body");
  if (!body)
    return failure();
  std::optional<int64_t> tripCount;
  if (ctx.hasInput(0)) {
    const HostTensor *m = ctx.getConstant(0);
    if (!m || m->size() != 1)
      return ctx.emitError() << "the trip count M must be known at import "
                                "time (the loop is unrolled)";
    tripCount = m->getInt(0);
  }
  bool useCond = ctx.hasInput(1);
  bool cond = true;
  if (useCond) {
    const HostTensor *c = ctx.getConstant(1);
    if (!c || c->size() != 1)
      return ctx.emitError() << "the initial condition must be known at "
                                "import time (the loop is unrolled)";
    cond = c->getInt(0) != 0;
  }
  if (!tripCount && !useCond)
    return ctx.emitError() << "has neither a trip count nor a condition: it "
                              "would run forever";
  int64_t carried = static_cast<int64_t>(ctx.getNumInputs()) - 2;
  int64_t scans = body->output_size() - 1 - carried;
  if (carried < 0 || scans < 0 || body->input_size() != carried + 2)
    return ctx.emitError() << "the body's " << body->input_size()
                           << " inputs and " << body->output_size()
                           << " outputs do not match the loop's "
                           << ctx.getNumInputs() << " inputs";
  SmallVector<BodyValue> state;
  for (int64_t k = 0; k < carried; ++k) {
    state.push_back(ctx.getBodyValue(2 + k));
    if (!state.back().constant && !state.back().value)
      return failure();
  }
  std::vector<SmallVector<BodyValue>> scanned(scans);
  int64_t i = 0;
  for (; (!tripCount || i < *tripCount) && cond; ++i) {
    if (i == kMaxIterations)
      return ctx.emitError() << "runs more than " << kMaxIterations
                             << " iterations, the most this importer unrolls";
    SmallVector<BodyValue> inputs = {
        scalarConstant(onnx::TensorProto::INT64, i),
        scalarConstant(onnx::TensorProto::BOOL, 1)};
    inputs.append(state.begin(), state.end());
    FailureOr<SmallVector<BodyValue>> outputs =
        ctx.importBody(*body, inputs, bodyPrefix(ctx, "iter", i));
    if (failed(outputs))
      return failure();
    if (useCond) {
      const BodyValue &c = (*outputs)[0];
      if (!c.constant || c.constant->size() != 1)
        return ctx.emitError() << "the condition the body computes in "
                                  "iteration "
                               << i
                               << " is not known at import time (the loop "
                                  "is unrolled)";
      cond = c.constant->getInt(0) != 0;
    }
    for (int64_t k = 0; k < carried; ++k)
      state[k] = (*outputs)[1 + k];
    for (int64_t k = 0; k < scans; ++k)
      scanned[k].push_back((*outputs)[1 + carried + k]);
  }
  if (i == 0 && scans > 0)
    return ctx.emitError() << "runs no iteration: its scan outputs would be "
                              "empty";
  for (int64_t k = 0; k < carried; ++k)
    if (failed(ctx.setResult(k, state[k])))
      return failure();
  for (int64_t k = 0; k < scans; ++k) {
    if (!ctx.isOutputUsed(carried + k))
      continue;
    Value y = stack(ctx, scanned[k], 0);
    if (!y || failed(ctx.setResult(carried + k, y)))
      return failure();
  }
  return success();
}

/// A per-input or per-output attribute list (axes, directions), `dflt`
/// for each when absent.
FailureOr<Shape> perValue(NodeContext &ctx, StringRef name, int64_t n,
                          int64_t dflt) {
  Shape values = ctx.getInts(name).value_or(Shape(n, dflt));
  if (static_cast<int64_t>(values.size()) != n) {
    ctx.emitError() << "'" << name << "' has " << values.size()
                    << " values for " << n << " scan values";
    return failure();
  }
  return values;
}

/// Scan (opset 9 and later): the body once per element of the scanned
/// sequences, unrolled, with its state carried from one step to the next.
LogicalResult convertScan(NodeContext &ctx) {
  const onnx::GraphProto *body = getBody(ctx, "body");
  if (!body)
    return failure();
  int64_t numScanIn = ctx.getInt("num_scan_inputs", -1);
  int64_t numIn = ctx.getNumInputs();
  int64_t numState = numIn - numScanIn;
  int64_t numScanOut = body->output_size() - numState;
  if (numScanIn < 1 || numState < 0 || numScanOut < 0 ||
      body->input_size() != numIn)
    return ctx.emitError() << "num_scan_inputs " << numScanIn
                           << " does not fit the node's " << numIn
                           << " inputs and the body's " << body->input_size()
                           << " inputs and " << body->output_size()
                           << " outputs";
  FailureOr<Shape> inAxes = perValue(ctx, "scan_input_axes", numScanIn, 0);
  FailureOr<Shape> inDirs =
      perValue(ctx, "scan_input_directions", numScanIn, 0);
  FailureOr<Shape> outAxes = perValue(ctx, "scan_output_axes", numScanOut, 0);
  FailureOr<Shape> outDirs =
      perValue(ctx, "scan_output_directions", numScanOut, 0);
  if (failed(inAxes) || failed(inDirs) || failed(outAxes) || failed(outDirs))
    return failure();
  // The scanned inputs, their axes normalised, all of one length.
  SmallVector<Value> sequences;
  int64_t length = -1;
  for (int64_t j = 0; j < numScanIn; ++j) {
    Value x = ctx.getValue(numState + j, ParamUse::Frozen);
    if (!x)
      return failure();
    Shape shape = shapeOf(x);
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t &axis = (*inAxes)[j];
    if (axis < -rank || axis >= rank)
      return ctx.emitError() << "scan input " << j << ": axis " << axis
                             << " is out of range for rank " << rank;
    axis = axis < 0 ? axis + rank : axis;
    if (length >= 0 && shape[axis] != length)
      return ctx.emitError() << "scan input " << j << " has " << shape[axis]
                             << " steps, scan input 0 " << length;
    length = shape[axis];
    sequences.push_back(x);
  }
  if (length == 0)
    return ctx.emitError() << "scans sequences of no step: its outputs would "
                              "be empty";
  if (length > kMaxIterations)
    return ctx.emitError() << "scans " << length << " steps, more than the "
                           << kMaxIterations << " this importer unrolls";
  SmallVector<BodyValue> state;
  for (int64_t k = 0; k < numState; ++k) {
    state.push_back(ctx.getBodyValue(k));
    if (!state.back().constant && !state.back().value)
      return failure();
  }
  std::vector<SmallVector<BodyValue>> scanned(numScanOut);
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<BodyValue> inputs(state.begin(), state.end());
    for (int64_t j = 0; j < numScanIn; ++j) {
      Shape shape = shapeOf(sequences[j]);
      int64_t axis = (*inAxes)[j];
      int64_t at = (*inDirs)[j] ? length - 1 - t : t;
      Shape starts(shape.size(), 0), limits = shape, strides(shape.size(), 1);
      starts[axis] = at;
      limits[axis] = at + 1;
      Value slice = compose<SliceOp>(ctx, sequences[j],
                                     ArrayRef<int64_t>(starts),
                                     ArrayRef<int64_t>(limits),
                                     ArrayRef<int64_t>(strides));
      shape.erase(shape.begin() + axis);
      Value step = slice ? ctx.reshape(slice, shape).value_or(Value()) : Value();
      if (!step)
        return failure();
      inputs.push_back({step, nullptr});
    }
    FailureOr<SmallVector<BodyValue>> outputs =
        ctx.importBody(*body, inputs, bodyPrefix(ctx, "step", t));
    if (failed(outputs))
      return failure();
    for (int64_t k = 0; k < numState; ++k)
      state[k] = (*outputs)[k];
    for (int64_t k = 0; k < numScanOut; ++k)
      scanned[k].push_back((*outputs)[numState + k]);
  }
  for (int64_t k = 0; k < numState; ++k)
    if (failed(ctx.setResult(k, state[k])))
      return failure();
  for (int64_t k = 0; k < numScanOut; ++k) {
    if ((*outDirs)[k])
      std::reverse(scanned[k].begin(), scanned[k].end());
    int64_t rank = static_cast<int64_t>(shapeOfBody(scanned[k][0]).size()) + 1;
    int64_t axis = (*outAxes)[k] < 0 ? (*outAxes)[k] + rank : (*outAxes)[k];
    Value y = stack(ctx, scanned[k], axis);
    if (!y || failed(ctx.setResult(numState + k, y)))
      return failure();
  }
  return success();
}

} // namespace

void addControlFlowConverters(ConverterTable &table) {
  table.add("If", convertIf);
  table.add("Loop", convertLoop);
  table.add("Scan", convertScan);
}

} // namespace cleave::onnx_import
