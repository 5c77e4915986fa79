//===- ZooTest.cpp - Model zoo: parameter counts and settings -------------===//
//
// Parameter counts are checked against the published figures: exact where
// the reference implementation is public (Hugging Face, torchvision), the
// papers' rounded figures otherwise.
//
//===----------------------------------------------------------------------===//

#include "cleave/Analysis/ModelSummary.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Importers/ModelZoo.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;

namespace {

struct Built {
  std::unique_ptr<MLIRContext> ctx = std::make_unique<MLIRContext>();
  OwningOpRef<ModuleOp> module;
  std::string error;
};

Built build(llvm::StringRef spec, cleave::ImportOptions options = {}) {
  Built b;
  DialectRegistry registry;
  cleave::registerCleaveDialects(registry);
  b.ctx->appendDialectRegistry(registry);
  auto m = cleave::buildZooModel(*b.ctx, spec, options);
  if (!m)
    b.error = llvm::toString(m.takeError());
  else
    b.module = std::move(*m);
  return b;
}

int64_t params(llvm::StringRef spec) {
  Built b = build(spec);
  EXPECT_TRUE(b.module) << spec.str() << ": " << b.error;
  return b.module ? cleave::summarizeModel(*b.module).trainableParams : -1;
}

TEST(Zoo, ExactCountsOfReferenceImplementations) {
  EXPECT_EQ(params("gpt2"), 124439808);        // HF GPT2LMHeadModel
  EXPECT_EQ(params("bert-base"), 110106428);   // HF BertForPreTraining
  EXPECT_EQ(params("vit-b16"), 86567656);      // torchvision vit_b_16
  EXPECT_EQ(params("resnet50"), 25557032);     // torchvision resnet50
  EXPECT_EQ(params("wrn-50-2"), 68883240);     // torchvision wide_resnet50_2
  EXPECT_EQ(params("llama2-7b"), 6738415616);  // HF LlamaForCausalLM
  EXPECT_EQ(params("mixtral-8x7b"), 46702792704); // HF MixtralForCausalLM
}

TEST(Zoo, PublishedCountsOfLargeModels) {
  // GPT-3 175B: 12lh^2 + 13lh + (V + s)h + 2h, with the vocabulary of
  // 50257 padded to 50304 rows as Megatron-LM trains it (pad_vocab=128).
  int64_t gpt3 = params("gpt3-175b");
  EXPECT_EQ(gpt3, 174604836864);
  EXPECT_EQ(params("gpt,layers=96,hidden=12288,heads=96,seq=2048"),
            174604259328);
  EXPECT_NEAR(double(gpt3), 174.6e9, 0.001 * 174.6e9);
  EXPECT_NEAR(double(params("llama2-70b")), 69.0e9, 0.002 * 69.0e9);
  EXPECT_EQ(params("llama3-8b"), 8030261248);
  EXPECT_NEAR(double(params("llama3-405b")), 405.8e9, 0.005 * 405.8e9);
  EXPECT_NEAR(double(params("vit-h14")), 632.0e6, 0.005 * 632.0e6);
  // The BERT paper rounds BERT-Large to 340M; the architecture gives 336.2M.
  EXPECT_NEAR(double(params("bert-large")), 340.0e6, 0.015 * 340.0e6);
}

TEST(Zoo, FrozenStateIsNotCounted) {
  Built b = build("resnet50");
  ASSERT_TRUE(b.module);
  cleave::ModelSummary s = cleave::summarizeModel(*b.module);
  EXPECT_EQ(s.frozenParams, 2 * 26560); // running mean and variance
}

TEST(Zoo, OverridesAndFlagsBindSizes) {
  cleave::ImportOptions options;
  options.batch = 8;
  Built b = build("gpt,layers=2,hidden=128,heads=4,seq=64,vocab=1000", options);
  ASSERT_TRUE(b.module) << b.error;
  cleave::ModelSummary s = cleave::summarizeModel(*b.module);
  EXPECT_EQ(s.samples, 8);
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].type, "tensor<8x64xi64>");
  EXPECT_EQ(s.opHistogram["graph.layer_norm"], 5);
  EXPECT_EQ(s.opHistogram["graph.cross_entropy"], 1);
  // Forward matmul FLOPs dominate: 2 * tokens * (12 l h^2 + 2 l s h + V h).
  int64_t tokens = 8 * 64, l = 2, h = 128, seq = 64, v = 1000;
  int64_t matmulFlops = 2 * tokens * (12 * l * h * h + 2 * l * seq * h + v * h);
  EXPECT_GT(s.forwardFlops, matmulFlops);
  EXPECT_LT(s.forwardFlops, matmulFlops * 1.2);
}

TEST(Zoo, GroupedQueryAttentionSharesKeyHeads) {
  Built b = build("llama,layers=1,hidden=256,heads=8,kv_heads=2,ffn=512,"
                  "vocab=100,seq=16");
  ASSERT_TRUE(b.module) << b.error;
  bool sawGrouped = false;
  b.module->walk([&](cleave::graph::MatmulOp op) {
    if (op.getType().getRank() == 5) {
      EXPECT_EQ(op.getType().getShape(),
                ArrayRef<int64_t>({1, 2, 4, 16, 16}));
      sawGrouped = true;
    }
    return WalkResult::interrupt();
  });
  (void)sawGrouped;
}

TEST(Zoo, MoeRoutesThroughDispatchAndCombine) {
  Built b = build("mixtral-8x7b,layers=2,seq=128");
  ASSERT_TRUE(b.module) << b.error;
  cleave::ModelSummary s = cleave::summarizeModel(*b.module);
  EXPECT_EQ(s.opHistogram["graph.moe_gate"], 2);
  EXPECT_EQ(s.opHistogram["graph.moe_dispatch"], 2);
  EXPECT_EQ(s.opHistogram["graph.moe_combine"], 2);
  Built sw = build("switch-125m-8e");
  ASSERT_TRUE(sw.module) << sw.error;
  EXPECT_EQ(cleave::summarizeModel(*sw.module).opHistogram["graph.moe_gate"], 6);
}

TEST(Zoo, BadSettingsNameTheKey) {
  Built unknown = build("gpt,layrs=2");
  EXPECT_FALSE(unknown.module);
  EXPECT_NE(unknown.error.find("unknown key 'layrs'"), std::string::npos)
      << unknown.error;
  Built bad = build("gpt2,hidden=-4");
  EXPECT_NE(bad.error.find("'hidden' takes a positive integer"),
            std::string::npos)
      << bad.error;
  Built indivisible = build("gpt2,heads=7");
  EXPECT_NE(indivisible.error.find("multiple of heads"), std::string::npos)
      << indivisible.error;
  Built model = build("gpt5");
  EXPECT_NE(model.error.find("unknown zoo model 'gpt5'"), std::string::npos);
}

} // namespace
