//===- cleave-opt.cpp - The cleave optimizer driver -----------------------===//
//
// mlir-opt with the project's dialects and passes, for lit tests and for
// running single passes by hand.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Lowering/LoweringPipeline.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<cleave::graph::GraphDialect, mlir::func::FuncDialect>();
  cleave::registerAutodiffExternalModels(registry);
  cleave::registerCleavePasses();
  cleave::lowering::registerLoweringPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "cleave optimizer driver\n", registry));
}
