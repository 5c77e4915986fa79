//===- OnnxFoldedParameters.cpp - Parameters the exporter folded ----------===//

#include "OnnxFoldedParameters.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include <google/protobuf/unknown_field_set.h>
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

namespace cleave::onnx_import {

namespace {

/// The value of `key` in the repeated StringStringEntryProto field
/// `number` of `message`, read among its unknown fields (metadata_props
/// is newer than Debian's libonnx schema: IR 10).
template <typename Message>
std::optional<std::string> unknownNote(const Message &message, int number,
                                       llvm::StringRef key) {
  const google::protobuf::UnknownFieldSet &unknown = message.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &field = unknown.field(i);
    onnx::StringStringEntryProto entry;
    if (field.number() == number &&
        field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
        entry.ParseFromString(field.length_delimited()) && entry.key() == key)
      return entry.value();
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> exporterNote(const onnx::NodeProto &node,
                                        llvm::StringRef key) {
  return unknownNote(node, /*NodeProto.metadata_props=*/9, key);
}

namespace {

/// How torch.export names a parameter's placeholder: "p_" and the
/// state_dict name lowercased, '.' as '_'.
std::string mangle(llvm::StringRef name) {
  std::string out = "p_";
  for (char c : name)
    out += c == '.' ? '_'
                    : static_cast<char>(
                          std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The state_dict names of the parameters a node's FX node reads, in the
/// order of its arguments: each `%p_...` placeholder resolved by an
/// initializer that still has that name, or by the deepest module of the
/// node's name scopes whose mangled path prefixes it (the rest is the
/// attribute: "weight", "in_proj_bias"). None when a placeholder resolves
/// to nothing.
struct NodeParameters {
  /// aten.linear(x, weight[, bias]): its weight (the MatMul's B is the
  /// weight transposed); empty for other nodes.
  std::string linearWeight;
  std::vector<std::string> names;
};

std::optional<NodeParameters>
parametersOf(const onnx::NodeProto &node,
             const llvm::StringMap<std::string> &byMangled) {
  std::optional<std::string> fx = exporterNote(node, "pkg.torch.onnx.fx_node");
  if (!fx)
    return std::nullopt;
  size_t args = fx->find("](args = (");
  if (args == std::string::npos)
    return std::nullopt;
  NodeParameters out;
  bool linear = fx->find("target=torch.ops.aten.linear.default") < args &&
                fx->compare(args, 11, "](args = (%") == 0 &&
                fx->find(", %p_", args) == fx->find(',', args);
  std::vector<std::string> scopes;
  if (std::optional<std::string> s =
          exporterNote(node, "pkg.torch.onnx.name_scopes")) {
    static const std::regex quoted("'([^']*)'");
    for (std::sregex_iterator it(s->begin(), s->end(), quoted), end;
         it != end; ++it)
      scopes.push_back((*it)[1]);
  }
  static const std::regex placeholder("%(p_[A-Za-z0-9_]+)");
  std::string rest = fx->substr(args);
  for (std::sregex_iterator it(rest.begin(), rest.end(), placeholder), end;
       it != end; ++it) {
    std::string p = (*it)[1];
    std::string name;
    if (auto found = byMangled.find(p); found != byMangled.end())
      name = found->second;
    for (size_t i = scopes.size(); name.empty() && i-- > 0;) {
      if (scopes[i].empty())
        continue;
      std::string prefix = mangle(scopes[i]) + "_";
      if (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0)
        name = scopes[i] + "." + p.substr(prefix.size());
    }
    if (name.empty())
      return std::nullopt;
    if (linear && out.names.empty())
      out.linearWeight = name;
    out.names.push_back(std::move(name));
  }
  return out;
}

int64_t elementBytes(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return 4;
  case onnx::TensorProto::DOUBLE:
    return 8;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2;
  default:
    return 0;
  }
}

/// `tensor` (rows x cols) transposed in place: its data (raw bytes or
/// float_data; none for a weight-less graph) and dims.
bool transposeInPlace(onnx::TensorProto &tensor) {
  if (tensor.dims_size() != 2)
    return false;
  int64_t rows = tensor.dims(0), cols = tensor.dims(1);
  int64_t size = elementBytes(tensor.data_type());
  if (size == 0)
    return false;
  if (tensor.has_raw_data() && !tensor.raw_data().empty()) {
    const std::string &from = tensor.raw_data();
    if (static_cast<int64_t>(from.size()) != rows * cols * size)
      return false;
    std::string to(from.size(), '\0');
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(&to[(c * rows + r) * size], &from[(r * cols + c) * size],
                    size);
    tensor.set_raw_data(std::move(to));
  } else if (tensor.float_data_size() == rows * cols) {
    std::vector<float> from(tensor.float_data().begin(),
                            tensor.float_data().end());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        tensor.set_float_data(c * rows + r, from[r * cols + c]);
  } else if (tensor.float_data_size() != 0) {
    return false;
  }
  tensor.set_dims(0, cols);
  tensor.set_dims(1, rows);
  return true;
}

bool isFloating(int32_t type) {
  return elementBytes(type) != 0;
}

/// One read of an initializer: node, input slot, and the parameter the
/// exporter's notes say it is (empty: unknown).
struct Read {
  int node, slot;
  std::string parameter;
  bool transposed = false;
};

/// Replaces the initializers named in `removed` by `added`, and puts
/// `readers` (nodes that read initializers only) before every other node.
/// An IR < 4 graph lists initializers among its inputs too: those follow.
void replaceInitializers(onnx::GraphProto &graph,
                         const llvm::StringSet<> &removed,
                         std::vector<onnx::TensorProto> &added,
                         std::vector<onnx::NodeProto> &readers) {
  auto *inits = graph.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i)
    if (removed.contains(inits->Get(i).name()))
      inits->DeleteSubrange(i, 1);
  for (onnx::TensorProto &t : added)
    *inits->Add() = std::move(t);
  auto *inputs = graph.mutable_input();
  bool listed = false;
  for (int i = inputs->size() - 1; i >= 0; --i)
    if (removed.contains(inputs->Get(i).name())) {
      inputs->DeleteSubrange(i, 1);
      listed = true;
    }
  if (listed)
    for (const onnx::TensorProto &t : added) {
      onnx::ValueInfoProto *input = graph.add_input();
      input->set_name(t.name());
      auto *type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      for (int64_t d : t.dims())
        type->mutable_shape()->add_dim()->set_dim_value(d);
    }
  auto *nodes = graph.mutable_node();
  std::vector<onnx::NodeProto> rest(nodes->begin(), nodes->end());
  nodes->Clear();
  for (onnx::NodeProto &node : readers)
    *nodes->Add() = std::move(node);
  for (onnx::NodeProto &node : rest)
    *nodes->Add() = std::move(node);
}

} // namespace

std::vector<RestoredParameter>
restoreExporterParameters(onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.has_g() || attr.graphs_size())
        return {}; // a body reads outer names too: left as it is
  llvm::StringMap<int> initializerIndex;
  llvm::StringMap<std::string> byMangled;
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const onnx::TensorProto &t = graph.initializer(i);
    initializerIndex[t.name()] = i;
    byMangled[mangle(t.name())] = t.name();
  }
  // Every read of every floating initializer, with what its node names.
  llvm::StringMap<std::vector<Read>> reads;
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto &node = graph.node(n);
    std::vector<int> slots;
    for (int i = 0; i < node.input_size(); ++i)
      if (auto it = initializerIndex.find(node.input(i));
          it != initializerIndex.end() &&
          isFloating(graph.initializer(it->second).data_type()))
        slots.push_back(i);
    if (slots.empty())
      continue;
    std::optional<NodeParameters> params = parametersOf(node, byMangled);
    // The FX node's parameters that are another ONNX node's: one still an
    // initializer of its own that this node does not read (addmm's
    // weight, which the MatMul beside this Add reads), and a linear's
    // weight where this node is not its MatMul (the Add of its bias).
    bool linearMatMul = params && !params->linearWeight.empty() &&
                        node.op_type() == "MatMul" && slots.size() == 1 &&
                        slots[0] == 1;
    if (params && !linearMatMul) {
      llvm::StringSet<> read;
      for (int slot : slots)
        read.insert(node.input(slot));
      llvm::erase_if(params->names, [&](const std::string &name) {
        return (initializerIndex.contains(name) && !read.contains(name)) ||
               (name == params->linearWeight && !read.contains(name));
      });
    }
    for (size_t k = 0; k < slots.size(); ++k) {
      Read read{n, slots[k], "", false};
      const std::string &input = node.input(slots[k]);
      if (linearMatMul && params->linearWeight != input) {
        read.parameter = params->linearWeight; // B = weight^T, folded
        read.transposed = true;
      } else if (params && !linearMatMul &&
                 params->names.size() == slots.size()) {
        read.parameter = params->names[k];
      }
      reads[input].push_back(std::move(read));
    }
  }
  llvm::StringSet<> outputs;
  for (const onnx::ValueInfoProto &output : graph.output())
    outputs.insert(output.name());

