//===- OnnxGraphImporter.cpp - ONNX graph to graph dialect ----------------===//

#include "OnnxFoldedParameters.h"
#include "OnnxGraphImporter.h"

#include "OnnxNewerOpsets.h"

#include "llvm/Support/GlobPattern.h"
#include "OnnxGeluPattern.h"
#include "OnnxLayerNormPattern.h"
#include "OnnxShapeRules.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include "onnx/defs/schema.h"

#include <functional>
#include <map>

using namespace mlir;
using namespace cleave::graph;

namespace cleave::onnx_import {

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

OpBuilder &NodeContext::getBuilder() { return importer.getBuilder(); }

MLIRContext *NodeContext::getContext() { return &importer.getContext(); }

bool NodeContext::hasInput(unsigned i) const {
  return i < getNumInputs() && !node.input(i).empty();
}

const HostTensor *NodeContext::getConstant(unsigned i) {
  return hasInput(i) ? importer.getConstant(node.input(i)) : nullptr;
}

const HostTensor *NodeContext::getImportValue(unsigned i) {
  return hasInput(i) ? importer.getImportValue(node.input(i)) : nullptr;
}

std::shared_ptr<const HostTensor> NodeContext::getConstantRef(unsigned i) {
  return hasInput(i) ? importer.getConstantRef(node.input(i)) : nullptr;
}

bool NodeContext::allInputsConstant() {
  for (unsigned i = 0; i < getNumInputs(); ++i)
    if (hasInput(i) && !getConstant(i))
      return false;
  return true;
}

RankedTensorType NodeContext::getType(unsigned i) {
  return hasInput(i) ? importer.getType(node.input(i)) : RankedTensorType();
}

Value NodeContext::getValue(unsigned i, ParamUse use) {
  if (!hasInput(i)) {
    emitError() << "input " << i << " is missing";
    return {};
  }
  return importer.getValue(node.input(i), use);
}

FailureOr<Shape> NodeContext::getConstantInts(unsigned i, StringRef what) {
  const HostTensor *t = getConstant(i);
  if (!t || t->isFloat()) {
    emitError() << what << " (input " << i
                << ") must be integers known at import time";
    return failure();
  }
  return Shape(t->ints.begin(), t->ints.end());
}

const onnx::AttributeProto *NodeContext::getAttr(StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeContext::getInt(StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *attr = getAttr(name);
  return attr ? attr->i() : dflt;
}

FailureOr<int64_t> NodeContext::getAxis(int64_t dflt, int64_t rank) {
  llvm::Expected<int64_t> axis = normalizeAxis(getInt("axis", dflt), rank);
  if (!axis) {
    (void)fail(axis.takeError());
    return failure();
  }
  return *axis;
}

double NodeContext::getFloat(StringRef name, double dflt) const {
  const onnx::AttributeProto *attr = getAttr(name);
  return attr ? attr->f() : dflt;
}

std::string NodeContext::getString(StringRef name, StringRef dflt) const {
  const onnx::AttributeProto *attr = getAttr(name);
  return attr ? attr->s() : dflt.str();
}

std::optional<Shape> NodeContext::getInts(StringRef name) const {
  const onnx::AttributeProto *attr = getAttr(name);
  if (!attr)
    return std::nullopt;
  return Shape(attr->ints().begin(), attr->ints().end());
}

bool NodeContext::isOutputUsed(unsigned i) const {
  return i < getNumOutputs() && !node.output(i).empty() &&
         importer.getUseCount(node.output(i)) > 0;
}

LogicalResult NodeContext::setResult(unsigned i, Value value) {
  if (i >= getNumOutputs() || node.output(i).empty())
    return success();
  importer.bind(node.output(i), value);
  return success();
}

LogicalResult NodeContext::setResult(unsigned i, HostTensor tensor) {
  return setResult(i, std::make_shared<const HostTensor>(std::move(tensor)));
}

LogicalResult NodeContext::setResult(unsigned i,
                                     std::shared_ptr<const HostTensor> tensor) {
  if (i >= getNumOutputs() || node.output(i).empty())
    return success();
  importer.bind(node.output(i), std::move(tensor));
  return success();
}

LogicalResult NodeContext::fail(llvm::Error error) {
  emitError() << llvm::toString(std::move(error));
  return failure();
}

Value NodeContext::createConstant(const HostTensor &tensor) {
  return ConstantOp::create(
      getBuilder(), loc, cast<ElementsAttr>(toDenseAttr(getContext(), tensor)));
}

Value NodeContext::createSplat(RankedTensorType type, double value) {
  OpBuilder &b = getBuilder();
  Attribute element;
  if (auto floatType = dyn_cast<FloatType>(type.getElementType()))
    element = b.getFloatAttr(floatType, value);
  else
    element =
        b.getIntegerAttr(type.getElementType(), static_cast<int64_t>(value));
  auto attr = DenseElementsAttr::get(type, ArrayRef<Attribute>(element));
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
}

FailureOr<Value> NodeContext::reshape(Value value, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  auto result = RankedTensorType::get(shape, type.getElementType());
  FailureOr<ReshapeOp> op = create<ReshapeOp>(result, value);
  if (failed(op))
    return failure();
  return op->getResult();
}

//===----------------------------------------------------------------------===//
// Converter table
//===----------------------------------------------------------------------===//

const ConverterTable &getConverterTable() {
  static const ConverterTable table = [] {
    ConverterTable t;
    addComputeConverters(t);
    addActivationConverters(t);
    addMathConverters(t);
    addLayoutConverters(t);
    addRecurrentConverters(t);
    addQuantizeConverters(t);
    addSpectralConverters(t);
    addControlFlowConverters(t);
    addGridSampleConverter(t);
    addRoiAlignConverter(t);
    addIndexConverters(t);
    addLossConverters(t);
    addEinsumConverter(t);
    addAttentionConverters(t);
    addShapeConverters(t);
    return t;
  }();
  return table;
}

ConvertFn ConverterTable::lookup(const onnx::NodeProto &node) const {
  const std::string &domain = node.domain();
  if (domain.empty() || domain == "ai.onnx" || domain == kOpset23Domain)
    return lookup(node.op_type());
  return nullptr;
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(MLIRContext &ctx, const onnx::GraphProto &graph,
                             const InitializerMap &initializers,
                             const ImportOptions &options, StringRef fileName,
                             Location fileLoc)
    : ctx(ctx), graph(graph), initializers(initializers), options(options),
      fileName(fileName.str()), fileLoc(fileLoc), builder(&ctx),
      sourceBuilder(&ctx) {
  countUses(graph);
  noteExporterProvenance(graph);
  for (const onnx::ValueInfoProto &output : graph.output()) {
    graphOutputs.insert(output.name());
    ++useCounts[output.name()];
  }
}

void GraphImporter::noteExporterProvenance(const onnx::GraphProto &g) {
  for (const onnx::NodeProto &node : g.node()) {
    std::optional<std::string> fx =
        exporterNote(node, "pkg.torch.onnx.fx_node");
    if (!fx)
      continue;
    // "%linear = call_function[target=aten.linear](args = (%x, %p_w))".
    bool namesParameter = fx->find("%p_") != std::string::npos;
    for (const std::string &input : node.input()) {
      auto init = initializers.find(input);
      if (input.empty() || init == initializers.end() ||
          !isFloatType(init->second->data_type()))
        continue;
      bool &byParameter = readByParameterNode[input];
      byParameter = byParameter || namesParameter;
    }
  }
}

void GraphImporter::countUses(const onnx::GraphProto &g) {
  for (const onnx::NodeProto &node : g.node()) {
    for (const std::string &input : node.input())
      if (!input.empty())
        ++useCounts[input];
    // A body reads outer values by name: those are uses too.
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g())
        countUses(attr.g());
      for (const onnx::GraphProto &sub : attr.graphs())
        countUses(sub);
    }
  }
  for (const onnx::ValueInfoProto &output : g.output())
    if (&g != &graph)
      ++useCounts[output.name()];
}

std::string GraphImporter::describe(const onnx::NodeProto &node) const {
  std::string name = node.name();
  if (name.empty())
    name = node.output_size() ? "<unnamed, output " + node.output(0) + ">"
                              : "<unnamed>";
  return fileName + ": node '" + name + "' (" + node.op_type() + "): ";
}

Location GraphImporter::getNodeLoc(const onnx::NodeProto &node) {
  std::string name = node.name();
  if (name.empty() && node.output_size())
    name = node.output(0);
  return NameLoc::get(StringAttr::get(&ctx, name), fileLoc);
}

void GraphImporter::positionSourceBuilder() {
  if (lastSource)
    sourceBuilder.setInsertionPointAfter(lastSource);
  else
    sourceBuilder.setInsertionPointToStart(body);
}

LogicalResult GraphImporter::importInto(func::FuncOp func) {
  body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  if (failed(checkSupported()) || failed(createInputs()))
    return failure();

  // Nodes of a recognised LayerNorm or GELU wait for the last one, when all
  // the pattern's inputs are known.
  std::vector<LayerNormMatch> layerNorms = findLayerNorms(*this);
  std::vector<GeluMatch> gelus = findGelus(*this);
  llvm::DenseMap<int, std::function<LogicalResult()>> patternAt;
  llvm::DenseSet<int> deferred;
  auto defer = [&](ArrayRef<int> nodes, int last,
                   std::function<LogicalResult()> convert) {
    patternAt[last] = std::move(convert);
    for (int n : nodes)
      if (n != last)
        deferred.insert(n);
  };
  for (const LayerNormMatch &match : layerNorms)
    defer(match.nodes(), match.last(),
          [this, &match] { return convertLayerNorm(match); });
  for (const GeluMatch &match : gelus)
    defer(match.nodes(), match.last(),
          [this, &match] { return convertGelu(match); });
  for (int i = 0, e = graph.node_size(); i < e; ++i) {
    if (deferred.contains(i))
      continue;
    auto it = patternAt.find(i);
    LogicalResult result =
        it != patternAt.end() ? it->second() : convertNode(i);
    if (failed(result))
      return failure();
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = getValue(output.name(), ParamUse::Trainable);
    if (!value)
      return emitError(fileLoc)
             << "graph output '" << output.name() << "' is never computed";
    results.push_back(value);
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(
      FunctionType::get(&ctx, {}, ValueRange(results).getTypes()));
  if (!foldedTrainable.empty()) {
    InFlightDiagnostic diag =
        emitWarning(fileLoc)
        << foldedTrainable.size()
        << " initializer(s) are values the exporter's optimizer folded, "
           "not parameters of the PyTorch module (";
    for (size_t i = 0; i < foldedTrainable.size() && i < 4; ++i)
      diag << (i ? ", " : "") << "'" << foldedTrainable[i] << "'";
    diag << (foldedTrainable.size() > 4 ? ", ..." : "")
         << "): each trains as a tensor of its own, where PyTorch trains "
            "the table or buffer it came from (or nothing); export with "
            "torch.onnx.export(..., optimize=False) to keep the module's "
            "parameters, or freeze them (--frozen NAME)";
  }
  return success();
}

LogicalResult GraphImporter::checkSupported() {
  // One error for the whole model: a user porting a model wants the full
  // list, not one op per attempt.
  std::map<std::string, SmallVector<std::string>> unsupported;
  const ConverterTable &table = getConverterTable();
  for (const onnx::NodeProto &node : graph.node()) {
    const std::string &domain = node.domain();
    bool defaultDomain = domain.empty() || domain == "ai.onnx";
    if (table.lookup(node))
      continue;
    std::string key =
        defaultDomain ? node.op_type() : domain + "." + node.op_type();
    std::string name = node.name();
    if (name.empty())
      name =
          node.output_size() ? "<output " + node.output(0) + ">" : "<unnamed>";
    unsupported[key].push_back(name);
  }
  if (unsupported.empty())
    return success();
  InFlightDiagnostic diag = emitError(fileLoc) << "unsupported ONNX ops: ";
  bool first = true;
  for (const auto &[op, nodes] : unsupported) {
    diag << (first ? "" : ", ") << op << " (nodes: ";
    first = false;
    llvm::interleave(
        nodes, [&](const std::string &n) { diag << n; }, [&] { diag << ", "; });
    diag << ")";
  }
  for (const char *op : {"NonZero", "Unique", "NonMaxSuppression"})
    if (unsupported.count(op))
      diag << "; " << op
           << " has an output whose shape depends on the data, which a "
              "static plan cannot hold"
           << (std::string(op) == "NonZero"
                   ? " (Hugging Face's eager mixture-of-experts routing "
                     "writes it over the expert masks: export with "
                     "experts_implementation=\"batched_mm\" in the "
                     "model's config, which selects each token's experts "
                     "with TopK and a gather of their weights, or with "
                     "the MoE layers dense)"
                   : "");
  return diag;
}

LogicalResult GraphImporter::createInputs() {
  for (const onnx::ValueInfoProto &input : graph.input()) {
    const std::string &name = input.name();
    if (initializers.count(name))
      continue;
    auto fail = [&]() {
      return emitError(fileLoc) << "input '" << name << "' ";
    };
    if (!input.type().has_tensor_type())
      return fail() << "is not a tensor";
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    Type element = getElementType(&ctx, tensor.elem_type());
    if (!element)
      return fail() << "has unsupported element type "
                    << dataTypeName(tensor.elem_type());
    if (!tensor.has_shape())
      return fail() << "has no shape";
    Shape shape;
    for (const auto &[i, dim] : llvm::enumerate(tensor.shape().dim())) {
      if (!dim.has_dim_value() || dim.dim_value() < 0)
        return fail() << "has dynamic dimension " << i;
      shape.push_back(dim.dim_value());
    }
    positionSourceBuilder();
    auto op = InputOp::create(
        sourceBuilder, NameLoc::get(StringAttr::get(&ctx, name), fileLoc),
        RankedTensorType::get(shape, element), name);
    lastSource = op;
    values[name].value = op.getResult();
  }
  return success();
}

LogicalResult
GraphImporter::withNodeDiagnostics(const onnx::NodeProto &node,
                                   function_ref<LogicalResult()> convert) {
  SmallVector<std::string> errors;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return failure(); // let warnings and remarks through
      errors.push_back(diag.str());
      return success();
    });
    result = convert();
  }
  if (failed(result) && errors.empty())
    errors.push_back("cannot convert this node");
  std::string prefix = describe(node);
  Location loc = getNodeLoc(node);
  for (const std::string &message : errors)
    emitError(loc) << prefix << message;
  return success(succeeded(result) && errors.empty());
}

