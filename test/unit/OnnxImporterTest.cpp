//===- OnnxImporterTest.cpp - The ONNX importer on real exports -----------===//
//
// Imports the exported models of test/models (see its README and
// models.json) and small graphs built here with the ONNX protobuf API, and
// checks shapes, parameter counts and diagnostics.
//
//===----------------------------------------------------------------------===//

#include "OnnxTestUtil.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace cleave;
using namespace cleave::testing;

namespace {

std::string modelPath(llvm::StringRef file) {
  return std::string(CLEAVE_TEST_MODELS_DIR) + "/" + file.str();
}

ImportOptions batchOptions(int64_t batch) {
  ImportOptions options;
  options.batch = batch;
  return options;
}

/// Checks what every import must give: a verified module with the
/// attributes and the body layout of the importer's contract.
void expectWellFormed(Import &import, llvm::StringRef stem) {
  ASSERT_TRUE(import.module) << import.allErrors();
  EXPECT_TRUE(import.errors.empty()) << import.allErrors();
  EXPECT_TRUE(succeeded(verify(*import.module)));
  ModuleOp module = *import.module;
  EXPECT_EQ(module->getAttrOfType<StringAttr>("cleave.model").getValue(), stem);
  EXPECT_EQ(module->getAttrOfType<StringAttr>("cleave.source").getValue(),
            "onnx");
  func::FuncOp forward = import.forward();
  ASSERT_TRUE(forward);
  EXPECT_EQ(forward.getNumArguments(), 0u);
  // Inputs and parameters lead the body, then the operators.
  bool inSources = true;
  for (Operation &op : forward.getBody().front()) {
    bool source = isa<graph::InputOp, graph::ParamOp>(op);
    EXPECT_TRUE(inSources || !source) << "source op after the operators";
    inSources &= source;
  }
}

//===----------------------------------------------------------------------===//
// The exported models
//===----------------------------------------------------------------------===//

TEST(OnnxImporter, ResNet50) {
  MLIRContext ctx;
  Import import = importFile(ctx, modelPath("resnet50.onnx"), batchOptions(2));
  expectWellFormed(import, "resnet50");
  ASSERT_TRUE(import.module);
  EXPECT_EQ(import.resultShape(), (SmallVector<int64_t>{2, 1000}));
  // The exporter folds BatchNorm into the convolutions, so the graph holds
  // conv weights and biases only: 25,530,472 elements, the ONNX
  // initializer count of models.json. torch's 25,557,032 also counts the
  // BatchNorm scales and shifts (2 x 26,560) but not the conv biases the
  // folding adds (26,560), so the two differ by 26,560.
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 25530472);
  EXPECT_EQ(import.paramElements(/*trainable=*/false), 0);
  EXPECT_EQ(import.count<graph::Conv2dOp>(), 53);
  EXPECT_EQ(import.count<graph::MaxPool2dOp>(), 1);
  EXPECT_EQ(import.count<graph::GlobalAvgPoolOp>(), 1);
  EXPECT_EQ(import.count<graph::MatmulOp>(), 1); // the Gemm head
}

TEST(OnnxImporter, VitB16) {
  MLIRContext ctx;
  Import import = importFile(ctx, modelPath("vit_b_16.onnx"), batchOptions(2));
  expectWellFormed(import, "vit_b_16");
  ASSERT_TRUE(import.module);
  EXPECT_EQ(import.resultShape(), (SmallVector<int64_t>{2, 1000}));
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 86567656);
  EXPECT_EQ(import.count<graph::LayerNormOp>(), 25);
  // The exporter's run-time shape arithmetic must have folded to the
  // attention shapes: [batch * heads, tokens, tokens].
  int softmaxes = 0;
  import.module->walk([&](graph::SoftmaxOp op) {
    EXPECT_EQ(op.getType().getShape(), (ArrayRef<int64_t>{24, 197, 197}));
  ++softmaxes;
});
EXPECT_EQ(softmaxes, 12);
// Nothing of the shape arithmetic is left as graph ops on integers.
  import.module->walk([&](Operation *op) {
    if (isa<graph::ConstantOp>(op))
      return;
  for (Type t : op->getResultTypes())
    EXPECT_FALSE(cast<RankedTensorType>(t).getElementType().isInteger(64))
        << op->getName().getStringRef().str();
  } // namespace
);
}