  std::vector<RestoredParameter> restored;
  std::vector<onnx::NodeProto> transposes;
  std::vector<onnx::TensorProto> added;
  llvm::StringSet<> removed, taken;
  std::vector<std::string> order; // the initializers' own order
  for (const onnx::TensorProto &t : graph.initializer()) {
    taken.insert(t.name());
    order.push_back(t.name());
  }
  for (const std::string &input : order) {
    auto found = reads.find(input);
    if (found == reads.end() || outputs.contains(input))
      continue;
    const std::vector<Read> &list = found->second;
    // Every read must say which parameter it is; the distinct ones, in
    // order of first read.
    std::vector<std::pair<std::string, bool>> parameters;
    bool known = true;
    for (const Read &r : list) {
      known = known && !r.parameter.empty();
      std::pair<std::string, bool> p{r.parameter, r.transposed};
      if (std::find(parameters.begin(), parameters.end(), p) ==
          parameters.end())
        parameters.push_back(p);
    }
    if (!known || (parameters.size() == 1 && parameters[0].first == input &&
                   !parameters[0].second))
      continue;
    bool clash = false;
    for (const auto &[parameter, transposed] : parameters)
      clash = clash || (parameter != input && taken.contains(parameter));
    if (clash)
      continue;
    const onnx::TensorProto &from =
        graph.initializer(initializerIndex.lookup(input));
    std::vector<onnx::TensorProto> tensors;
    bool ok = true;
    for (const auto &[parameter, transposed] : parameters) {
      onnx::TensorProto t = from;
      t.set_name(parameter);
      ok = ok && t.data_location() != onnx::TensorProto::EXTERNAL &&
           (!transposed || transposeInPlace(t));
      tensors.push_back(std::move(t));
    }
    if (!ok)
      continue;
    // The reads now name their parameter, through a Transpose where the
    // exporter had folded one.
    for (size_t i = 0; i < parameters.size(); ++i) {
      const auto &[parameter, transposed] = parameters[i];
      std::string value = parameter;
      if (transposed) {
        value = parameters.size() == 1 ? input : parameter + ".transposed";
        onnx::NodeProto node;
        node.set_op_type("Transpose");
        node.set_name("cleave_restored_" + value);
        node.add_input(parameter);
        node.add_output(value);
        onnx::AttributeProto *perm = node.add_attribute();
        perm->set_name("perm");
        perm->set_type(onnx::AttributeProto::INTS);
        perm->add_ints(1);
        perm->add_ints(0);
        transposes.push_back(std::move(node));
      }
      for (const Read &r : list)
        if (r.parameter == parameter && r.transposed == transposed)
          graph.mutable_node(r.node)->set_input(r.slot, value);
      taken.insert(parameter);
      restored.push_back({input, parameter, transposed});
    }
    removed.insert(input);
    for (onnx::TensorProto &t : tensors)
      added.push_back(std::move(t));
  }
  if (restored.empty())
    return restored;
  replaceInitializers(graph, removed, added, transposes);
  return restored;
}

