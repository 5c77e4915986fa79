//===- OnnxImporter.cpp - ONNX model files to the graph dialect -----------===//
//
// The driver: read and parse the file, check it with libonnx, bind the
// symbolic input dims, convert opsets 1-16 to 17, hand the graph to
// GraphImporter, and cross-check its shapes with ONNX shape inference.
//
// Weights stored as external data are read first (OnnxExternalData.h).
// Weights never pass through libonnx. The checker would try to open
// external data files (which the test models deliberately lack), and the
// version converter drops the external-data markers, so the driver moves
// every floating-point or external initializer out of the model and
// declares it as a typed graph input instead: a "skeleton" that libonnx can
// check, convert and infer without the weights. The importer then reads the
// initializers from the original protobuf.
//
//===----------------------------------------------------------------------===//

#include "cleave/Importers/OnnxImporter.h"

#include "OnnxExternalData.h"
#include "OnnxGraphImporter.h"
#include "OnnxFoldedParameters.h"
#include "OnnxTiedWeights.h"
#include "OnnxNewerOpsets.h"

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include "OnnxShapeArithmetic.h"

#include <climits>

using namespace mlir;
using namespace cleave::onnx_import;

namespace {

constexpr int64_t kTargetOpset = 17;
constexpr int64_t kOldestOpset = 1;

/// Dim names that --batch and --seq bind (exact, case-sensitive).
constexpr llvm::StringLiteral kBatchNames[] = {"batch", "batch_size", "N",
                                               "n",     "b",          "bs"};
constexpr llvm::StringLiteral kSeqNames[] = {
    "seq", "seq_len", "sequence", "sequence_length", "seqlen", "T", "tokens"};

/// Loads one model file and imports it; keeps the protobufs alive for the
/// GraphImporter.
class OnnxFileImporter {
public:
  OnnxFileImporter(MLIRContext &ctx, StringRef path,
                   const cleave::ImportOptions &options)
      : ctx(ctx), path(path.str()),
        fileName(llvm::sys::path::filename(path).str()), options(options),
        fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run();

private:
  /// File-level errors: the location names the file.
  InFlightDiagnostic error() { return emitError(fileLoc); }
  LogicalResult load();
  void constantWeightsToInitializers();
  void noteFoldedInitializers(const std::vector<UnfoldedParameter> &unfolded);
  /// The initializers noteFoldedInitializers froze or named.
  llvm::StringSet<> notedFolded;
  /// Tied parameters' other state_dict names (tiedAliases), put on their
  /// graph.param ops after the import.
  TiedAliases tied;
  void setTiedAliases(func::FuncOp func);
  void makeSkeleton();
  LogicalResult check();
  FailureOr<int64_t> getOpset();
  /// A skeleton of opset 18 to kNewestOpset in its opset-17 form
  /// (OnnxNewerOpsets.h); others as they are.
  LogicalResult downgradeNewerOpsets();
  std::optional<int64_t> resolveDim(StringRef name) const;
  LogicalResult bindDims();
  LogicalResult convertVersion(int64_t opset);
  ShapeMap inferOnnxShapes();

  MLIRContext &ctx;
  std::string path, fileName;
  /// The caller's options, and the Constant-node weights frozen by name
  /// (constantWeightsToInitializers).
  cleave::ImportOptions options;
  Location fileLoc;
  onnx::ModelProto model;
  /// The initializers, moved out of `model`; shared, because the resource
  /// blobs of large weights alias their bytes (readParameterValue).
  std::shared_ptr<google::protobuf::RepeatedPtrField<onnx::TensorProto>>
      initializerProtos = std::make_shared<
          google::protobuf::RepeatedPtrField<onnx::TensorProto>>();
  onnx::ModelProto skeleton;
  /// The skeleton after version conversion (if it needed one).
  onnx::ModelProto converted;
  const onnx::ModelProto *prepared = &skeleton;
  InitializerMap initializers;
};

} // namespace

