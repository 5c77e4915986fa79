//===- OnnxGraphImporter.h - ONNX graph to graph dialect --------*- C++ -*-===//
//
// GraphImporter walks an ONNX graph (already checked, converted to opset 17
// and with its input dims bound) in topological order and keeps, per ONNX
// value, either a HostTensor known at import time or an MLIR value with a
// static type. Each node goes to the converter registered for its op type;
// converters see the node through NodeContext.
//
// Why host values: exporters compute Reshape, Expand and Slice targets at
// run time from Shape, and ONNX shape inference loses the rank of hundreds
// of values in ViT and GPT exports. Folding that arithmetic as the walk goes
// gives every op a static shape.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXGRAPHIMPORTER_H
#define CLEAVE_IMPORTERS_ONNX_ONNXGRAPHIMPORTER_H

#include "OnnxTensors.h"

#include "cleave/Importers/ImportOptions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <memory>
#include <optional>
#include <string>

namespace cleave::onnx_import {

class GraphImporter;

/// Initializers by name. Tensors with external data keep only their dims.
using InitializerMap = llvm::StringMap<const onnx::TensorProto *>;
/// Static shapes that ONNX shape inference found, by value name.
using ShapeMap = llvm::StringMap<Shape>;

/// A value a subgraph body reads or writes: known at import (`constant`)
/// or computed at run time (`value`).
struct BodyValue {
  mlir::Value value;
  std::shared_ptr<const HostTensor> constant;
};

/// How a node uses a parameter: batch-norm statistics are `frozen`.
enum class ParamUse { Trainable, Frozen };

/// One node under conversion: its inputs, attributes and results.
class NodeContext {
public:
  NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
              mlir::Location loc)
      : importer(importer), node(node), loc(loc) {}

  const onnx::NodeProto &getNode() const { return node; }
  llvm::StringRef getOpType() const { return node.op_type(); }
  mlir::Location getLoc() const { return loc; }
  mlir::OpBuilder &getBuilder();
  mlir::MLIRContext *getContext();

  //===--------------------------------------------------------------------===//
  // Inputs
  //===--------------------------------------------------------------------===//

  unsigned getNumInputs() const { return node.input_size(); }
  /// Whether input `i` is given (optional inputs may be absent or empty).
  bool hasInput(unsigned i) const;
  /// The value of input `i` when it is known at import time, else null.
  const HostTensor *getConstant(unsigned i);
  /// The same, or the values of a small float initializer (a weight to
  /// every other reader): for inputs that fix a shape, as Resize's scales.
  const HostTensor *getImportValue(unsigned i);
  std::shared_ptr<const HostTensor> getConstantRef(unsigned i);
  /// Whether every given input is known at import time.
  bool allInputsConstant();
  /// The static type of input `i`, without creating any op; null if absent.
  mlir::RankedTensorType getType(unsigned i);
  /// Input `i` as an MLIR value: creates the graph.param or graph.constant
  /// on first use. Null (after an error) if it cannot.
  mlir::Value getValue(unsigned i, ParamUse use = ParamUse::Trainable);
  /// Input `i` as integers known at import time (axes, shapes, pads);
  /// emits an error naming `what` if it is not.
  llvm::FailureOr<Shape> getConstantInts(unsigned i, llvm::StringRef what);

  //===--------------------------------------------------------------------===//
  // Attributes
  //===--------------------------------------------------------------------===//

  const onnx::AttributeProto *getAttr(llvm::StringRef name) const;
  int64_t getInt(llvm::StringRef name, int64_t dflt) const;
  /// The `axis` attribute (default `dflt`, negative counting from the end)
  /// as a dimension of a rank-`rank` tensor; an out-of-range axis is
  /// reported as this node's error.
  llvm::FailureOr<int64_t> getAxis(int64_t dflt, int64_t rank);
  double getFloat(llvm::StringRef name, double dflt) const;
  std::string getString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<Shape> getInts(llvm::StringRef name) const;

  //===--------------------------------------------------------------------===//
  // Results
  //===--------------------------------------------------------------------===//