/// Checks that no required input is an empty name: the checker lets that
/// through for variadic inputs, and converters rely on required inputs.
static LogicalResult checkRequiredInputs(const onnx::NodeProto &node,
                                         Location loc) {
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), /*opset=*/17);
  if (!schema || schema->inputs().empty())
    return success();
  const auto &formals = schema->inputs();
  for (int i = 0, e = node.input_size(); i < e; ++i) {
    size_t formal = std::min<size_t>(i, formals.size() - 1);
    if (node.input(i).empty() &&
        formals[formal].GetOption() != onnx::OpSchema::Optional)
      return emitError(loc) << "required input " << i << " ('"
                            << formals[formal].GetName() << "') is empty";
  }
  return success();
}

LogicalResult GraphImporter::convertNode(int index) {
  return convertNode(graph.node(index));
}

LogicalResult GraphImporter::convertNode(const onnx::NodeProto &node) {
  ConvertFn convert = getConverterTable().lookup(node);
  NodeContext nodeCtx(*this, node, getNodeLoc(node));
  return withNodeDiagnostics(node, [&]() -> LogicalResult {
    // checkSupported saw the main graph; a body's ops are checked here.
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!convert)
      return emitError(nodeCtx.getLoc())
             << "unsupported ONNX op "
             << (defaultDomain ? "" : node.domain() + ".") << node.op_type()
             << " in a subgraph";
    if (failed(checkRequiredInputs(node, nodeCtx.getLoc())) ||
        failed(convert(nodeCtx)))
      return failure();
    for (const std::string &output : node.output())
      if (!output.empty() && getUseCount(output) && !values.count(output))
        return emitError(nodeCtx.getLoc())
               << "output '" << output << "' is used but was not computed";
    return success();
  });
}