namespace {

/// The output features of a node's weight `w` (an initializer, or the
/// output of a Transpose of one, as restoreExporterParameters writes):
/// dimension `dim` of the initializer, the other one through a transpose.
std::optional<std::pair<int64_t, int32_t>>
featuresOf(const onnx::GraphProto &graph, const std::string &w, int dim) {
  std::string name = w;
  bool swapped = false;
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "Transpose" && node.output_size() == 1 &&
        node.output(0) == w && node.input_size() == 1) {
      name = node.input(0);
      swapped = true;
    }
  for (const onnx::TensorProto &t : graph.initializer())
    if (t.name() == name && t.dims_size() >= 2) {
      int d = swapped && t.dims_size() == 2 ? 1 - dim : dim;
      return std::pair(t.dims(d), t.data_type());
    }
  return std::nullopt;
}

} // namespace

std::vector<std::string> restoreRemovedBiases(onnx::GraphProto &graph) {
  llvm::StringMap<std::string> byMangled;
  llvm::StringSet<> present;
  for (const onnx::TensorProto &t : graph.initializer()) {
    byMangled[mangle(t.name())] = t.name();
    present.insert(t.name());
  }
  // How many nodes carry each FX node's note: a linear whose bias was
  // removed is one MatMul alone (its Add folded away).
  llvm::StringMap<int> nodesOf;
  for (const onnx::NodeProto &node : graph.node())
    if (std::optional<std::string> fx =
            exporterNote(node, "pkg.torch.onnx.fx_node"))
      ++nodesOf[*fx];
  std::vector<std::string> restored;
  std::vector<std::pair<int, onnx::NodeProto>> adds; // after node index
  for (int n = 0; n < graph.node_size(); ++n) {
    onnx::NodeProto &node = *graph.mutable_node(n);
    std::optional<std::string> fx = exporterNote(node, "pkg.torch.onnx.fx_node");
    std::optional<NodeParameters> params =
        fx ? parametersOf(node, byMangled) : std::nullopt;
    if (!params)
      continue;
    std::vector<std::string> missing;
    for (const std::string &name : params->names)
      if (!present.contains(name))
        missing.push_back(name);
    if (missing.size() != 1 ||
        !llvm::StringRef(missing[0]).ends_with("bias") ||
        node.input_size() < 2)
      continue;
    // The bias's length: the weight's output features.
    std::optional<std::pair<int64_t, int32_t>> features;
    bool addNode = false;
    const std::string &op = node.op_type();
    bool addmm = fx->find("aten.addmm.default") != std::string::npos;
    bool linear = fx->find("aten.linear.default") != std::string::npos;
    bool conv = fx->find("target=torch.ops.aten.conv") != std::string::npos;
    if (op == "Gemm" && node.input_size() == 2 && (addmm || linear)) {
      int transB = 0;
      for (const onnx::AttributeProto &a : node.attribute())
        if (a.name() == "transB")
          transB = static_cast<int>(a.i());
      features = featuresOf(graph, node.input(1), transB ? 0 : 1);
    } else if (op == "Conv" && node.input_size() == 2 && conv) {
      features = featuresOf(graph, node.input(1), 0);
    } else if (op == "MatMul" && (addmm || linear) && nodesOf[*fx] == 1) {
      features = featuresOf(graph, node.input(1), 1);
      addNode = true;
    }
    if (!features || !elementBytes(features->second))
      continue;
    onnx::TensorProto bias;
    bias.set_name(missing[0]);
    bias.set_data_type(features->second);
    bias.add_dims(features->first);
    bias.set_raw_data(
        std::string(features->first * elementBytes(features->second), '\0'));
    *graph.add_initializer() = std::move(bias);
    present.insert(missing[0]);
    restored.push_back(missing[0]);
    if (!addNode) {
      node.add_input(missing[0]);
      continue;
    }
    // y = x W + bias: the MatMul writes a new name, the Add the old one.
    onnx::NodeProto add;
    add.set_op_type("Add");
    add.set_name("cleave_restored_" + missing[0]);
    std::string product = node.output(0) + ".without_bias";
    add.add_input(product);
    add.add_input(missing[0]);
    add.add_output(node.output(0));
    node.set_output(0, product);
    adds.push_back({n, std::move(add)});
  }
  // The Adds right after their MatMuls, so the nodes stay in order.
  auto *nodes = graph.mutable_node();
  for (auto it = adds.rbegin(); it != adds.rend(); ++it) {
    *nodes->Add() = std::move(it->second);
    for (int i = nodes->size() - 1; i > it->first + 1; --i)
      nodes->SwapElements(i, i - 1);
  }
  return restored;
}