  unsigned getNumOutputs() const { return node.output_size(); }
  /// Whether output `i` is read by a node or is a graph output.
  bool isOutputUsed(unsigned i) const;
  llvm::LogicalResult setResult(unsigned i, mlir::Value value);
  llvm::LogicalResult setResult(unsigned i, HostTensor tensor);
  llvm::LogicalResult setResult(unsigned i,
                                std::shared_ptr<const HostTensor> tensor);
  llvm::LogicalResult setResult(unsigned i, const BodyValue &value) {
    return value.constant ? setResult(i, value.constant)
                          : setResult(i, value.value);
  }
  /// Input `i` as a BodyValue: its constant when known, else its value.
  BodyValue getBodyValue(unsigned i) {
    if (std::shared_ptr<const HostTensor> c = getConstantRef(i))
      return {mlir::Value(), std::move(c)};
    return {getValue(i, ParamUse::Frozen), nullptr};
  }
  /// GraphImporter::importBody for this node's subgraph `body`.
  llvm::FailureOr<llvm::SmallVector<BodyValue>>
  importBody(const onnx::GraphProto &body, llvm::ArrayRef<BodyValue> inputs,
             llvm::StringRef prefix);

  /// Errors get "file.onnx: node 'name' (OpType): " prepended by the
  /// importer, so converters write only the message.
  mlir::InFlightDiagnostic emitError() { return mlir::emitError(loc); }
  llvm::LogicalResult fail(llvm::Error error);

  //===--------------------------------------------------------------------===//
  // Building ops
  //===--------------------------------------------------------------------===//

  /// A graph.constant holding `tensor`.
  mlir::Value createConstant(const HostTensor &tensor);
  /// A splat graph.constant of `type`.
  mlir::Value createSplat(mlir::RankedTensorType type, double value);

  /// Creates a graph op at the node's location. Result types are inferred
  /// and the op verified before it is kept, so that a shape mismatch is a
  /// diagnostic, not the fatal error of a failed inferring builder.
  template <typename OpTy, typename... Args>
  llvm::FailureOr<OpTy> create(Args &&...args);

  /// A graph.reshape of `value` to `shape` (none when it already has it).
  llvm::FailureOr<mlir::Value> reshape(mlir::Value value,
                                       llvm::ArrayRef<int64_t> shape);

private:
  GraphImporter &importer;
  const onnx::NodeProto &node;
  mlir::Location loc;
};

using ConvertFn = llvm::LogicalResult (*)(NodeContext &);

/// Converters by ONNX op type (opset-17 spelling, default domain).
class ConverterTable {
public:
  void add(llvm::StringRef opType, ConvertFn fn) { converters[opType] = fn; }
  ConvertFn lookup(llvm::StringRef opType) const {
    return converters.lookup(opType);
  }
  /// The converter of `node`: its op type in the default domain, or an
  /// opset-23 op kept in kOpset23Domain by the opset rewrite.
  ConvertFn lookup(const onnx::NodeProto &node) const;

private:
  llvm::StringMap<ConvertFn> converters;
};

/// Elementwise, linear-algebra, normalisation, convolution and reduction
/// operators (OnnxOpConverters.cpp).
void addComputeConverters(ConverterTable &table);
/// Convolution and pooling (OnnxConvConverters.cpp).
void addConvolutionConverters(ConverterTable &table);
/// Clip, HardSigmoid, HardSwish, LeakyRelu, PRelu, Elu, Softplus and
/// LogSoftmax as chains of graph ops (OnnxActivationConverters.cpp).
void addActivationConverters(ConverterTable &table);
/// Sin, Cos, Tan, Atan, Asin, Acos, Floor, Ceil, Round, Mod and Det.
void addMathConverters(ConverterTable &table);
/// Pad (constant), Tile, DepthToSpace, InstanceNormalization, Trilu and
/// CumSum as graph ops (OnnxLayoutConverters.cpp).
void addLayoutConverters(ConverterTable &table);
/// ArgMax, ArgMin, Hardmax, and GatherElements, GatherND, ScatterElements
/// and ScatterND of constant indices, as graph ops (OnnxIndexConverters.cpp).
void addIndexConverters(ConverterTable &table);
/// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as chains of graph
/// ops (OnnxLossConverters.cpp).
void addLossConverters(ConverterTable &table);
/// Einsum of one or two operands as transposes, sums and one batched
/// matmul (OnnxEinsumConverter.cpp).
void addEinsumConverter(ConverterTable &table);
/// RNN, GRU and LSTM unrolled over their static sequence
/// (OnnxRecurrentConverters.cpp).
void addRecurrentConverters(ConverterTable &table);
/// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear as float
/// arithmetic and casts (OnnxQuantizeConverters.cpp).
void addQuantizeConverters(ConverterTable &table);
/// If, Loop and Scan steered by values known at import: the branch taken,
/// the body unrolled (OnnxControlFlow.cpp).
void addControlFlowConverters(ConverterTable &table);
/// GridSample as gathers of run-time positions (OnnxGridSample.cpp).
void addGridSampleConverter(ConverterTable &table);
/// RoiAlign as gathers of bilinear samples (OnnxRoiAlign.cpp).
void addRoiAlignConverter(ConverterTable &table);
/// DFT and STFT as GEMMs with constant matrices, MelWeightMatrix as a
/// constant (OnnxSpectralConverters.cpp).
void addSpectralConverters(ConverterTable &table);
/// Attention and RotaryEmbedding of opset 23 as the graph ops they
/// compose (OnnxAttentionConverters.cpp).
void addAttentionConverters(ConverterTable &table);
/// Data movement and shape arithmetic (OnnxShapeOpConverters.cpp).
void addShapeConverters(ConverterTable &table);
/// Every converter; built once.
const ConverterTable &getConverterTable();