LogicalResult OnnxFileImporter::load() {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error() << "cannot read the file: " << buffer.getError().message();
  if ((*buffer)->getBufferSize() > static_cast<size_t>(INT_MAX))
    return error() << "the file is over 2 GiB; store the weights as external "
                      "data";
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize())))
    return error() << "not an ONNX model (the protobuf does not parse)";
  // An empty or unrelated protobuf parses as an empty ModelProto.
  if (!model.has_graph())
    return error() << "not an ONNX model (it has no graph)";
  llvm::Expected<ExternalDataReport> external = loadExternalData(
      *model.mutable_graph(), llvm::sys::path::parent_path(path));
  if (!external)
    return error() << llvm::toString(external.takeError());
  // A weight-less graph (its data file left behind on purpose, as the test
  // models are) still plans; the user is told it starts from scratch.
  if (!external->missingFiles.empty()) {
    InFlightDiagnostic diag = emitWarning(fileLoc)
                              << external->tensorsWithoutData
                              << " initializer(s) have their data in ";
    llvm::interleaveComma(external->missingFiles, diag,
                          [&](const std::string &f) { diag << "'" << f << "'"; });
    diag << ", not found beside the model: they import without values and "
            "a run initialises them from scratch";
  }
  constantWeightsToInitializers();
  // Before the tied-weight check: a restored parameter is compared in the
  // layout PyTorch has it.
  restoreExporterParameters(*model.mutable_graph());
  restoreRemovedBiases(*model.mutable_graph());
  std::vector<UnfoldedParameter> unfolded =
      unfoldFoldedParameters(*model.mutable_graph());
  noteFoldedInitializers(unfolded);
  TiedParameters traced = traceTiedParameters(model.graph());
  tied = std::move(traced.aliases);
  if (!traced.unaccounted.empty()) {
    InFlightDiagnostic diag =
        emitWarning(fileLoc)
        << traced.unaccounted.size()
        << " parameter(s) of the PyTorch module are neither in the file nor "
           "read by any node (";
    for (size_t i = 0; i < traced.unaccounted.size() && i < 4; ++i)
      diag << (i ? ", " : "") << "'" << traced.unaccounted[i] << "'";
    diag << (traced.unaccounted.size() > 4 ? ", ..." : "")
         << "): tied to a weight the exporter kept under another name, or "
            "never called; a checkpoint cannot hold them, so a strict "
            "load_state_dict needs them from the module";
  }
  std::vector<std::string> gone = parametersNotInFile(model.graph());
  if (!gone.empty()) {
    InFlightDiagnostic diag =
        emitWarning(fileLoc)
        << gone.size()
        << " parameter(s) of the PyTorch module are not in the file (";
    for (size_t i = 0; i < gone.size() && i < 4; ++i)
      diag << (i ? ", " : "") << "'" << gone[i] << "'";
    diag << (gone.size() > 4 ? ", ..." : "")
         << "): the exporter's optimizer removed them (a bias still all "
            "zeros, added to nothing), so they do not train here; export "
            "with torch.onnx.export(..., optimize=False) to keep them";
  }
  std::vector<EqualWeights> equal = findEqualWeights(model.graph());
  if (!equal.empty()) {
    InFlightDiagnostic diag = emitWarning(fileLoc)
                              << equal.size()
                              << " pair(s) of initializers hold equal values ";
    for (size_t i = 0; i < equal.size() && i < 4; ++i)
      diag << (i ? ", " : "(") << "'" << equal[i].first << "' "
           << (equal[i].transposed ? "= transpose of" : "=") << " '"
           << equal[i].second << "'";
    diag << (equal.size() > 4 ? ", ...)" : ")")
         << ": if the model ties them, the exporter split them and each "
            "now trains apart; tie them in the export, or freeze one "
            "(--frozen NAME)";
  }
  return success();
}

namespace {
/// `name` as a glob that matches it alone: '\\' escapes the pattern
/// characters.
std::string exactGlob(llvm::StringRef name) {
  std::string pattern;
  for (char c : name) {
    if (llvm::StringRef("*?[]\\{}").contains(c))
      pattern.push_back('\\');
    pattern.push_back(c);
  }
  return pattern;
}
} // namespace

