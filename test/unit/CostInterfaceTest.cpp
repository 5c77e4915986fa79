//===- CostInterfaceTest.cpp - FLOPs and bytes reported by graph ops ------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace cleave::graph;

namespace {

struct Costs {
  int64_t flops, read, written;
};

/// Parses a function body and returns the cost of its first op named `name`.
Costs costOf(llvm::StringRef body, llvm::StringRef name) {
  MLIRContext ctx;
  ctx.loadDialect<GraphDialect, func::FuncDialect>();
  std::string text = "func.func @f() {\n" + body.str() + "\n  return\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  EXPECT_TRUE(module) << text;
  Costs c{-1, -1, -1};
  module->walk([&](CostOpInterface op) {
    if (op->getName().getStringRef() == name && c.flops < 0)
      c = {op.getFlops(), op.getBytesRead(), op.getBytesWritten()};
  });
  return c;
}

TEST(CostInterface, MatmulCountsTwoFlopsPerMultiplyAdd) {
  Costs c = costOf(R"(
  %a = graph.param "a" : tensor<8x16x32xf32>
  %b = graph.param "b" : tensor<32x64xbf16>
  %bf = graph.cast %b : tensor<32x64xbf16> to tensor<32x64xf32>
  %y = graph.matmul %a, %bf : tensor<8x16x32xf32>, tensor<32x64xf32>)",
                   "graph.matmul");
  EXPECT_EQ(c.flops, 2 * 8 * 16 * 64 * 32);
  EXPECT_EQ(c.read, 4 * (8 * 16 * 32 + 32 * 64));
  EXPECT_EQ(c.written, 4 * 8 * 16 * 64);
}

TEST(CostInterface, ConvCountsPerOutputWindow) {
  Costs c = costOf(R"(
  %x = graph.param "x" : tensor<2x8x10x10xf32>
  %w = graph.param "w" : tensor<16x4x3x3xf32>
  %b = graph.param "b" : tensor<16xf32>
  %y = graph.conv2d %x, %w bias(%b : tensor<16xf32>) strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 2 : tensor<2x8x10x10xf32>, tensor<16x4x3x3xf32>)",
                   "graph.conv2d");
  // Each of 2*16*10*10 outputs: 4*3*3 multiply-adds plus the bias.
  EXPECT_EQ(c.flops, 2 * 16 * 10 * 10 * (2 * 4 * 3 * 3 + 1));
}

TEST(CostInterface, GatherReadsOnlySelectedRows) {
  Costs c = costOf(R"(
  %t = graph.param "t" : tensor<50000x512xf32>
  %i = graph.input "i" : tensor<4x8xi64>
  %e = graph.gather %t[%i] axis = 0 : tensor<50000x512xf32>, tensor<4x8xi64>)",
                   "graph.gather");
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.read, 4 * 8 * 512 * 4 + 4 * 8 * 8);
  EXPECT_EQ(c.written, 4 * 8 * 512 * 4);
}

TEST(CostInterface, ReshapeIsAFreeView) {
  Costs c = costOf(R"(
  %t = graph.param "t" : tensor<4x6xf32>
  %r = graph.reshape %t : tensor<4x6xf32> -> tensor<24xf32>)",
                   "graph.reshape");
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.read, 0);
  EXPECT_EQ(c.written, 0);
}

TEST(CostInterface, ElementwiseAndNormsCountPerElement) {
  EXPECT_EQ(costOf(R"(
  %a = graph.param "a" : tensor<3x5xf32>
  %g = graph.gelu %a : tensor<3x5xf32>)",
                   "graph.gelu")
                .flops,
            8 * 15);
  EXPECT_EQ(costOf(R"(
  %a = graph.param "a" : tensor<3x5xf32>
  %b = graph.param "b" : tensor<5xf32>
  %s = graph.add %a, %b : tensor<3x5xf32>, tensor<5xf32>)",
                   "graph.add")
                .flops,
            15);
  EXPECT_EQ(costOf(R"(
  %a = graph.param "a" : tensor<3x5xf32>
  %s = graph.softmax %a axis = 1 : tensor<3x5xf32>)",
                   "graph.softmax")
                .flops,
            5 * 15);
}

TEST(CostInterface, MoeCombineCountsWeightedSum) {
  Costs c = costOf(R"(
  %y = graph.param "y" : tensor<4x6x32xf32>
  %w = graph.param "w" : tensor<10x2xf32>
  %i = graph.input "i" : tensor<10x2xi64>
  %o = graph.moe_combine %y, %w, %i : tensor<4x6x32xf32>, tensor<10x2xf32>, tensor<10x2xi64>)",
                   "graph.moe_combine");
  EXPECT_EQ(c.flops, 2 * 10 * 2 * 32);
}

} // namespace