TEST(OnnxImporter, GptDecoder) {
  MLIRContext ctx;
  ImportOptions options = batchOptions(2);
  options.seq = 16;
  Import import = importFile(ctx, modelPath("gpt_decoder.onnx"), options);
  expectWellFormed(import, "gpt_decoder");
  ASSERT_TRUE(import.module);
  EXPECT_EQ(import.resultShape(), (SmallVector<int64_t>{2, 16, 1000}));
  // torch counts the tied embedding / LM head once (3,448,320); the export
  // stores it twice, as the Gather table and as a transposed MatMul
  // initializer, adding 1000 x 256 = 256,000.
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 3448320 + 256000);
  // The decomposed LayerNorms (2 per block, 4 blocks, and the final one)
  // are recognised; no primitive ReduceMean is left over.
  EXPECT_EQ(import.count<graph::LayerNormOp>(), 9);
  EXPECT_EQ(import.count<graph::ReduceMeanOp>(), 0);
  // Position ids (Range) select rows of the table as a slice.
  EXPECT_EQ(import.count<graph::GatherOp>(), 1);
  // The causal masks fold to [1, 1, seq, seq] bool constants.
  int wheres = 0;
  import.module->walk([&](graph::WhereOp op) {
    auto mask = op.getCondition().getDefiningOp<graph::ConstantOp>();
  ASSERT_TRUE(mask);
  EXPECT_EQ(cast<RankedTensorType>(mask.getType()).getShape(),
            (ArrayRef<int64_t>{1, 1, 16, 16}));
  EXPECT_EQ(op.getType().getShape(), (ArrayRef<int64_t>{2, 4, 16, 16}));
  ++wheres;
});
EXPECT_EQ(wheres, 4);
}

TEST(OnnxImporter, Opset9ModelIsConverted) {
  MLIRContext ctx;
  Import import =
      importFile(ctx, modelPath("tiny_mlp_opset9.onnx"), ImportOptions());
  expectWellFormed(import, "tiny_mlp_opset9");
  ASSERT_TRUE(import.module);
  EXPECT_EQ(import.resultShape(), (SmallVector<int64_t>{4, 8}));
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 808);
  EXPECT_EQ(import.count<graph::MatmulOp>(), 2);
  EXPECT_EQ(import.count<graph::SoftmaxOp>(), 1);
}

TEST(OnnxImporter, KeepsInlineWeights) {
  MLIRContext ctx;
  Import import =
      importFile(ctx, modelPath("tiny_gpt_weights.onnx"), ImportOptions());
  expectWellFormed(import, "tiny_gpt_weights");
  ASSERT_TRUE(import.module);
  EXPECT_EQ(import.resultShape(), (SmallVector<int64_t>{2, 8, 64}));
  // models.json's onnx_initializer_count: the tied head twice, the
  // position table folded to the 8 positions used.
  EXPECT_EQ(import.paramElements(/*trainable=*/true), 29824);
  int params = 0;
  import.module->walk([&](graph::ParamOp op) {
    ASSERT_TRUE(op.getValueAttr()) << op.getName().str();
  EXPECT_EQ(op.getValueAttr().getType(), op.getType());
  ++params;
});
EXPECT_EQ(params, 29);
EXPECT_EQ(import.count<graph::LayerNormOp>(), 5);

// Without keepWeights, parameters carry only their type.
MLIRContext ctx2;
ImportOptions noWeights;
noWeights.keepWeights = false;
Import typesOnly =
    importFile(ctx2, modelPath("tiny_gpt_weights.onnx"), noWeights);
ASSERT_TRUE(typesOnly.module) << typesOnly.allErrors();
typesOnly.module->walk([&](graph::ParamOp op) {
  EXPECT_FALSE(op.getValueAttr());
});
}