struct LayerNormMatch;
struct GeluMatch;

/// Imports one ONNX graph into the body of a function.
class GraphImporter {
public:
  /// `fileName` names the model in messages; `fileLoc` is the location of
  /// the file, under which every node gets a NameLoc.
  GraphImporter(mlir::MLIRContext &ctx, const onnx::GraphProto &graph,
                const InitializerMap &initializers,
                const ImportOptions &options, llvm::StringRef fileName,
                mlir::Location fileLoc);

  /// Initializers whose provenance the exporter's notes give (the file
  /// importer freezes or names them: noteFoldedInitializers): no guess
  /// from their readers, no warning here.
  void setProvenanceKnown(const llvm::StringSet<> &names) {
    for (const auto &name : names)
      readByParameterNode[name.getKey()] = true;
  }
  /// `owner` keeps `tensors` (initializers) alive: the resource blobs of
  /// large weights among them alias their bytes and hold `owner`. Other
  /// weights (those version conversion made) are copied.
  void setWeightOwner(
      std::shared_ptr<const void> owner,
      const google::protobuf::RepeatedPtrField<onnx::TensorProto> &tensors) {
    weightOwner = std::move(owner);
    for (const onnx::TensorProto &t : tensors)
      ownedTensors.insert(&t);
  }

  /// Fills the (empty) body of `func` and sets its result types.
  llvm::LogicalResult importInto(mlir::func::FuncOp func);

  /// After the import: every node output that ONNX shape inference typed
  /// statically must have that shape here, or a converter has a bug; and
  /// the graph outputs must match the shapes the model declares.
  llvm::LogicalResult checkShapes(const ShapeMap &onnxShapes);

  //===--------------------------------------------------------------------===//
  // Values by ONNX name (for NodeContext and the pattern matchers)
  //===--------------------------------------------------------------------===//

  const HostTensor *getConstant(llvm::StringRef name);
  std::shared_ptr<const HostTensor> getConstantRef(llvm::StringRef name);
  /// getConstant, or a small float initializer's values (what an op reads
  /// as a parameter of its own, such as Resize's scales, not as a weight).
  const HostTensor *getImportValue(llvm::StringRef name);
  mlir::RankedTensorType getType(llvm::StringRef name);
  mlir::Value getValue(llvm::StringRef name, ParamUse use);
  void bind(llvm::StringRef name, mlir::Value value);
  void bind(llvm::StringRef name, std::shared_ptr<const HostTensor> tensor);
  unsigned getUseCount(llvm::StringRef name) const {
    return useCounts.lookup(name);
  }
  bool isGraphOutput(llvm::StringRef name) const {
    return graphOutputs.contains(name);
  }

  /// Imports the nodes of `body`, a subgraph attribute (If's branch, a
  /// Loop or Scan body), once into the current function: its inputs bound
  /// to `inputs`, every name it defines prefixed with `prefix` so that
  /// repeated imports do not collide, and outer names read as they are
  /// (ONNX's lexical scope). Its outputs, by position.
  llvm::FailureOr<llvm::SmallVector<BodyValue>>
  importBody(const onnx::GraphProto &body, llvm::ArrayRef<BodyValue> inputs,
             llvm::StringRef prefix);

  mlir::MLIRContext &getContext() { return ctx; }
  mlir::OpBuilder &getBuilder() { return builder; }
  const onnx::GraphProto &getGraph() const { return graph; }
  mlir::Location getNodeLoc(const onnx::NodeProto &node);

private:
  /// What is known about one ONNX value.
  struct Entry {
    std::shared_ptr<const HostTensor> constant;
    mlir::Value value;
    /// A parameter whose graph.param is created on first use.
    const onnx::TensorProto *param = nullptr;
    /// A small parameter's values, read when an op needs them at import.
    std::shared_ptr<const HostTensor> paramValue;
  };

