//===- DecoderShapeTest.cpp - An imported decoder's serving dimensions ----===//

#include "cleave/Analysis/TransformerShape.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;

namespace {

/// readDecoderModel of @forward with `body`, and the diagnostics it gave.
struct Read {
  FailureOr<cleave::cost::TransformerModel> model;
  std::string diagnostics;
};

Read readBody(llvm::StringRef body, llvm::StringRef result) {
  MLIRContext ctx;
  ctx.loadDialect<cleave::graph::GraphDialect, func::FuncDialect>();
  std::string text = "func.func @forward() -> " + result.str() + " {\n" +
                     body.str() + "\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  EXPECT_TRUE(module) << text;
  Read r{failure(), ""};
  ScopedDiagnosticHandler collect(&ctx, [&](Diagnostic &d) {
    r.diagnostics += d.str() + "\n";
    return success();
  });
  r.model = cleave::readDecoderModel(*module);
  return r;
}

// Two grouped-query layers (4 heads over 2 key/value heads), a gated MLP
// of 48 ([ffn, hidden] weights transposed as exporters write them), the
// token table 100 x 16 and a second table read by row (learned positions).
constexpr const char *kLayer = R"(
  %q%L = graph.reshape %x%L : tensor<2x3x16xf32> -> tensor<2x2x2x3x4xf32>
  %k%L = graph.slice %q%L starts [0, 0, 0, 0, 0] limits [2, 2, 1, 3, 4] strides [1, 1, 1, 1, 1] : tensor<2x2x2x3x4xf32>
  %o%L, %l%L = graph.attention %q%L, %k%L, %k%L scale = 0.5 causal : tensor<2x2x2x3x4xf32>, tensor<2x2x1x3x4xf32>, tensor<2x2x1x3x4xf32>
  %a%L = graph.reshape %o%L : tensor<2x2x2x3x4xf32> -> tensor<2x3x16xf32>
  %g%L = graph.matmul %a%L, %wg transpose_rhs : tensor<2x3x16xf32>, tensor<48x16xf32>
  %u%L = graph.matmul %a%L, %wu transpose_rhs : tensor<2x3x16xf32>, tensor<48x16xf32>
  %h%L = graph.mul %g%L, %u%L : tensor<2x3x48xf32>, tensor<2x3x48xf32>
  %x%N = graph.matmul %h%L, %wd : tensor<2x3x48xf32>, tensor<48x16xf32>)";

std::string layer(int l) {
  std::string s = kLayer;
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"%L", std::to_string(l)},
        {"%N", std::to_string(l + 1)}})
    for (size_t at; (at = s.find(from)) != std::string::npos;)
      s.replace(at, from.size(), to);
  return s;
}

std::string decoder(bool causal) {
  std::string body = R"(
  %ids = graph.input "input_ids" : tensor<2x3xi64>
  %pos = graph.input "position_ids" : tensor<2x3xi64>
  %wte = graph.param "wte" : tensor<100x16xf32>
  %wpe = graph.param "wpe" : tensor<64x16xf32>
  %wg = graph.param "gate" : tensor<48x16xf32>
  %wu = graph.param "up" : tensor<48x16xf32>
  %wd = graph.param "down" : tensor<48x16xf32>
  %t = graph.gather %wte[%ids] axis = 0 : tensor<100x16xf32>, tensor<2x3xi64>
  %p = graph.gather %wpe[%pos] axis = 0 : tensor<64x16xf32>, tensor<2x3xi64>
  %x0 = graph.add %t, %p : tensor<2x3x16xf32>, tensor<2x3x16xf32>)";
  // The layers chain %x0 -> %x1 -> %x2.
  body += layer(0) + layer(1);
  body += "\n  return %x2 : tensor<2x3x16xf32>";
  if (!causal)
    for (size_t at; (at = body.find(" causal :")) != std::string::npos;)
      body.replace(at, 9, " :");
  return body;
}

TEST(DecoderShape, ReadsTheDimensionsOffTheGraph) {
  Read r = readBody(decoder(true), "tensor<2x3x16xf32>");
  ASSERT_TRUE(succeeded(r.model)) << r.diagnostics;
  EXPECT_EQ(r.model->layers, 2);
  EXPECT_EQ(r.model->heads, 4);
  EXPECT_EQ(r.model->kvHeads, 2);
  EXPECT_EQ(r.model->hidden, 16);
  EXPECT_EQ(r.model->vocab, 100);
  EXPECT_EQ(r.model->ffn, 48);
  EXPECT_TRUE(r.model->gatedMlp);
  EXPECT_TRUE(r.model->learnedPositions);
  EXPECT_TRUE(r.model->causal);
}

TEST(DecoderShape, RefusesAnEncoder) {
  Read r = readBody(decoder(false), "tensor<2x3x16xf32>");
  EXPECT_TRUE(failed(r.model));
  EXPECT_NE(r.diagnostics.find("is not causal self-attention: --serve plans "
                               "decoders"),
            std::string::npos)
      << r.diagnostics;
}

TEST(DecoderShape, RefusesAGraphWithoutTokenEmbedding) {
  Read r = readBody(R"(
  %x = graph.input "x" : tensor<2x2x3x4xf32>
  %o, %l = graph.attention %x, %x, %x scale = 0.5 causal : tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>)",
                    "tensor<2x2x3x4xf32>");
  EXPECT_TRUE(failed(r.model));
  EXPECT_NE(r.diagnostics.find("has no token embedding"), std::string::npos)
      << r.diagnostics;
}

TEST(DecoderShape, RefusesAGraphWithoutFusedAttention) {
  Read r = readBody(R"(
  %x = graph.input "x" : tensor<2x4xf32>
  return %x : tensor<2x4xf32>)",
                    "tensor<2x4xf32>");
  EXPECT_TRUE(failed(r.model));
  EXPECT_NE(r.diagnostics.find("has no fused causal attention"),
            std::string::npos)
      << r.diagnostics;
}

} // namespace