LogicalResult GraphImporter::convertLayerNorm(const LayerNormMatch &match) {
  FailureOr<std::optional<SmallVector<int>>> remaining;
  if (failed(withNodeDiagnostics(graph.node(match.last()), [&] {
        remaining = buildLayerNorm(*this, match);
        return success(succeeded(remaining));
      })))
    return failure();
  SmallVector<int> rest = remaining->has_value() ? **remaining : match.nodes();
  for (int n : rest)
    if (failed(convertNode(n)))
      return failure();
  return success();
}

LogicalResult GraphImporter::convertGelu(const GeluMatch &match) {
  FailureOr<bool> built;
  if (failed(withNodeDiagnostics(graph.node(match.last()), [&] {
        built = buildGelu(*this, match);
        return success(succeeded(built));
      })))
    return failure();
  if (*built)
    return success();
  for (int n : match.nodes())
    if (failed(convertNode(n)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

GraphImporter::Entry *GraphImporter::lookup(StringRef name) {
  auto it = values.find(name);
  if (it != values.end())
    return &it->second;
  auto init = initializers.find(name);
  if (init == initializers.end())
    return nullptr;
  const onnx::TensorProto &tensor = *init->second;
  Entry entry;
  // Floating-point initializers are weights, except scalars (rank 0).
  // Integer ones hold shapes, indices and masks, which the walk folds; they
  // become graph.constant where compute reads them, and so do floating
  // scalars: the dynamo exporter writes the constants of an expression
  // (a Pow's exponent, a Where's fill value, an epsilon) as rank-0
  // initializers, and training them is wrong (a -inf fill learns NaN). A
  // learned single number is a tensor of one element (PReLU's slope is
  // [1]) and stays a weight. Those too large to fold, or stored externally
  // without their data, stay (frozen) parameters.
  int64_t elements = product(Shape(tensor.dims().begin(), tensor.dims().end()));
  bool scalar = tensor.dims_size() == 0 && trainableByUser(name) != true;
  if ((isFloatType(tensor.data_type()) && !scalar) ||
      tensor.data_location() == onnx::TensorProto::EXTERNAL ||
      elements > kMaxHostElements) {
    entry.param = &tensor;
  } else {
    llvm::Expected<HostTensor> host = readTensor(tensor);
    if (!host) {
      emitError(fileLoc) << "initializer '" << name
                         << "': " << llvm::toString(host.takeError());
      return nullptr;
    }
    entry.constant = std::make_shared<const HostTensor>(std::move(*host));
  }
  return &values.try_emplace(name, std::move(entry)).first->second;
}

std::optional<bool> GraphImporter::trainableByUser(StringRef name) const {
  auto matches = [&](const std::vector<std::string> &patterns) {
    for (const std::string &p : patterns) {
      // The tool checked every pattern; one that does not compile matches
      // nothing.
      llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(p);
      if (!glob) {
        llvm::consumeError(glob.takeError());
        continue;
      }
      if (glob->match(name))
        return true;
    }
    return false;
  };
  if (matches(options.trainable))
    return true;
  if (matches(options.frozen))
    return false;
  return std::nullopt;
}

const HostTensor *GraphImporter::getConstant(StringRef name) {
  Entry *entry = lookup(name);
  return entry ? entry->constant.get() : nullptr;
}

const HostTensor *GraphImporter::getImportValue(StringRef name) {
  Entry *entry = lookup(name);
  if (!entry)
    return nullptr;
  if (entry->constant)
    return entry->constant.get();
  if (!entry->paramValue && entry->param &&
      entry->param->data_location() != onnx::TensorProto::EXTERNAL &&
      product(Shape(entry->param->dims().begin(),
                    entry->param->dims().end())) <= kMaxHostElements) {
    llvm::Expected<HostTensor> host = readTensor(*entry->param);
    if (!host) {
      llvm::consumeError(host.takeError());
      return nullptr;
    }
    entry->paramValue = std::make_shared<const HostTensor>(std::move(*host));
  }
  return entry->paramValue.get();
}

std::shared_ptr<const HostTensor>
GraphImporter::getConstantRef(StringRef name) {
  Entry *entry = lookup(name);
  return entry ? entry->constant : nullptr;
}

RankedTensorType GraphImporter::getType(StringRef name) {
  Entry *entry = lookup(name);
  if (!entry)
    return {};
  if (entry->value)
    return cast<RankedTensorType>(entry->value.getType());
  if (entry->constant)
    return getTensorType(&ctx, *entry->constant);
  if (entry->param)
    return getTensorType(&ctx, *entry->param);
  return {};
}

Value GraphImporter::getValue(StringRef name, ParamUse use) {
  Entry *entry = lookup(name);
  if (!entry) {
    emitError(fileLoc) << "value '" << name << "' is not defined";
    return {};
  }
  if (entry->param)
    return materializeParam(name, *entry, use);
  if (!entry->value && entry->constant) {
    Location loc = NameLoc::get(StringAttr::get(&ctx, name), fileLoc);
    entry->value = ConstantOp::create(
        builder, loc, cast<ElementsAttr>(toDenseAttr(&ctx, *entry->constant)));
  }
  return entry->value;
}

Value GraphImporter::materializeParam(StringRef name, Entry &entry,
                                      ParamUse use) {
  if (entry.value) {
    if (use == ParamUse::Frozen)
      entry.value.getDefiningOp<ParamOp>().setFrozen(true);
    return entry.value;
  }
  const onnx::TensorProto &tensor = *entry.param;
  RankedTensorType type = getTensorType(&ctx, tensor);
  if (!type) {
    emitError(fileLoc) << "initializer '" << name << "' of data type "
                       << dataTypeName(tensor.data_type())
                       << " has no static tensor type";
    return {};
  }
  ElementsAttr value;
  if (options.keepWeights &&
      tensor.data_location() != onnx::TensorProto::EXTERNAL) {
    llvm::Expected<ElementsAttr> attr = readParameterValue(
        tensor, type,
        ownedTensors.contains(&tensor) ? weightOwner : nullptr);
    if (!attr) {
      emitError(fileLoc) << "initializer '" << name
                         << "': " << llvm::toString(attr.takeError());
      return {};
    }
    value = *attr;
  }
  bool frozen = use == ParamUse::Frozen || !isFloatType(tensor.data_type());
  // A tensor holding infinities or magnitudes of 1e30 and beyond is a
  // mask (an additive causal mask filled with -inf or the float minimum,
  // which the dynamo exporter folds into an initializer): training it
  // would move its zeros and keep its fills, so it is frozen unless
  // --trainable names it.
  if (!frozen && holdsMaskFill(tensor))
    frozen = true;
  if (!frozen && foldedByExporter(name) && type.getRank() > 0)
    foldedTrainable.push_back(name.str());
  if (std::optional<bool> user = trainableByUser(name);
      user && use != ParamUse::Frozen && isFloatType(tensor.data_type()))
    frozen = !*user;
  positionSourceBuilder();
  auto op = ParamOp::create(sourceBuilder,
                            NameLoc::get(StringAttr::get(&ctx, name), fileLoc),
                            type, name, frozen, value, /*aliases=*/ArrayAttr());
  lastSource = op;
  entry.value = op.getResult();
  return entry.value;
}

LogicalResult GraphImporter::checkShapes(const ShapeMap &onnxShapes) {
  bool ok = true;
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &output : node.output()) {
      auto theirs = onnxShapes.find(output);
      auto ours = values.find(output);
      // Values folded into a pattern (LayerNorm) have no shape of their own.
      if (theirs == onnxShapes.end() || ours == values.end())
        continue;
      const Entry &entry = ours->second;
      ArrayRef<int64_t> shape =
          entry.constant
              ? ArrayRef<int64_t>(entry.constant->shape)
              : cast<RankedTensorType>(entry.value.getType()).getShape();
      if (shape == ArrayRef<int64_t>(theirs->second))
        continue;
      emitError(getNodeLoc(node))
          << describe(node) << "computed shape " << shapeToString(shape)
          << " of '" << output << "' disagrees with ONNX shape inference ("
          << shapeToString(theirs->second) << ")";
      ok = false;
    }
  }
  // The model's own declaration of its outputs must agree as well.
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto ours = values.find(output.name());
    if (ours == values.end() || !output.type().has_tensor_type() ||
        !output.type().tensor_type().has_shape())
      continue;
    const Entry &entry = ours->second;
    RankedTensorType type = entry.constant
                                ? getTensorType(&ctx, *entry.constant)
                                : cast<RankedTensorType>(entry.value.getType());
    const onnx::TensorShapeProto &declared =
        output.type().tensor_type().shape();
    bool agrees = declared.dim_size() == type.getRank();
    for (int i = 0; agrees && i < declared.dim_size(); ++i)
      agrees = !declared.dim(i).has_dim_value() ||
               declared.dim(i).dim_value() == type.getDimSize(i);
    if (agrees)
      continue;
    InFlightDiagnostic diag =
        emitError(fileLoc) << "graph output '" << output.name()
                           << "' has shape " << shapeToString(type.getShape())
                           << ", but the model declares [";
    llvm::interleaveComma(declared.dim(), diag, [&](const auto &dim) {
      if (dim.has_dim_value())
        diag << dim.dim_value();
      else
        diag << (dim.dim_param().empty() ? "?" : dim.dim_param());
    });
    diag << "]";
    ok = false;
  }
  return success(ok);
}

void GraphImporter::bind(StringRef name, Value value) {
  Entry &entry = values[name];
  entry = Entry();
  entry.value = value;
}

void GraphImporter::bind(StringRef name,
                         std::shared_ptr<const HostTensor> tensor) {
  Entry &entry = values[name];
  entry = Entry();
  entry.constant = std::move(tensor);
}

} // namespace cleave::onnx_import