/// What the exporter's optimizer folded from the module's state, as its
/// notes say (foldedSources): a value from buffers and constants only is
/// no parameter of the module (a causal mask, the rotary tables from
/// `inv_freq`), so it is frozen (--trainable overrides); one still holding
/// a parameter read at fixed positions (GPT-2's position table at
/// positions 0..S-1), and the tables unfoldFoldedParameters gathered,
/// train as those rows do in PyTorch but under names of their own, which
/// the warning gives with their parameter.
void OnnxFileImporter::noteFoldedInitializers(
    const std::vector<UnfoldedParameter> &unfolded) {
  const onnx::GraphProto &graph = model.graph();
  FoldedSources folded = foldedSources(graph);
  std::vector<std::pair<std::string, std::string>> rows, unclear;
  for (const onnx::TensorProto &t : graph.initializer()) {
    auto it = folded.find(t.name());
    // A weight the optimizer only transposed is restoreExporterParameters'
    // (one left, its data elsewhere, is still that weight).
    if (it == folded.end() || !isFloatType(t.data_type()) ||
        it->second.others == 0)
      continue;
    notedFolded.insert(t.name());
    if (it->second.parameters.empty())
      options.frozen.push_back(exactGlob(t.name()));
    else if (holdsOneValue(t))
      unclear.push_back({t.name(), it->second.parameters.front()});
    else
      rows.push_back({t.name(), it->second.parameters.front()});
  }
  for (const UnfoldedParameter &u : unfolded)
    if (u.gathered)
      rows.push_back({u.parameter + ".rows_read", u.parameter});
  auto list = [](InFlightDiagnostic &diag,
                 const std::vector<std::pair<std::string, std::string>> &l) {
    for (size_t i = 0; i < l.size() && i < 4; ++i)
      diag << (i ? ", " : "") << "'" << l[i].first << "' from '"
           << l[i].second << "'";
    diag << (l.size() > 4 ? ", ..." : "");
  };
  if (!rows.empty()) {
    InFlightDiagnostic diag =
        emitWarning(fileLoc)
        << rows.size()
        << " initializer(s) hold rows of a parameter the exporter's "
           "optimizer read at fixed positions and folded (";
    list(diag, rows);
    diag << "): each trains as those rows do in PyTorch, under its own "
            "name, which a checkpoint keeps; copy it into the parameter's "
            "rows to load it back, or export with torch.onnx.export(..., "
            "optimize=False) to keep the parameter whole";
  }
  if (!unclear.empty()) {
    InFlightDiagnostic diag =
        emitWarning(fileLoc)
        << unclear.size()
        << " initializer(s) the exporter's optimizer folded from a "
           "parameter hold one value throughout (";
    list(diag, unclear);
    diag << "), so which of their positions PyTorch trains as one cannot "
            "be told: each position trains apart; export with "
            "torch.onnx.export(..., optimize=False) to keep the parameter, "
            "or freeze them (--frozen NAME)";
  }
}

/// Weights some exporters (paddle2onnx) write as Constant nodes: floating
/// tensors of rank 2 and up with at least 16 elements (convolution
/// filters, matrices; not the scales of a Resize or a scalar). They become
/// initializers, frozen (a Constant is not meant to train; --trainable
/// overrides), so that they count in the parameters, the memory model and
/// the sharding like any weight.
void OnnxFileImporter::constantWeightsToInitializers() {
  onnx::GraphProto &graph = *model.mutable_graph();
  auto *nodes = graph.mutable_node();
  for (int i = nodes->size() - 1; i >= 0; --i) {
    const onnx::NodeProto &node = nodes->Get(i);
    if (node.op_type() != "Constant" || node.output_size() != 1 ||
        !(node.domain().empty() || node.domain() == "ai.onnx") ||
        node.attribute_size() != 1 || node.attribute(0).name() != "value")
      continue;
    const onnx::TensorProto &t = node.attribute(0).t();
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    if (!isFloatType(t.data_type()) || t.dims_size() < 2 || n < 16 ||
        t.data_location() == onnx::TensorProto::EXTERNAL)
      continue;
    onnx::TensorProto *weight = graph.add_initializer();
    *weight = t;
    weight->set_name(node.output(0));
    options.frozen.push_back(exactGlob(node.output(0)));
    nodes->DeleteSubrange(i, 1);
  }
}

void OnnxFileImporter::makeSkeleton() {
  // Move the weights out first so that copying the model is cheap.
  model.mutable_graph()->mutable_initializer()->Swap(initializerProtos.get());
  skeleton.CopyFrom(model);
  onnx::GraphProto *graph = skeleton.mutable_graph();
  llvm::StringSet<> inputs;
  for (const onnx::ValueInfoProto &input : graph->input())
    inputs.insert(input.name());
  for (const onnx::TensorProto &tensor : *initializerProtos) {
    initializers[tensor.name()] = &tensor;
    // Integer initializers (shapes, axes) stay: the converter and shape
    // inference read their values.
    if (!isFloatType(tensor.data_type()) &&
        tensor.data_location() != onnx::TensorProto::EXTERNAL) {
      *graph->add_initializer() = tensor;
      continue;
    }
    if (inputs.contains(tensor.name()))
      continue; // IR < 4 lists initializers among the inputs already
    onnx::ValueInfoProto *input = graph->add_input();
    input->set_name(tensor.name());
    onnx::TypeProto::Tensor *type =
        input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    onnx::TensorShapeProto *shape = type->mutable_shape();
    for (int64_t d : tensor.dims())
      shape->add_dim()->set_dim_value(d);
  }
}

