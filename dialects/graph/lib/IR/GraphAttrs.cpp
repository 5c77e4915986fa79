//===- GraphAttrs.cpp - Attributes of the graph dialect -------------------===//

#include "cleave/Dialect/Graph/IR/GraphAttrs.h"
#include "cleave/Dialect/Graph/IR/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace cleave::graph;

#include "cleave/Dialect/Graph/IR/GraphEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "cleave/Dialect/Graph/IR/GraphAttrs.cpp.inc"

void GraphDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "cleave/Dialect/Graph/IR/GraphAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// TensorShardingAttr
//===----------------------------------------------------------------------===//

TensorShardingAttr
TensorShardingAttr::get(MLIRContext *ctx,
                        llvm::ArrayRef<llvm::SmallVector<int64_t>> axes) {
  SmallVector<Attribute> dims;
  for (const SmallVector<int64_t> &a : axes)
    dims.push_back(DenseI64ArrayAttr::get(ctx, a));
  return get(ctx, ArrayAttr::get(ctx, dims));
}

ArrayRef<int64_t> TensorShardingAttr::axesOf(int64_t dim) const {
  return cast<DenseI64ArrayAttr>(getDims()[dim]).asArrayRef();
}

int64_t TensorShardingAttr::dimOf(int64_t axis) const {
  for (int64_t d = 0; d < getRank(); ++d)
    if (llvm::is_contained(axesOf(d), axis))
      return d;
  return -1;
}

LogicalResult
TensorShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           ArrayAttr dims) {
  llvm::SmallDenseSet<int64_t> seen;
  for (Attribute a : dims) {
    auto axes = dyn_cast<DenseI64ArrayAttr>(a);
    if (!axes)
      return emitError() << "a tensor sharding lists each dimension's mesh "
                            "axes as an array<i64>, got "
                         << a;
    for (int64_t axis : axes.asArrayRef()) {
      if (axis < 0)
        return emitError() << "mesh axis " << axis << " is negative";
      if (!seen.insert(axis).second)
        return emitError() << "mesh axis " << axis
                           << " splits two dimensions of one tensor";
    }
  }
  return success();
}

void TensorShardingAttr::printDims(AsmPrinter &printer) const {
  printer << "[";
  llvm::interleaveComma(llvm::seq<int64_t>(0, getRank()), printer,
                        [&](int64_t d) {
                          printer << "{";
                          llvm::interleaveComma(axesOf(d), printer);
                          printer << "}";
                        });
  printer << "]";
}

TensorShardingAttr TensorShardingAttr::parseDims(AsmParser &parser) {
  SmallVector<SmallVector<int64_t>> axes;
  llvm::SMLoc loc = parser.getCurrentLocation();
  auto parseDim = [&]() -> ParseResult {
    axes.emplace_back();
    return parser.parseCommaSeparatedList(
        AsmParser::Delimiter::Braces, [&]() -> ParseResult {
          return parser.parseInteger(axes.back().emplace_back());
        });
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return {};
  SmallVector<Attribute> dims;
  for (const SmallVector<int64_t> &a : axes)
    dims.push_back(DenseI64ArrayAttr::get(parser.getContext(), a));
  return parser.getChecked<TensorShardingAttr>(
      loc, parser.getContext(), ArrayAttr::get(parser.getContext(), dims));
}

void TensorShardingAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printDims(printer);
  printer << ">";
}

Attribute TensorShardingAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  TensorShardingAttr attr = parseDims(parser);
  if (!attr || parser.parseGreater())
    return {};
  return attr;
}

//===----------------------------------------------------------------------===//
// OpShardingAttr
//===----------------------------------------------------------------------===//

LogicalResult
OpShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       StringRef strategy, ArrayRef<TensorShardingAttr>,
                       ArrayRef<TensorShardingAttr>, PartialReduction) {
  if (strategy.empty())
    return emitError() << "an op sharding names its strategy";
  return success();
}

namespace {

/// `[<[{}, {0}]>, <[{0}, {}]>]`: no two brackets in a row, so that
/// FileCheck patterns can spell it.
void printList(AsmPrinter &printer, ArrayRef<TensorShardingAttr> list) {
  printer << "[";
  llvm::interleaveComma(list, printer,
                        [&](TensorShardingAttr t) { t.print(printer); });
  printer << "]";
}

ParseResult parseList(AsmParser &parser,
                      SmallVectorImpl<TensorShardingAttr> &list) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        auto t = dyn_cast_or_null<TensorShardingAttr>(
            TensorShardingAttr::parse(parser, Type()));
        if (!t)
          return failure();
        list.push_back(t);
        return success();
      });
}

} // namespace

void OpShardingAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << getStrategy() << "\"";
  if (!getOperands().empty()) {
    printer << ", operands = ";
    printList(printer, getOperands());
  }
  printer << ", results = ";
  printList(printer, getResults());
  if (getPartial() != PartialReduction::None)
    printer << ", partial = " << stringifyPartialReduction(getPartial());
  printer << ">";
}

Attribute OpShardingAttr::parse(AsmParser &parser, Type) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  std::string strategy;
  SmallVector<TensorShardingAttr> operands, results;
  PartialReduction partial = PartialReduction::None;
  if (parser.parseLess() || parser.parseString(&strategy))
    return {};
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    llvm::SMLoc keyLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "operands") {
      if (parseList(parser, operands))
        return {};
    } else if (key == "results") {
      if (parseList(parser, results))
        return {};
    } else if (key == "partial") {
      StringRef name;
      if (parser.parseKeyword(&name))
        return {};
      std::optional<PartialReduction> p = symbolizePartialReduction(name);
      if (!p) {
        parser.emitError(keyLoc) << "unknown partial reduction '" << name
                                 << "' (expected none, all_reduce, "
                                    "reduce_scatter or all_reduce_mean)";
        return {};
      }
      partial = *p;
    } else {
      parser.emitError(keyLoc)
          << "unknown key '" << key
          << "' in an op sharding (expected operands, results or partial)";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<OpShardingAttr>(loc, parser.getContext(), strategy,
                                           operands, results, partial);
}

//===----------------------------------------------------------------------===//
// graph.sharding on an op
//===----------------------------------------------------------------------===//

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() != kShardingAttrName)
    return op->emitError() << "unknown graph dialect attribute '"
                           << attr.getName().getValue() << "'";
  auto sharding = dyn_cast<OpShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitError() << kShardingAttrName
                           << " must be a #graph.op_sharding";
  auto check = [&](StringRef what, ValueRange values,
                   ArrayRef<TensorShardingAttr> list) -> LogicalResult {
    if (list.size() != values.size())
      return op->emitError()
             << kShardingAttrName << " has " << list.size() << " " << what
             << " sharding(s) for " << values.size() << " " << what << "(s)";
    for (auto [i, pair] : llvm::enumerate(llvm::zip(values, list))) {
      auto [value, tensor] = pair;
      auto type = dyn_cast<ShapedType>(value.getType());
      int64_t rank = type && type.hasRank() ? type.getRank() : 0;
      if (tensor.getRank() != rank)
        return op->emitError()
               << kShardingAttrName << ": " << what << " " << i << " has rank "
               << rank << " but its sharding lists " << tensor.getRank()
               << " dimension(s)";
    }
    return success();
  };
  if (failed(check("operand", op->getOperands(), sharding.getOperands())))
    return failure();
  return check("result", op->getResults(), sharding.getResults());
}
