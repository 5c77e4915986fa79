//===- KvCacheTest.cpp - Generation through the cache equals the forward ---===//
//
// The same zoo decoder is built twice with the same random weights: for
// the whole sequence (the reference: causal attention over S tokens), and
// for one token a step, rewritten by cleave-kv-cache. Run step by step by
// the reference evaluator, each step writing its keys and values into the
// paged cache (blocks of 2 positions, scattered over the pool in another
// order for each sequence) and attending over it, the step's logits must
// equal the full forward's logits at that position: rotary embeddings (or
// GPT's learned positions), grouped-query heads and the cache layout all
// have to agree for that.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Evaluator/GraphEvaluator.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace mlir;
namespace k = cleave::kernels;
namespace gr = cleave::graph;

namespace {

constexpr int64_t kBatch = 2, kSteps = 7, kBlock = 2;

struct Model {
  std::unique_ptr<MLIRContext> ctx = std::make_unique<MLIRContext>();
  OwningOpRef<ModuleOp> module;
  func::FuncOp forward;
};

/// `spec` built at `seq` tokens, its attention fused; `step`: rewritten
/// into a generation step, with each updated cache returned too so the
/// test can carry it to the next step.
Model build(const std::string &spec, int64_t seq, bool step) {
  Model m;
  DialectRegistry registry;
  cleave::registerCleaveDialects(registry);
  m.ctx->appendDialectRegistry(registry);
  auto built = cleave::buildZooModel(
      *m.ctx, spec + ",seq=" + std::to_string(seq) + ",batch=" +
                  std::to_string(kBatch),
      {});
  if (!built) {
    ADD_FAILURE() << llvm::toString(built.takeError());
    return m;
  }
  m.module = std::move(*built);
  PassManager pm(m.ctx.get());
  pm.addNestedPass<func::FuncOp>(cleave::createFuseAttention());
  if (step)
    pm.addPass(cleave::createKvCache(
        {/*blockSize=*/kBlock, /*maxLength=*/kSteps, /*blocks=*/0}));
  EXPECT_TRUE(succeeded(pm.run(*m.module)));
  m.forward = m.module->lookupSymbol<func::FuncOp>("forward");
  auto ret = cast<func::ReturnOp>(m.forward.front().getTerminator());
  SmallVector<Value> results(ret.getOperands());
  if (!step) {
    // The reference's logits rather than its loss.
    auto loss = results[0].getDefiningOp<gr::CrossEntropyOp>();
    EXPECT_TRUE(loss);
    results[0] = loss.getLogits();
  }
  m.forward.walk([&](gr::CacheWriteOp w) { results.push_back(w.getResult()); });
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  m.forward.setFunctionType(FunctionType::get(
      m.ctx.get(), {}, ValueRange(results).getTypes()));
  return m;
}

/// The same random weights for every parameter name.
void bindWeights(func::FuncOp f, cleave::GraphEvaluator &eval) {
  f.walk([&](gr::ParamOp p) {
    auto type = cast<RankedTensorType>(p.getType());
    k::Tensor t(k::Shape(type.getShape().begin(), type.getShape().end()));
    std::mt19937 rng(std::hash<std::string>()(p.getName().str()) & 0xffff);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    for (float &x : t.values())
      x = p.getFrozen() ? 0.0f : normal(rng);
    eval.bindings[p.getName().str()] = std::move(t);
  });
}

void expectStepsMatchForward(const std::string &spec) {
  Model full = build(spec, kSteps, /*step=*/false);
  Model step = build(spec, 1, /*step=*/true);
  ASSERT_TRUE(full.forward && step.forward);

  std::vector<int64_t> tokens(kBatch * kSteps);
  std::mt19937 rng(3);
  for (int64_t &t : tokens)
    t = rng() % 64;
  cleave::GraphEvaluator reference;
  bindWeights(full.forward, reference);
  reference.bindings["tokens"] = k::IndexTensor({kBatch, kSteps}, tokens);
  reference.bindings["labels"] = k::IndexTensor({kBatch, kSteps}, 0);
  auto expected = reference.run(full.forward);
  ASSERT_TRUE(succeeded(expected));
  const k::Tensor &logits = std::get<k::Tensor>((*expected)[0]);
  int64_t vocab = logits.shape().back();

  cleave::GraphEvaluator gen;
  bindWeights(step.forward, gen);
  // Sequence 0 holds blocks 3, 0, 5, 1; sequence 1 blocks 2, 6, 4, 7: the
  // pool's order is not the sequences'.
  int64_t maxBlocks = (kSteps + kBlock - 1) / kBlock;
  std::vector<int64_t> table = {3, 0, 5, 1, 2, 6, 4, 7};
  ASSERT_EQ(int64_t(table.size()), kBatch * maxBlocks);
  gen.bindings["block_table"] = k::IndexTensor({kBatch, maxBlocks}, table);
  for (int64_t t = 0; t < kSteps; ++t) {
    std::vector<int64_t> now, positions, slots, lengths;
    for (int64_t b = 0; b < kBatch; ++b) {
      now.push_back(tokens[b * kSteps + t]);
      positions.push_back(t);
      slots.push_back(table[b * maxBlocks + t / kBlock] * kBlock + t % kBlock);
      lengths.push_back(t + 1);
    }
    gen.bindings["tokens"] = k::IndexTensor({kBatch, 1}, now);
    gen.bindings["positions"] = k::IndexTensor({kBatch, 1}, positions);
    gen.bindings["slots"] = k::IndexTensor({kBatch}, slots);
    gen.bindings["lengths"] = k::IndexTensor({kBatch}, lengths);
    auto out = gen.run(step.forward);
    ASSERT_TRUE(succeeded(out)) << "step " << t;
    const k::Tensor &stepLogits = std::get<k::Tensor>((*out)[0]);
    ASSERT_EQ(stepLogits.shape(), (k::Shape{kBatch, 1, vocab}));
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t v = 0; v < vocab; ++v)
        ASSERT_NEAR(stepLogits[b * vocab + v],
                    logits[(b * kSteps + t) * vocab + v], 1e-4)
            << "sequence " << b << " position " << t << " logit " << v;
    // The caches this step wrote are the next step's.
    size_t r = 1;
    step.forward.walk([&](gr::CacheWriteOp w) {
      auto p = w.getCache().getDefiningOp<gr::ParamOp>();
      gen.bindings[p.getName().str()] = std::get<k::Tensor>((*out)[r++]);
    });
  }
}

TEST(KvCache, LlamaGroupedQueryStepsMatchTheForwardPass) {
  expectStepsMatchForward("llama,layers=2,hidden=64,heads=4,kv_heads=2,"
                          "ffn=96,vocab=64");
}

TEST(KvCache, GptLearnedPositionStepsMatchTheForwardPass) {
  expectStepsMatchForward("gpt,layers=2,hidden=64,heads=4,vocab=64,"
                          "positions=16,dropout=0");
}

} // namespace