LogicalResult OnnxFileImporter::check() {
  try {
    onnx::checker::check_model(skeleton);
  } catch (const onnx::checker::ValidationError &e) {
    return error() << "invalid ONNX model: " << e.what();
  } catch (const std::exception &e) {
    return error() << "invalid ONNX model: " << e.what();
  }
  // The checker lets a graph output that nothing computes through, and
  // libonnx's version converter then crashes on it.
  const onnx::GraphProto &graph = skeleton.graph();
  llvm::StringSet<> defined;
  for (const onnx::ValueInfoProto &input : graph.input())
    defined.insert(input.name());
  for (const onnx::TensorProto &tensor : graph.initializer())
    defined.insert(tensor.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &output : node.output())
      defined.insert(output);
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!defined.contains(output.name()))
      return error() << "invalid ONNX model: graph output '" << output.name()
                     << "' is not computed by any node";
  return success();
}

LogicalResult OnnxFileImporter::downgradeNewerOpsets() {
  for (const onnx::OperatorSetIdProto &opset : skeleton.opset_import())
    if ((opset.domain().empty() || opset.domain() == "ai.onnx") &&
        opset.version() > kTargetOpset && opset.version() <= kNewestOpset) {
      if (llvm::Error e = cleave::onnx_import::downgradeToOpset17(
              skeleton, opset.version()))
        return error() << llvm::toString(std::move(e));
      return success();
    }
  return success();
}

FailureOr<int64_t> OnnxFileImporter::getOpset() {
  for (const onnx::OperatorSetIdProto &opset : skeleton.opset_import()) {
    if (!opset.domain().empty() && opset.domain() != "ai.onnx")
      continue;
    int64_t version = opset.version();
    if (version < kOldestOpset || version > kTargetOpset)
      return error() << "opset " << version << " is not supported (opsets "
                     << kOldestOpset << " to " << kNewestOpset
                     << " are; opset " << kNewestOpset
                     << " is the newest this cleave knows: export at opset "
                     << kNewestOpset << " or below)";
    return version;
  }
  return error() << "the model imports no default-domain opset";
}

std::optional<int64_t> OnnxFileImporter::resolveDim(StringRef name) const {
  auto exact = options.dims.find(name.str());
  if (exact != options.dims.end())
    return exact->second;
  if (options.batch && llvm::is_contained(kBatchNames, name))
    return *options.batch;
  if (options.seq && llvm::is_contained(kSeqNames, name))
    return *options.seq;
  return std::nullopt;
}

LogicalResult OnnxFileImporter::bindDims() {
  onnx::GraphProto *graph = skeleton.mutable_graph();
  bool ok = true;
  for (onnx::ValueInfoProto &input : *graph->mutable_input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      continue; // GraphImporter reports inputs it cannot type
    SmallVector<std::string> unbound;
    SmallVector<int> unnamed;
    auto *dims = input.mutable_type()
                     ->mutable_tensor_type()
                     ->mutable_shape()
                     ->mutable_dim();
    for (auto [i, dim] : llvm::enumerate(*dims)) {
      if (dim.has_dim_value())
        continue;
      if (!dim.has_dim_param() || dim.dim_param().empty()) {
        unnamed.push_back(i);
        continue;
      }
      std::optional<int64_t> value = resolveDim(dim.dim_param());
      if (!value) {
        if (!llvm::is_contained(unbound, dim.dim_param()))
          unbound.push_back(dim.dim_param());
        continue;
      }
      if (*value <= 0) {
        ok = false;
        error() << "dimension '" << dim.dim_param() << "' of input '"
                << input.name() << "' must be bound to a positive size, got "
                << *value;
        continue;
      }
      dim.set_dim_value(*value);
    }
    if (!unbound.empty()) {
      ok = false;
      InFlightDiagnostic diag = error() << "input '" << input.name()
                                        << "' has unbound symbolic dimension"
                                        << (unbound.size() > 1 ? "s " : " ");
      llvm::interleaveComma(unbound, diag, [&](const std::string &d) {
        diag << "'" << d << "'";
      });
      diag << "; pass";
      for (const std::string &d : unbound)
        diag << " --dim " << d << "=VALUE";
    }
    if (!unnamed.empty()) {
      ok = false;
      InFlightDiagnostic diag = error() << "input '" << input.name()
                                        << "' has dynamic dimensions without "
                                           "a name (";
      llvm::interleaveComma(unnamed, diag);
      diag << "); re-export the model with named or static dimensions";
    }
  }
  // Outputs get the same bindings, so that ONNX shape inference can
  // confirm their static shapes.
  for (onnx::ValueInfoProto &output : *graph->mutable_output()) {
    if (!output.type().has_tensor_type() ||
        !output.type().tensor_type().has_shape())
      continue;
    for (auto &dim : *output.mutable_type()
                          ->mutable_tensor_type()
                          ->mutable_shape()
                          ->mutable_dim())
      if (dim.has_dim_param())
        if (std::optional<int64_t> value = resolveDim(dim.dim_param());
            value && *value > 0)
          dim.set_dim_value(*value);
  }
  return success(ok);
}