std::vector<std::string> parametersNotInFile(const onnx::GraphProto &graph) {
  llvm::StringMap<std::string> byMangled;
  llvm::StringSet<> present;
  for (const onnx::TensorProto &t : graph.initializer()) {
    byMangled[mangle(t.name())] = t.name();
    present.insert(t.name());
  }
  std::vector<std::string> missing;
  llvm::StringSet<> seen;
  for (const onnx::NodeProto &node : graph.node()) {
    std::optional<NodeParameters> params = parametersOf(node, byMangled);
    if (!params)
      continue;
    for (const std::string &name : params->names)
      if (!present.contains(name) && seen.insert(name).second)
        missing.push_back(name);
  }
  return missing;
}

namespace {

/// The export signature's parameters (graph note
/// `pkg.torch.export.ExportedProgram.graph_signature`): placeholder ->
/// state_dict name, in the signature's order; empty without the note.
std::vector<std::pair<std::string, std::string>>
signatureParameters(const onnx::GraphProto &graph) {
  std::vector<std::pair<std::string, std::string>> out;
  std::optional<std::string> signature = unknownNote(
      graph, /*GraphProto.metadata_props=*/16,
      "pkg.torch.export.ExportedProgram.graph_signature");
  if (!signature)
    return out;
  // "p_model_wpe_weight: PARAMETER target='model.wpe.weight'", a line each.
  static const std::regex input("(\\w+): PARAMETER target='([^']*)'");
  for (std::sregex_iterator it(signature->begin(), signature->end(), input),
       end;
       it != end; ++it)
    out.emplace_back((*it)[1].str(), (*it)[2].str());
  return out;
}

} // namespace

