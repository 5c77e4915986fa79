//===- OnnxFoldedParameters.h - Parameters the exporter folded -*- C++ -*-===//
//
// torch.onnx.export's default (dynamo) exporter runs an optimizer that
// folds `Transpose(weight)` of every nn.Linear into a new initializer
// ("val_42", the weight transposed): the module's parameter
// ("model.encoder.block.0.layer.0.SelfAttention.q.weight") is gone from
// the file, so cleave would train, report and export "val_42" in the
// transposed layout, and a checkpoint would not load back into the
// PyTorch module. The exporter's notes on each node (NodeProto
// metadata_props: `pkg.torch.onnx.fx_node`, `pkg.torch.onnx.name_scopes`)
// still say which parameter the MatMul reads; with them the parameter is
// restored under its own name and layout, and a Transpose node computes
// what the MatMul read (the MatMul importer folds it into transpose_rhs,
// so nothing is copied at run time). The same optimizer merges
// initializers whose values happen to be equal (the RMSNorm weights of a
// fresh LLaMA, all ones): one tensor where PyTorch trains five. The notes
// name each reader's parameter, so those are split apart again.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ONNX_ONNXFOLDEDPARAMETERS_H
#define CLEAVE_IMPORTERS_ONNX_ONNXFOLDEDPARAMETERS_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <string>
#include <vector>

namespace cleave::onnx_import {

/// The exporter's note `key` on `node` (NodeProto.metadata_props, field 9
/// of IR 10: newer than Debian's libonnx schema, so read among the node's
/// unknown fields), or none.
std::optional<std::string> exporterNote(const onnx::NodeProto &node,
                                        llvm::StringRef key);

/// A parameter restored: the initializer the exporter wrote, the
/// parameter (state_dict name) it was, and whether the initializer held
/// it transposed.
struct RestoredParameter {
  std::string initializer, parameter;
  bool transposed = false;
};

/// Gives every floating initializer of `graph` the parameter name the
/// exporter's notes on its readers say it has, where each reader names
/// one: a folded transpose ("val_42", read by MatMuls as the B of
/// `aten.linear`) becomes `<module>.weight` transposed back, read through
/// a Transpose node; an initializer the optimizer merged because several
/// parameters held equal values (every RMSNorm weight all ones at
/// initialisation) becomes one initializer per parameter, each read by its
/// own nodes, so they train apart as in PyTorch. Tied parameters stay one
/// (the notes name them once). Initializers with a reader whose notes are
/// missing or ambiguous, or whose names would clash, are left alone.
std::vector<RestoredParameter> restoreExporterParameters(onnx::GraphProto &graph);

/// Puts back the biases the exporter's optimizer removed: an Add of a bias
/// still all zeros (every fresh nn.Linear of GPT-2's Conv1D, a fresh
/// classifier or convolution) is an identity it folds away, so the module's
/// parameter is gone and would not train. Where a Gemm, Conv or lone
/// MatMul's notes name exactly one parameter the file lacks and it is a
/// bias, the bias comes back as a zero initializer of the weight's output
/// features: Gemm's and Conv's optional C/B input, or an Add after the
/// MatMul. The values are exact (the optimizer folds only zeros), so the
/// graph computes what it did, and the bias trains as in PyTorch. Returns
/// the restored names.
std::vector<std::string> restoreRemovedBiases(onnx::GraphProto &graph);

/// The parameters the exporter's notes name that no initializer holds:
/// the optimizer removed them (an Add of a bias still all zeros folded
/// away), so they do not train. In the order first named.
std::vector<std::string> parametersNotInFile(const onnx::GraphProto &graph);

/// What torch.onnx.export's optimizer computed at export time from the
/// module's state: for each initializer its note
/// (`pkg.onnxscript.optimizer.folded_from` on the value) names the values
/// it was folded from, and the graph's note
/// (`pkg.torch.export.ExportedProgram.graph_signature`) says which of those
/// are parameters (the rest are buffers and constants). Value -> the
/// module parameters it came from, in the note's order (the notes are on
/// values: callers look up their initializers); one folded from buffers
/// and constants only (a causal mask, the rotary tables from `inv_freq`)
/// maps to none, and one without the note is absent. `others`: how many
/// values besides parameters it was folded from (none for a weight the
/// optimizer merely transposed; positions, shapes and buffers for a table
/// read at fixed positions).
struct Folded {
  std::vector<std::string> parameters;
  int others = 0;
};
using FoldedSources = llvm::StringMap<Folded>;
FoldedSources foldedSources(const onnx::GraphProto &graph);

/// A folded initializer traced back to its parameter: `parameter` and an
/// Expand of it (`gathered` false), or `rows` of it gathered at fixed
/// positions into `<parameter>.rows_read` (`gathered` true).
struct UnfoldedParameter {
  std::string initializer, parameter;
  bool gathered = false;
  int64_t rows = 0;
};

/// Undoes the folds that changed what trains. The optimizer folds a
/// parameter read at fixed positions into a tensor of its own, which would
/// train each copy apart where PyTorch trains the one parameter:
/// - an expand (ViT's class token over the batch): every slice along the
///   expanded dimensions is equal, so the parameter is the first slice,
///   under its own name, read through an Expand;
/// - a gather of rows where positions share a row (T5's relative-position
///   buckets: one bias per bucket, read at every pair of positions in it):
///   the distinct rows become one table, `<parameter>.rows_read`, read
///   through a Gather at the positions' indices.
/// Values alone say which positions share: a parameter whose values are
/// all one constant (zeros at initialisation) is left alone, as is a
/// gather whose positions read distinct rows (GPT-2's position table read
/// at positions 0..S-1), which already trains as PyTorch's rows do.
std::vector<UnfoldedParameter> unfoldFoldedParameters(onnx::GraphProto &graph);

/// Whether `t` holds more than one element, all one value (zeros at
/// initialisation): its values cannot say which positions share a row.
bool holdsOneValue(const onnx::TensorProto &t);

/// The other state_dict names of tied parameters, by the initializer
/// that holds them: a module whose weight is another's (GPT-2's token
/// embedding is its output head's, BERT's decoder its word embedding)
/// appears once in the dynamo exporter's graph, under the name it kept
/// (`lm_head.weight`), while `state_dict()` lists every name and a strict
/// load wants them all. The export signature still lists the others as
/// parameters that no node reads, and the node of the module that owns
/// one (the embedding's Gather, in scope `transformer.wte`) reads the
/// kept one instead: that module's path and the kept name's attribute
/// (`transformer.wte.weight`) is an alias. So is the parameter of a module
/// no node ran under (nor its children) whose attribute is that of exactly
/// one tied parameter: the owner the others call under their own names
/// (T5's `shared.weight`, run as `encoder.embed_tokens`). `unaccounted`:
/// the signature's parameters that are nowhere (not held, read, an alias
/// or folded into a value): a tie read through another module inside one
/// that ran (BERT's `cls.predictions.bias`), or a module the forward pass
/// never calls; a strict load_state_dict wants them and cleave cannot give
/// them. Empty without the notes.
using TiedAliases = llvm::StringMap<std::vector<std::string>>;
struct TiedParameters {
  TiedAliases aliases;
  std::vector<std::string> unaccounted;
};
TiedParameters traceTiedParameters(const onnx::GraphProto &graph);

} // namespace cleave::onnx_import

#endif // CLEAVE_IMPORTERS_ONNX_ONNXFOLDEDPARAMETERS_H
