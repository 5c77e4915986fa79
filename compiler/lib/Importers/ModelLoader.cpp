//===- ModelLoader.cpp - One entry point for every model source -----------===//

#include "cleave/Importers/ModelLoader.h"

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/Importers/OnnxImporter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace cleave {

void registerCleaveDialects(DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, func::FuncDialect>();
}

Operation *getForwardFunction(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("forward");
}

static OwningOpRef<ModuleOp> loadMlir(MLIRContext &ctx, llvm::StringRef path,
                                      const ImportOptions &options) {
  Location fileLoc = FileLineColLoc::get(&ctx, path, 0, 0);
  if (options.seq || !options.dims.empty()) {
    emitError(fileLoc) << "--seq and --dim bind ONNX and zoo models; MLIR "
                          "text already has static shapes";
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  std::string includedFile;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer) {
    emitError(fileLoc) << "cannot read file: " << buffer.getError().message();
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module)
    return nullptr;
  if (!getForwardFunction(*module)) {
    emitError(fileLoc) << "expected a func.func @forward holding the model";
    return nullptr;
  }
  // A batch asked for (--batch, or the microbatch compile plans) must be
  // the one the text was written with: its shapes are static.
  if (options.batch) {
    int64_t batch = -1;
    std::string input;
    module->walk([&](graph::InputOp op) {
      auto type = dyn_cast<RankedTensorType>(op.getType());
      if (batch >= 0 || !type || type.getRank() == 0)
        return;
      batch = type.getDimSize(0);
      input = op.getName().str();
    });
    if (batch >= 0 && batch != *options.batch) {
      emitError(fileLoc) << "MLIR text has static shapes: its batch is "
                         << batch << " (the leading dimension of input '"
                         << input << "'), not " << *options.batch;
      return nullptr;
    }
  }
  return module;
}

/// Tensors beyond 2^48 elements (a petabyte of fp32 each) are no model a
/// device could train, and their element, byte and FLOP counts would pass
/// int64's range in the cost model: refused, naming the op.
static LogicalResult checkTensorSizes(ModuleOp module) {
  constexpr int64_t kMostElements = int64_t(1) << 48;
  WalkResult walk = module.walk([&](Operation *op) {
    for (Type type : op->getResultTypes()) {
      auto shaped = dyn_cast<ShapedType>(type);
      if (!shaped || !shaped.hasRank())
        continue;
      int64_t elements = 1;
      bool tooMany = false;
      for (int64_t d : shaped.getShape()) {
        if (d <= 0)
          continue; // dynamic or empty
        if (elements > kMostElements / d) {
          tooMany = true;
          break;
        }
        elements *= d;
      }
      if (tooMany) {
        op->emitOpError() << "makes a tensor of type " << type
                          << ": more than 2^48 elements, which no device "
                             "could hold";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

static OwningOpRef<ModuleOp> loadUnchecked(MLIRContext &ctx,
                                           llvm::StringRef model,
                                           const ImportOptions &options);

OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx, llvm::StringRef model,
                                const ImportOptions &options) {
  OwningOpRef<ModuleOp> module = loadUnchecked(ctx, model, options);
  if (module && failed(checkTensorSizes(*module)))
    return nullptr;
  return module;
}

static OwningOpRef<ModuleOp> loadUnchecked(MLIRContext &ctx,
                                           llvm::StringRef model,
                                           const ImportOptions &options) {
  DialectRegistry registry;
  registerCleaveDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();

  if (model.consume_front("zoo:")) {
    auto module = buildZooModel(ctx, model, options);
    if (!module) {
      emitError(NameLoc::get(StringAttr::get(&ctx, "zoo:" + model)))
          << llvm::toString(module.takeError());
      return nullptr;
    }
    return std::move(*module);
  }
  Location fileLoc = FileLineColLoc::get(&ctx, model, 0, 0);
  if (llvm::sys::fs::is_directory(model)) {
    emitError(fileLoc) << "a directory, not a model file";
    return nullptr;
  }
  if (model.ends_with(".onnx")) {
    if (!llvm::sys::fs::exists(model)) {
      emitError(fileLoc) << "no such file";
      return nullptr;
    }
    return importOnnxFile(ctx, model, options);
  }
  if (model.ends_with(".mlir") || model == "-")
    return loadMlir(ctx, model, options);
  emitError(fileLoc) << "unknown model kind: expected a .onnx or .mlir file "
                        "or zoo:NAME (see `cleave zoo`)";
  return nullptr;
}

} // namespace cleave