FoldedSources foldedSources(const onnx::GraphProto &graph) {
  FoldedSources out;
  llvm::StringSet<> parameters;
  for (const auto &[placeholder, target] : signatureParameters(graph))
    parameters.insert(target);
  if (parameters.empty())
    return out;
  static const std::regex quoted("'([^']*)'");
  for (const onnx::ValueInfoProto &info : graph.value_info()) {
    std::optional<std::string> from = unknownNote(
        info, /*ValueInfoProto.metadata_props=*/4,
        "pkg.onnxscript.optimizer.folded_from");
    if (!from)
      continue;
    Folded &sources = out[info.name()];
    for (std::sregex_iterator it(from->begin(), from->end(), quoted), end;
         it != end; ++it) {
      if (parameters.contains((*it)[1].str()))
        sources.parameters.push_back((*it)[1].str());
      else
        ++sources.others;
    }
  }
  return out;
}

namespace {

/// A floating initializer's values as bytes (raw_data, or float_data
/// packed), or none: no values here (a weight-less graph, external data).
std::optional<std::string> valueBytes(const onnx::TensorProto &t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d;
  int64_t size = elementBytes(t.data_type());
  if (size == 0 || count == 0)
    return std::nullopt;
  if (t.has_raw_data() && !t.raw_data().empty())
    return static_cast<int64_t>(t.raw_data().size()) == count * size
               ? std::optional<std::string>(t.raw_data())
               : std::nullopt;
  if (t.data_type() == onnx::TensorProto::FLOAT &&
      t.float_data_size() == count) {
    std::string bytes(count * 4, '\0');
    std::memcpy(bytes.data(), t.float_data().data(), bytes.size());
    return bytes;
  }
  return std::nullopt;
}

/// Whether `bytes` (elements of `size` bytes) are all one value: a
/// constant (zero, one) initialisation says nothing about which positions
/// share a value in the module.
bool allOneValue(llvm::StringRef bytes, int64_t size) {
  for (size_t i = size; i < bytes.size(); i += size)
    if (bytes.substr(i, size) != bytes.substr(0, size))
      return false;
  return true;
}

onnx::TensorProto int64Tensor(const std::string &name,
                              const std::vector<int64_t> &dims,
                              const std::vector<int64_t> &values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    t.add_dims(d);
  std::string raw(values.size() * sizeof(int64_t), '\0');
  std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(std::move(raw));
  return t;
}

/// The dimensions of `t` along which every slice equals the first: the
/// exporter folded an expand of the parameter over them.
std::vector<int> repeatedDims(const onnx::TensorProto &t,
                              llvm::StringRef bytes) {
  int64_t size = elementBytes(t.data_type());
  std::vector<int> out;
  for (int d = 0; d < t.dims_size(); ++d) {
    if (t.dims(d) < 2)
      continue;
    int64_t outer = 1, inner = size;
    for (int i = 0; i < d; ++i)
      outer *= t.dims(i);
    for (int i = d + 1; i < t.dims_size(); ++i)
      inner *= t.dims(i);
    bool same = true;
    for (int64_t o = 0; same && o < outer; ++o)
      for (int64_t j = 1; same && j < t.dims(d); ++j)
        same = bytes.substr((o * t.dims(d) + j) * inner, inner) ==
               bytes.substr(o * t.dims(d) * inner, inner);
    if (same)
      out.push_back(d);
  }
  return out;
}

/// `bytes` of a tensor of `dims` with the dimensions `keepFirst` cut to
/// their first slice.
std::string firstSlices(std::vector<int64_t> dims, std::string bytes,
                        const std::vector<int> &keepFirst, int64_t size) {
  for (int d : keepFirst) {
    int64_t outer = 1, inner = size;
    for (int i = 0; i < d; ++i)
      outer *= dims[i];
    for (size_t i = d + 1; i < dims.size(); ++i)
      inner *= dims[i];
    std::string cut;
    for (int64_t o = 0; o < outer; ++o)
      cut.append(bytes, o * dims[d] * inner, inner);
    bytes = std::move(cut);
    dims[d] = 1;
  }
  return bytes;
}

/// The rows of a table a folded gather read: `t` seen as vectors along
/// dimension `dim`, one per position of the other dimensions. Distinct
/// vectors in order of first appearance, and each position's index.
struct Rows {
  std::vector<std::string> table;
  std::vector<int64_t> index;
};

Rows rowsAlong(const onnx::TensorProto &t, llvm::StringRef bytes, int dim) {
  int64_t size = elementBytes(t.data_type());
  int64_t outer = 1, inner = 1, length = t.dims(dim);
  for (int i = 0; i < dim; ++i)
    outer *= t.dims(i);
  for (int i = dim + 1; i < t.dims_size(); ++i)
    inner *= t.dims(i);
  Rows rows;
  llvm::StringMap<int64_t> seen;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::string row;
      for (int64_t j = 0; j < length; ++j)
        row.append(bytes.data() + ((o * length + j) * inner + i) * size, size);
      auto [it, fresh] =
          seen.try_emplace(row, static_cast<int64_t>(rows.table.size()));
      if (fresh)
        rows.table.push_back(std::move(row));
      rows.index.push_back(it->second);
    }
  return rows;
}

} // namespace