TEST(OnnxImporter, ExternalWeightsAreNotRead) {
  // The dropped-weights models point at missing .onnx.data files: types
  // only, and no error about the missing files.
  MLIRContext ctx;
  Import import = importFile(ctx, modelPath("resnet50.onnx"), batchOptions(1));
  ASSERT_TRUE(import.module) << import.allErrors();
  import.module->walk(
      [&](graph::ParamOp op) { EXPECT_FALSE(op.getValueAttr());
});
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST(OnnxImporter, UnboundDimensionNamesInputDimAndFlag) {
  MLIRContext ctx;
  Import import =
      importFile(ctx, modelPath("gpt_decoder.onnx"), batchOptions(2));
  EXPECT_FALSE(import.module);
  ASSERT_EQ(import.errors.size(), 1u) << import.allErrors();
  const std::string &e = import.errors.front();
  EXPECT_NE(e.find("'input_ids'"), std::string::npos) << e;
  EXPECT_NE(e.find("'seq'"), std::string::npos) << e;
  EXPECT_NE(e.find("--dim seq=VALUE"), std::string::npos) << e;
  EXPECT_EQ(e.find("'batch'"), std::string::npos) << e;
}

TEST(OnnxImporter, ExactDimNameTakesPrecedence) {
  MLIRContext ctx;
  ImportOptions options = batchOptions(2);
  options.seq = 16;
  options.dims["seq"] = 8;
  Import import = importFile(ctx, modelPath("gpt_decoder.onnx"), options);
  ASSERT_TRUE(import.module) << import.allErrors();
  EXPECT_EQ(import.resultShape(), (SmallVector<int64_t>{2, 8, 1000}));
}

TEST(OnnxImporter, UnsupportedOpsAreListedInOneError) {
  ModelBuilder m;
  m.input("boxes", onnx::TensorProto::FLOAT, {1, 10, 4});
  m.input("scores", onnx::TensorProto::FLOAT, {1, 1, 10});
  m.input("x", onnx::TensorProto::FLOAT, {4, 8});
  m.node("NonMaxSuppression", "nms_1", {"boxes", "scores"}, {"sel1"});
  m.node("Unique", "unique_0", {"x"}, {"values"});
  m.node("NonMaxSuppression", "nms_2", {"boxes", "scores"}, {"sel2"});
  m.node("Relu", "relu", {"values"}, {"relu_out"});
  m.output("sel1", 2, onnx::TensorProto::INT64);
  m.output("sel2", 2, onnx::TensorProto::INT64);
  m.output("relu_out", 2);

  MLIRContext ctx;
  Import import = m.import(ctx);
  EXPECT_FALSE(import.module);
  ASSERT_EQ(import.errors.size(), 1u) << import.allErrors();
  EXPECT_NE(import.errors.front().find(
                "unsupported ONNX ops: NonMaxSuppression (nodes: nms_1, "
                "nms_2), Unique (nodes: unique_0)"),
            std::string::npos)
      << import.errors.front();
}

TEST(OnnxImporter, CorruptFileNamesTheFile) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("corrupt", "onnx", path));
  {
    std::ofstream out(path.str().str(), std::ios::binary);
    out << "\xff\xff\xff this is not a protobuf \x01\x02";
  }
  MLIRContext ctx;
  Import import = importFile(ctx, path, ImportOptions());
  llvm::sys::fs::remove(path);
  EXPECT_FALSE(import.module);
  ASSERT_EQ(import.errors.size(), 1u) << import.allErrors();
  EXPECT_EQ(import.errorFiles.front(), path.str().str());
  EXPECT_NE(import.errors.front().find("not an ONNX model"), std::string::npos)
      << import.errors.front();
}

TEST(OnnxImporter, MissingFileNamesTheFile) {
  MLIRContext ctx;
  Import import = importFile(ctx, "/nonexistent/model.onnx", ImportOptions());
  EXPECT_FALSE(import.module);
  ASSERT_EQ(import.errors.size(), 1u);
  EXPECT_EQ(import.errorFiles.front(), "/nonexistent/model.onnx");
  EXPECT_NE(import.errors.front().find("cannot read the file"),
            std::string::npos)
      << import.errors.front();
}

TEST(OnnxImporter, CheckerFailureIsAnError) {
  // A node reading a value that nothing defines fails the ONNX checker.
  ModelBuilder m;
  m.input("x", onnx::TensorProto::FLOAT, {2});
  m.node("Relu", "relu", {"undefined"}, {"y"});
  m.output("y", 1);
  MLIRContext ctx;
  Import import = m.import(ctx);
  EXPECT_FALSE(import.module);
  ASSERT_EQ(import.errors.size(), 1u) << import.allErrors();
  EXPECT_NE(import.errors.front().find("invalid ONNX model"), std::string::npos)
      << import.errors.front();
}

} // namespace