LogicalResult OnnxFileImporter::convertVersion(int64_t opset) {
  if (opset == kTargetOpset)
    return success();
  // The converter's adapters (Softmax 12->13 among them) read shapes from
  // value_info. Plain inference suffices; an adapter that finds no shape
  // reports it.
  try {
    onnx::shape_inference::InferShapes(skeleton);
  } catch (const std::exception &) {
  }
  try {
    converted =
        onnx::version_conversion::ConvertVersion(skeleton, kTargetOpset);
  } catch (const std::exception &first) {
    // An adapter that found no shape: the shape arithmetic of old exports
    // is constant once the inputs are bound; fold it and try again.
    onnx::ModelProto folded = skeleton;
    if (foldShapeArithmetic(folded) == 0)
      return error() << "cannot convert opset " << opset << " to "
                     << kTargetOpset << ": " << first.what();
    try {
      onnx::shape_inference::InferShapes(folded);
      converted =
          onnx::version_conversion::ConvertVersion(folded, kTargetOpset);
    } catch (const std::exception &e) {
      return error() << "cannot convert opset " << opset << " to "
                     << kTargetOpset << ": " << e.what();
    }
    skeleton = std::move(folded);
  }
  prepared = &converted;
  // The converter may turn attributes into new initializers.
  for (const onnx::TensorProto &tensor : converted.graph().initializer())
    if (!initializers.count(tensor.name()))
      initializers[tensor.name()] = &tensor;
  return success();
}

/// Whether a ceil_mode pooling node of `graph` has a last window that
/// would start in the end padding: the converters drop it (PyTorch's and
/// ONNX Runtime's rule, later ONNX's), libonnx 1.12's inference keeps it.
static bool ceilPoolingDisagrees(const onnx::GraphProto &graph,
                                 const ShapeMap &shapes) {
  auto ints = [](const onnx::NodeProto &node, llvm::StringRef name) {
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == name)
        return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    return std::vector<int64_t>();
  };
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() != "MaxPool" && node.op_type() != "AveragePool" &&
        node.op_type() != "LpPool")
      continue;
    bool ceil = false, explicitPads = true;
    for (const onnx::AttributeProto &a : node.attribute()) {
      if (a.name() == "ceil_mode")
        ceil = a.i() != 0;
      if (a.name() == "auto_pad" && a.s() != "NOTSET")
        explicitPads = false;
    }
    auto input = node.input_size() ? shapes.find(node.input(0)) : shapes.end();
    if (!ceil || !explicitPads || input == shapes.end())
      continue;
    const Shape &in = input->second;
    std::vector<int64_t> kernel = ints(node, "kernel_shape");
    size_t k = kernel.size();
    if (in.size() != k + 2)
      continue;
    std::vector<int64_t> strides = ints(node, "strides");
    std::vector<int64_t> dilations = ints(node, "dilations");
    std::vector<int64_t> pads = ints(node, "pads");
    strides.resize(k, 1);
    dilations.resize(k, 1);
    pads.resize(2 * k, 0);
    for (size_t a = 0; a < k; ++a) {
      int64_t s = std::max<int64_t>(strides[a], 1);
      int64_t span = in[a + 2] + pads[a] + pads[a + k] -
                     ((kernel[a] - 1) * dilations[a] + 1);
      if (span < 0)
        continue;
      int64_t last = (span + s - 1) / s; // the ceil-mode last window
      if (last * s >= in[a + 2] + pads[a])
        return true;
    }
  }
  return false;
}