bool holdsOneValue(const onnx::TensorProto &t) {
  std::optional<std::string> bytes = valueBytes(t);
  int64_t size = elementBytes(t.data_type());
  return bytes && bytes->size() > static_cast<size_t>(size) &&
         allOneValue(*bytes, size);
}

std::vector<UnfoldedParameter> unfoldFoldedParameters(onnx::GraphProto &graph) {
  FoldedSources sources = foldedSources(graph);
  std::vector<UnfoldedParameter> unfolded;
  if (sources.empty())
    return unfolded;
  llvm::StringSet<> taken, graphInputs;
  for (const onnx::TensorProto &t : graph.initializer())
    taken.insert(t.name());
  for (const onnx::ValueInfoProto &input : graph.input())
    graphInputs.insert(input.name());
  for (const onnx::ValueInfoProto &output : graph.output())
    graphInputs.insert(output.name()); // a graph output stays as it is
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> added;
  llvm::StringSet<> removed;
  for (const onnx::TensorProto &t : graph.initializer()) {
    auto found = sources.find(t.name());
    if (found == sources.end() || found->second.parameters.size() != 1 ||
        found->second.others == 0 || graphInputs.contains(t.name()))
      continue;
    const std::string &parameter = found->second.parameters[0];
    std::optional<std::string> bytes = valueBytes(t);
    int64_t size = elementBytes(t.data_type());
    // One value throughout (zeros at initialisation) says nothing of
    // which positions share: left as it is.
    if (!bytes || taken.contains(parameter) || holdsOneValue(t))
      continue;
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    int rank = t.dims_size();
    // An expand of the parameter over some dimensions (a class token
    // over the batch): the parameter with those dimensions 1, expanded.
    if (std::vector<int> repeated = repeatedDims(t, *bytes); !repeated.empty()) {
      std::string first = firstSlices(dims, *bytes, repeated, size);
      onnx::TensorProto p = t;
      p.set_name(parameter);
      p.clear_float_data();
      for (int d : repeated)
        p.set_dims(d, 1);
      p.set_raw_data(std::move(first));
      std::string shapeName = "cleave_unfolded_" + t.name() + ".shape";
      added.push_back(int64Tensor(shapeName, {rank}, dims));
      onnx::NodeProto expand;
      expand.set_op_type("Expand");
      expand.set_name("cleave_unfolded_" + t.name());
      expand.add_input(parameter);
      expand.add_input(shapeName);
      expand.add_output(t.name());
      nodes.push_back(std::move(expand));
      added.push_back(std::move(p));
      removed.insert(t.name());
      taken.insert(parameter);
      unfolded.push_back({t.name(), parameter, false, 0});
      continue;
    }
    // A gather of the parameter's rows at fixed positions where positions
    // share rows (T5's relative-position buckets): the rows read, once
    // each, gathered by their indices. The last dimension along which
    // rows repeat is the row.
    for (int d = rank - 1; d >= 0; --d) {
      if (dims[d] < 2)
        continue;
      Rows rows = rowsAlong(t, *bytes, d);
      if (rows.table.size() == rows.index.size())
        continue;
      bool constantRow = llvm::any_of(rows.table, [&](const std::string &row) {
        return allOneValue(row, size);
      });
      if (constantRow)
        break;
      std::string tableName = parameter + ".rows_read";
      if (taken.contains(tableName))
        break;
      onnx::TensorProto table;
      table.set_name(tableName);
      table.set_data_type(t.data_type());
      table.add_dims(static_cast<int64_t>(rows.table.size()));
      table.add_dims(dims[d]);
      std::string raw;
      for (const std::string &row : rows.table)
        raw += row;
      table.set_raw_data(std::move(raw));
      std::vector<int64_t> indexDims;
      for (int i = 0; i < rank; ++i)
        if (i != d)
          indexDims.push_back(dims[i]);
      std::string indexName = "cleave_unfolded_" + t.name() + ".index";
      added.push_back(int64Tensor(indexName, indexDims, rows.index));
      onnx::NodeProto gather;
      gather.set_op_type("Gather");
      gather.set_name("cleave_unfolded_" + t.name());
      gather.add_input(tableName);
      gather.add_input(indexName);
      // Gather puts the row last; a Transpose puts it back at `d`.
      gather.add_output(d == rank - 1 ? t.name() : t.name() + ".rows");
      nodes.push_back(gather);
      if (d != rank - 1) {
        onnx::NodeProto transpose;
        transpose.set_op_type("Transpose");
        transpose.set_name("cleave_unfolded_" + t.name() + ".transpose");
        transpose.add_input(t.name() + ".rows");
        transpose.add_output(t.name());
        onnx::AttributeProto *perm = transpose.add_attribute();
        perm->set_name("perm");
        perm->set_type(onnx::AttributeProto::INTS);
        for (int i = 0; i < rank; ++i)
          perm->add_ints(i < d ? i : i == d ? rank - 1 : i - 1);
        nodes.push_back(std::move(transpose));
      }
      added.push_back(std::move(table));
      removed.insert(t.name());
      taken.insert(tableName);
      unfolded.push_back({t.name(), parameter, true,
                          static_cast<int64_t>(rows.table.size())});
      break;
    }
  }
  if (!unfolded.empty())
    replaceInitializers(graph, removed, added, nodes);
  return unfolded;
}