  llvm::LogicalResult checkSupported();
  llvm::LogicalResult createInputs();
  llvm::LogicalResult convertNode(int index);
  llvm::LogicalResult convertNode(const onnx::NodeProto &node);
  /// Counts the reads of `g`'s nodes and of its subgraphs' nodes.
  void countUses(const onnx::GraphProto &g);
  llvm::LogicalResult convertLayerNorm(const LayerNormMatch &match);
  llvm::LogicalResult convertGelu(const GeluMatch &match);
  /// Runs `convert` with the node's errors prefixed by its description.
  llvm::LogicalResult
  withNodeDiagnostics(const onnx::NodeProto &node,
                      llvm::function_ref<llvm::LogicalResult()> convert);
  Entry *lookup(llvm::StringRef name);
  mlir::Value materializeParam(llvm::StringRef name, Entry &entry,
                               ParamUse use);
  /// Places `sourceBuilder` after the last input or parameter.
  void positionSourceBuilder();
  std::string describe(const onnx::NodeProto &node) const;

  mlir::MLIRContext &ctx;
  const onnx::GraphProto &graph;
  const InitializerMap &initializers;
  std::shared_ptr<const void> weightOwner;
  llvm::DenseSet<const onnx::TensorProto *> ownedTensors;
  const ImportOptions &options;
  /// What --trainable (true) or --frozen (false) says of initializer
  /// `name`; none when neither names it.
  /// Whether the exporter's notes (readByParameterNode) say `name` is no
  /// parameter of the PyTorch module but a value its optimizer folded.
  bool foldedByExporter(llvm::StringRef name) const {
    auto it = readByParameterNode.find(name);
    return it != readByParameterNode.end() && !it->second;
  }
  std::optional<bool> trainableByUser(llvm::StringRef name) const;
  std::string fileName;
  mlir::Location fileLoc;
  /// Inserts operators at the end of the body.
  mlir::OpBuilder builder;
  /// Inserts inputs and parameters, which lead the body.
  mlir::OpBuilder sourceBuilder;
  mlir::Block *body = nullptr;
  mlir::Operation *lastSource = nullptr;
  llvm::StringMap<Entry> values;
  llvm::StringMap<unsigned> useCounts;
  /// PyTorch's dynamo exporter notes on each node the FX node it came
  /// from, whose arguments name the module's parameters `%p_...`. An
  /// initializer read only by nodes whose FX node names none is a value
  /// the exporter's optimizer folded: from buffers (rotary cos/sin tables
  /// from inv_freq, which PyTorch does not train) or from parameters (a
  /// position embedding gathered at fixed positions, a class token
  /// expanded over the batch, which PyTorch trains through the table).
  /// The file cannot tell which, so they train as tensors of their own
  /// and the import warns, naming them and `optimize=False`.
  /// Initializer name -> whether some reader names a parameter.
  llvm::StringMap<bool> readByParameterNode;
  void noteExporterProvenance(const onnx::GraphProto &g);
  /// Trainable parameters that foldedByExporter() names, for the warning.
  llvm::SmallVector<std::string> foldedTrainable;
  llvm::StringSet<> graphOutputs;
};

//===----------------------------------------------------------------------===//
// NodeContext::create
//===----------------------------------------------------------------------===//

template <typename OpTy, typename... Args>
llvm::FailureOr<OpTy> NodeContext::create(Args &&...args) {
  mlir::OpBuilder &b = getBuilder();
  OpTy op;
  if constexpr (OpTy::template hasTrait<mlir::OpTrait::InferTypeOpAdaptor>()) {
    // Build with placeholder result types (the builder asserts their
    // count), then replace them with the inferred ones.
    mlir::OperationState state(loc, OpTy::getOperationName());
    llvm::SmallVector<mlir::Type, 1> placeholder;
    if constexpr (OpTy::template hasTrait<mlir::OpTrait::OneResult>())
      placeholder.push_back(b.getNoneType());
    OpTy::build(b, state, mlir::TypeRange(placeholder),
                std::forward<Args>(args)...);
    state.types.clear();
    llvm::SmallVector<mlir::Type> types;
    if (mlir::failed(OpTy::inferReturnTypes(
            b.getContext(), loc, state.operands,
            state.attributes.getDictionary(b.getContext()),
            state.getRawProperties(), state.regions, types)))
      return mlir::failure();
    state.addTypes(types);
    op = llvm::cast<OpTy>(b.create(state));
  } else {
    op = OpTy::create(b, loc, std::forward<Args>(args)...);
  }
  if (mlir::failed(mlir::verify(op))) {
    op->erase();
    return mlir::failure();
  }
  return op;
}

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXGRAPHIMPORTER_H