ShapeMap OnnxFileImporter::inferOnnxShapes() {
  // Runs on the skeleton in its original opset (conversion keeps every
  // value's meaning), with data propagation, which types far more of the
  // exporters' shape arithmetic. It runs only after the import succeeded:
  // libonnx 1.12's data propagation crashes on some malformed graphs that
  // its checker accepts, and the import rejects those first.
  onnx::ModelProto model = skeleton;
  model.mutable_graph()->clear_value_info();
  // libonnx 1.12's STFT inference reads an absent onesided as 0 (the
  // schema's default is 1) and counts frames rounding up where ONNX's
  // reference (and torch.stft) rounds down: past an STFT its shapes are
  // wrong, so none is cross-checked.
  for (const onnx::NodeProto &node : model.graph().node())
    if (node.op_type() == "STFT") {
      emitWarning(fileLoc) << "ONNX shape inference (libonnx 1.12) counts "
                              "STFT frames and bins unlike ONNX's reference; "
                              "shapes are not cross-checked";
      return {};
    }
  onnx::ShapeInferenceOptions inferenceOptions(/*check_type=*/false,
                                               /*strict_mode=*/0,
                                               /*data_prop=*/true);
  ShapeMap shapes;
  try {
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), inferenceOptions);
  } catch (const std::exception &e) {
    emitWarning(fileLoc) << "ONNX shape inference failed (" << e.what()
                         << "); shapes are not cross-checked";
    return shapes;
  }
  auto collect = [&](const onnx::ValueInfoProto &info) {
    if (!info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      return;
    Shape shape;
    for (const auto &dim : info.type().tensor_type().shape().dim()) {
      if (!dim.has_dim_value())
        return;
      shape.push_back(dim.dim_value());
    }
    shapes[info.name()] = shape;
  };
  for (const onnx::ValueInfoProto &info : model.graph().value_info())
    collect(info);
  for (const onnx::ValueInfoProto &info : model.graph().output())
    collect(info);
  for (const onnx::ValueInfoProto &info : model.graph().input())
    collect(info);
  if (ceilPoolingDisagrees(model.graph(), shapes)) {
    emitWarning(fileLoc) << "a ceil_mode pooling window would start in the "
                            "end padding: cleave drops it as PyTorch and "
                            "ONNX Runtime do, libonnx 1.12's shape inference "
                            "counts it; shapes are not cross-checked";
    return {};
  }
  return shapes;
}

OwningOpRef<ModuleOp> OnnxFileImporter::run() {
  if (failed(load()))
    return {};
  makeSkeleton();
  if (failed(downgradeNewerOpsets()))
    return {};
  FailureOr<int64_t> opset = getOpset();
  if (failed(opset) || failed(check()) || failed(bindDims()) ||
      failed(convertVersion(*opset)))
    return {};

  OwningOpRef<ModuleOp> module(ModuleOp::create(fileLoc));
  (*module)->setAttr("cleave.model",
                     StringAttr::get(&ctx, llvm::sys::path::stem(path)));
  (*module)->setAttr("cleave.source", StringAttr::get(&ctx, "onnx"));
  OpBuilder builder(&ctx);
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "forward",
                                   FunctionType::get(&ctx, {}, {}));
  GraphImporter importer(ctx, prepared->graph(), initializers, options,
                         fileName, fileLoc);
  importer.setWeightOwner(initializerProtos, *initializerProtos);
  importer.setProvenanceKnown(notedFolded);
  if (failed(importer.importInto(func)) ||
      failed(importer.checkShapes(inferOnnxShapes())))
    return {};
  setTiedAliases(func);
  if (failed(verify(*module)))
    return {};
  return module;
}

void OnnxFileImporter::setTiedAliases(func::FuncOp func) {
  if (tied.empty())
    return;
  func.walk([&](cleave::graph::ParamOp param) {
    auto found = tied.find(param.getName());
    if (found == tied.end())
      return;
    SmallVector<StringRef> names(found->second.begin(), found->second.end());
    param.setAliasesAttr(Builder(&ctx).getStrArrayAttr(names));
  });
}

namespace cleave {

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &ctx, StringRef path,
                                     const ImportOptions &options) {
  ctx.loadDialect<graph::GraphDialect, func::FuncDialect>();
  return OnnxFileImporter(ctx, path, options).run();
}

} // namespace cleave