TiedParameters traceTiedParameters(const onnx::GraphProto &graph) {
  TiedParameters out;
  std::vector<std::pair<std::string, std::string>> signature =
      signatureParameters(graph);
  if (signature.empty())
    return out;
  llvm::StringMap<std::string> targetOf;
  llvm::StringSet<> unread;
  for (const auto &[placeholder, target] : signature) {
    targetOf[placeholder] = target;
    unread.insert(target);
  }
  llvm::StringSet<> held;
  for (const onnx::TensorProto &t : graph.initializer())
    held.insert(t.name());
  // Which placeholders the nodes read, with the module scopes of each read.
  struct Read {
    std::string target;
    std::vector<std::string> scopes;
  };
  std::vector<Read> reads;
  static const std::regex placeholder("%(p_[A-Za-z0-9_]+)");
  static const std::regex quoted("'([^']*)'");
  for (const onnx::NodeProto &node : graph.node()) {
    std::optional<std::string> fx = exporterNote(node, "pkg.torch.onnx.fx_node");
    if (!fx)
      continue;
    size_t args = fx->find("](args = (");
    if (args == std::string::npos)
      continue;
    std::vector<std::string> scopes;
    if (std::optional<std::string> s =
            exporterNote(node, "pkg.torch.onnx.name_scopes"))
      for (std::sregex_iterator it(s->begin(), s->end(), quoted), end;
           it != end; ++it)
        scopes.push_back((*it)[1]);
    std::string rest = fx->substr(args);
    for (std::sregex_iterator it(rest.begin(), rest.end(), placeholder), end;
         it != end; ++it) {
      auto target = targetOf.find((*it)[1].str());
      if (target == targetOf.end())
        continue;
      unread.erase(target->second);
      reads.push_back({target->second, scopes});
    }
  }
  // torch.export keeps one placeholder for a tied parameter: the other
  // names stay in the signature, read by no node, and the module that owns
  // each (the embedding of a tied head) reads the kept one instead. The
  // alias is that module's path and the kept name's attribute.
  for (const Read &read : reads) {
    if (!held.contains(read.target))
      continue;
    size_t dot = read.target.rfind('.');
    std::string attribute =
        dot == std::string::npos ? read.target : read.target.substr(dot + 1);
    // From the deepest scope (the op's own name comes first) up to the
    // module that owns the name read: a module reading its own parameter
    // says nothing of its parents' names.
    for (size_t i = read.scopes.size(); i-- > 0;) {
      const std::string &scope = read.scopes[i];
      if (scope.empty() ||
          llvm::StringRef(read.target).starts_with(scope + "."))
        break;
      std::string alias = scope + "." + attribute;
      if (!unread.contains(alias) || held.contains(alias))
        continue;
      std::vector<std::string> &names = out.aliases[read.target];
      if (!llvm::is_contained(names, alias))
        names.push_back(alias);
      break;
    }
  }
  // What is left: neither held, read, an alias nor folded into a value.
  llvm::StringSet<> accounted;
  for (const auto &entry : out.aliases)
    accounted.insert(entry.second.begin(), entry.second.end());
  for (const auto &entry : foldedSources(graph))
    accounted.insert(entry.second.parameters.begin(),
                     entry.second.parameters.end());
  // A module no node ran under, nor any of its children, whose parameter
  // has the attribute of exactly one tied parameter: the owner the others
  // call under their own names (T5's `shared`, run as
  // `encoder.embed_tokens` and `decoder.embed_tokens`). Its name is one
  // more alias of that parameter.
  llvm::StringSet<> ran;
  for (const Read &read : reads)
    for (const std::string &scope : read.scopes)
      ran.insert(scope);
  auto attributeOf = [](llvm::StringRef name) {
    return name.rsplit('.').second.empty() ? name : name.rsplit('.').second;
  };
  auto neverRan = [&](llvm::StringRef module) {
    for (const auto &scope : ran)
      if (scope.getKey() == module ||
          (scope.getKey().starts_with(module) &&
           scope.getKey().drop_front(module.size()).starts_with(".")))
        return false;
    return true;
  };
  for (const auto &[placeholder, target] : signature) {
    if (!unread.contains(target) || held.contains(target) ||
        accounted.contains(target))
      continue;
    llvm::StringRef module = llvm::StringRef(target).rsplit('.').first;
    std::vector<std::string> *tiedTo = nullptr;
    int candidates = 0;
    for (auto &entry : out.aliases)
      if (attributeOf(entry.getKey()) == attributeOf(target)) {
        ++candidates;
        tiedTo = &entry.second;
      }
    if (candidates == 1 && module != target && neverRan(module)) {
      tiedTo->push_back(target);
      continue;
    }
    out.unaccounted.push_back(target);
  }
  return out;
}

} // namespace cleave::onnx_import
