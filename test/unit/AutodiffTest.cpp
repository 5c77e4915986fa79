//===- AutodiffTest.cpp - Training-step gradients vs finite differences ---===//
//
// For every differentiable op: a small graph computes loss = sum(op(...) *
// probe) with a random probe, the training-step pass (optimizer=none) builds
// its gradients, the evaluator runs both, and every gradient element is
// compared with a central finite difference of the forward loss.
//
//===----------------------------------------------------------------------===//

#include "OnnxTestUtil.h"

#include "cleave/Evaluator/GraphEvaluator.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/Autodiff.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace mlir;
namespace k = cleave::kernels;

namespace {

struct GradCase {
  const char *name;
  /// Body of @forward: defines %out from graph.param (differentiated) and
  /// graph.input (not differentiated) values.
  const char *body;
  const char *outType;
  /// Floats are drawn from [lo, hi]; indices from [0, indexRange).
  float lo = -1.0f, hi = 1.0f;
  int64_t indexRange = 4;
};

std::string wrap(const GradCase &c) {
  // "tensor<2x3xf32>": one 'x' per dimension.
  int64_t rank = llvm::count(llvm::StringRef(c.outType), 'x');
  std::string axes;
  for (int64_t i = 0; i < rank; ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  std::string s = "func.func @forward() -> tensor<f32> {\n";
  s += c.body;
  s += "\n  %probe = graph.param \"probe\" frozen : " + std::string(c.outType);
  s += "\n  %weighted = graph.mul %out, %probe : " + std::string(c.outType) +
       ", " + c.outType;
  s += "\n  %loss = graph.reduce_sum %weighted [" + axes + "] : " + c.outType;
  s += "\n  return %loss : tensor<f32>\n}\n";
  return s;
}

k::Shape shapeOf(Type t) {
  auto r = cast<RankedTensorType>(t);
  return k::Shape(r.getShape().begin(), r.getShape().end());
}

float scalarOf(const cleave::EvalTensor &t) {
  return std::get<k::Tensor>(t)[0];
}

struct Domain {
  float lo = -1.0f, hi = 1.0f;
  int64_t indexRange = 4;
  /// Elements of each parameter compared with finite differences (all when
  /// the parameter is smaller).
  int64_t samplesPerParam = 1 << 30;
};

/// Runs the training-step pass on `module` and compares every gradient it
/// returns with central finite differences of @forward's loss.
void checkModuleGradients(ModuleOp module, const Domain &d) {
  PassManager pm(module.getContext());
  cleave::TrainingStepOptions options;
  options.optimizer = "none";
  pm.addPass(cleave::createTrainingStep(options));
  ASSERT_TRUE(succeeded(pm.run(module)));
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  auto step = module.lookupSymbol<func::FuncOp>("train_step");

  // Random bindings for every input and parameter.
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> real(d.lo, d.hi);
  std::uniform_int_distribution<int64_t> index(0, d.indexRange - 1);
  cleave::GraphEvaluator eval;
  forward.walk([&](Operation *op) {
    auto name = op->getAttrOfType<StringAttr>("name");
    if (!name || op->getNumResults() != 1)
      return;
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    k::Shape shape = shapeOf(type);
    if (isa<FloatType>(type.getElementType())) {
      k::Tensor t(shape);
      for (float &v : t.values())
        v = real(rng);
      eval.bindings[name.str()] = t;
    } else if (type.getElementType().isInteger(1)) {
      k::MaskTensor t(shape);
      for (uint8_t &v : t.values())
        v = index(rng) % 2;
      eval.bindings[name.str()] = t;
    } else {
      k::IndexTensor t(shape);
      for (int64_t &v : t.values())
        v = index(rng);
      eval.bindings[name.str()] = t;
    }
  });

  auto stepResults = eval.run(step);
  ASSERT_TRUE(succeeded(stepResults));
  auto base = eval.run(forward);
  ASSERT_TRUE(succeeded(base));
  EXPECT_NEAR(scalarOf((*stepResults)[0]), scalarOf((*base)[0]), 1e-5);

  int checked = 0;
  for (unsigned i = 1; i < step.getNumResults(); ++i) {
    std::string name =
        step.getResultAttrOfType<StringAttr>(i, "cleave.grad").str();
    const k::Tensor &grad = std::get<k::Tensor>((*stepResults)[i]);
    k::Tensor &param = std::get<k::Tensor>(eval.bindings[name]);
    int64_t n = param.numElements();
    int64_t stride = std::max<int64_t>(1, n / d.samplesPerParam);
    for (int64_t e = 0; e < n; e += stride) {
      float saved = param[e];
      float h = 1e-3f * std::max(1.0f, std::fabs(saved));
      param[e] = saved + h;
      float up = scalarOf((*eval.run(forward))[0]);
      param[e] = saved - h;
      float down = scalarOf((*eval.run(forward))[0]);
      param[e] = saved;
      float fd = (up - down) / (2 * h);
      EXPECT_NEAR(grad[e], fd, 2e-2f * std::max(1.0f, std::fabs(fd)))
          << name << "[" << e << "] = " << saved;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

struct Context {
  MLIRContext ctx;
  Context() {
    DialectRegistry registry;
    registry.insert<cleave::graph::GraphDialect, func::FuncDialect>();
    cleave::registerAutodiffExternalModels(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
};

void checkGradients(const GradCase &c) {
  SCOPED_TRACE(c.name);
  Context context;
  std::string text = wrap(c);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, &context.ctx);
  ASSERT_TRUE(module) << text;
  checkModuleGradients(*module, {c.lo, c.hi, c.indexRange});
}

// clang-format off
const GradCase kCases[] = {
  {"add_broadcast", R"(
  %a = graph.param "a" : tensor<2x3xf32>
  %b = graph.param "b" : tensor<3xf32>
  %out = graph.add %a, %b : tensor<2x3xf32>, tensor<3xf32>)", "tensor<2x3xf32>"},
  {"sub_mul_div", R"(
  %a = graph.param "a" : tensor<2x3xf32>
  %b = graph.param "b" : tensor<2x1xf32>
  %s = graph.sub %a, %b : tensor<2x3xf32>, tensor<2x1xf32>
  %m = graph.mul %s, %a : tensor<2x3xf32>, tensor<2x3xf32>
  %out = graph.div %m, %b : tensor<2x3xf32>, tensor<2x1xf32>)", "tensor<2x3xf32>", 0.5f, 2.0f},
  {"pow", R"(
  %a = graph.param "a" : tensor<2x3xf32>
  %e = graph.param "e" : tensor<3xf32>
  %out = graph.pow %a, %e : tensor<2x3xf32>, tensor<3xf32>)", "tensor<2x3xf32>", 0.5f, 2.0f},
  {"max_min", R"(
  %a = graph.param "a" : tensor<2x3xf32>
  %b = graph.param "b" : tensor<2x3xf32>
  %m = graph.max %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
  %out = graph.min %m, %b : tensor<2x3xf32>, tensor<2x3xf32>)", "tensor<2x3xf32>"},
  {"where", R"(
  %c = graph.input "c" : tensor<2x3xi1>
  %a = graph.param "a" : tensor<2x3xf32>
  %b = graph.param "b" : tensor<3xf32>
  %out = graph.where %c, %a, %b : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>)", "tensor<2x3xf32>"},
  {"unary_chain", R"(
  %a = graph.param "a" : tensor<2x4xf32>
  %0 = graph.neg %a : tensor<2x4xf32>
  %1 = graph.exp %0 : tensor<2x4xf32>
  %2 = graph.log %1 : tensor<2x4xf32>
  %3 = graph.tanh %2 : tensor<2x4xf32>
  %4 = graph.erf %3 : tensor<2x4xf32>
  %out = graph.sigmoid %4 : tensor<2x4xf32>)", "tensor<2x4xf32>"},
  {"trigonometry", R"(
  %a = graph.param "a" : tensor<2x4xf32>
  %0 = graph.sin %a : tensor<2x4xf32>
  %1 = graph.cos %0 : tensor<2x4xf32>
  %2 = graph.atan %1 : tensor<2x4xf32>
  %3 = graph.floor %a : tensor<2x4xf32>
  %out = graph.add %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>)", "tensor<2x4xf32>", 0.1f, 0.9f},
  {"sqrt_rsqrt", R"(
  %a = graph.param "a" : tensor<2x4xf32>
  %0 = graph.sqrt %a : tensor<2x4xf32>
  %out = graph.rsqrt %0 : tensor<2x4xf32>)", "tensor<2x4xf32>", 0.5f, 2.0f},
  {"activations", R"(
  %a = graph.param "a" : tensor<3x4xf32>
  %0 = graph.relu %a : tensor<3x4xf32>
  %1 = graph.silu %a : tensor<3x4xf32>
  %2 = graph.gelu %a : tensor<3x4xf32>
  %3 = graph.gelu %a tanh : tensor<3x4xf32>
  %4 = graph.add %0, %1 : tensor<3x4xf32>, tensor<3x4xf32>
  %5 = graph.add %2, %3 : tensor<3x4xf32>, tensor<3x4xf32>
  %out = graph.add %4, %5 : tensor<3x4xf32>, tensor<3x4xf32>)", "tensor<3x4xf32>"},
  {"dropout", R"(
  %a = graph.param "a" : tensor<4x8xf32>
  %out = graph.dropout %a ratio = 0.25 {seed = 3 : i64} : tensor<4x8xf32>)", "tensor<4x8xf32>"},
  {"matmul_plain", R"(
  %a = graph.param "a" : tensor<3x4xf32>
  %b = graph.param "b" : tensor<4x5xf32>
  %out = graph.matmul %a, %b : tensor<3x4xf32>, tensor<4x5xf32>)", "tensor<3x5xf32>"},
  {"matmul_transposed", R"(
  %a = graph.param "a" : tensor<4x3xf32>
  %b = graph.param "b" : tensor<5x4xf32>
  %out = graph.matmul %a, %b transpose_lhs transpose_rhs : tensor<4x3xf32>, tensor<5x4xf32>)", "tensor<3x5xf32>"},
  {"matmul_batch_broadcast", R"(
  %a = graph.param "a" : tensor<2x3x3x4xf32>
  %b = graph.param "b" : tensor<2x1x5x4xf32>
  %out = graph.matmul %a, %b transpose_rhs : tensor<2x3x3x4xf32>, tensor<2x1x5x4xf32>)", "tensor<2x3x3x5xf32>"},
  {"softmax_causal", R"(
  %a = graph.param "a" : tensor<2x4x4xf32>
  %out = graph.softmax %a axis = 2 causal : tensor<2x4x4xf32>)", "tensor<2x4x4xf32>"},
  {"softmax_axis0", R"(
  %a = graph.param "a" : tensor<3x4xf32>
  %out = graph.softmax %a axis = 0 : tensor<3x4xf32>)", "tensor<3x4xf32>"},
  {"attention_causal", R"(
  %q = graph.param "q" : tensor<2x2x5x4xf32>
  %k = graph.param "k" : tensor<2x2x7x4xf32>
  %v = graph.param "v" : tensor<2x2x7x4xf32>
  %out, %lse = graph.attention %q, %k, %v scale = 0.5 causal : tensor<2x2x5x4xf32>, tensor<2x2x7x4xf32>, tensor<2x2x7x4xf32>)", "tensor<2x2x5x4xf32>"},
  {"attention_gqa", R"(
  %q = graph.param "q" : tensor<1x2x3x4x4xf32>
  %k = graph.param "k" : tensor<1x2x1x6x4xf32>
  %v = graph.param "v" : tensor<1x2x1x6x4xf32>
  %out, %lse = graph.attention %q, %k, %v scale = 0.7 : tensor<1x2x3x4x4xf32>, tensor<1x2x1x6x4xf32>, tensor<1x2x1x6x4xf32>)", "tensor<1x2x3x4x4xf32>"},
  {"layer_norm", R"(
  %x = graph.param "x" : tensor<2x3x8xf32>
  %g = graph.param "g" : tensor<8xf32>
  %b = graph.param "b" : tensor<8xf32>
  %out = graph.layer_norm %x scale(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) axis = 2 epsilon = 1.0e-5 : tensor<2x3x8xf32>)", "tensor<2x3x8xf32>"},
  {"rms_norm", R"(
  %x = graph.param "x" : tensor<3x8xf32>
  %g = graph.param "g" : tensor<8xf32>
  %out = graph.rms_norm %x scale(%g : tensor<8xf32>) axis = 1 epsilon = 1.0e-5 : tensor<3x8xf32>)", "tensor<3x8xf32>"},
  {"batch_norm_training", R"(
  %x = graph.param "x" : tensor<2x3x2x2xf32>
  %g = graph.param "g" : tensor<3xf32>
  %b = graph.param "b" : tensor<3xf32>
  %m = graph.param "m" frozen : tensor<3xf32>
  %v = graph.param "v" frozen : tensor<3xf32>
  %out = graph.batch_norm %x, %g, %b, %m, %v epsilon = 1.0e-5 training : tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)", "tensor<2x3x2x2xf32>"},
  {"rope", R"(
  %x = graph.param "x" : tensor<1x3x2x4xf32>
  %out = graph.rope %x theta = 10000.0 : tensor<1x3x2x4xf32>)", "tensor<1x3x2x4xf32>"},
  {"gather_embedding", R"(
  %t = graph.param "table" : tensor<4x3xf32>
  %i = graph.input "ids" : tensor<2x3xi64>
  %out = graph.gather %t[%i] axis = 0 : tensor<4x3xf32>, tensor<2x3xi64>)", "tensor<2x3x3xf32>"},
  {"gather_grad_scatter", R"(
  %d = graph.param "d" : tensor<2x3xf32>
  %i = graph.input "ids" : tensor<2x3xi64>
  %out = graph.gather_grad %d[%i] axis = 0 : tensor<2x3xf32>, tensor<2x3xi64> -> tensor<4xf32>)", "tensor<4xf32>"},
  {"movement", R"(
  %a = graph.param "a" : tensor<2x3x4xf32>
  %r = graph.reshape %a : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %t = graph.transpose %r [1, 0] : tensor<6x4xf32>
  %s = graph.slice %t starts [1, 0] limits [4, 6] strides [1, 2] : tensor<4x6xf32>
  %p:2 = graph.split %s axis = 0 sizes [1, 2] : tensor<3x3xf32>
  %c = graph.concat %p#1, %p#0, %p#0 axis = 0 : tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>
  %out = graph.broadcast_to %c : tensor<4x3xf32> -> tensor<2x4x3xf32>)", "tensor<2x4x3xf32>"},
  {"reductions", R"(
  %a = graph.param "a" : tensor<2x3x4xf32>
  %s = graph.reduce_sum %a [1] keepdims : tensor<2x3x4xf32>
  %m = graph.reduce_mean %a [0, 2] : tensor<2x3x4xf32>
  %x = graph.reduce_max %a [2] : tensor<2x3x4xf32>
  %sm = graph.reshape %s : tensor<2x1x4xf32> -> tensor<2x4xf32>
  %xm = graph.add %x, %m : tensor<2x3xf32>, tensor<3xf32>
  %xs = graph.reduce_sum %xm [1] keepdims : tensor<2x3xf32>
  %out = graph.add %sm, %xs : tensor<2x4xf32>, tensor<2x1xf32>)", "tensor<2x4xf32>"},
  {"conv2d", R"(
  %x = graph.param "x" : tensor<1x4x5x5xf32>
  %w = graph.param "w" : tensor<6x2x3x3xf32>
  %b = graph.param "b" : tensor<6xf32>
  %out = graph.conv2d %x, %w bias(%b : tensor<6xf32>) strides [2, 1] padding [1, 0, 1, 1] dilations [1, 1] groups = 2 : tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>)", "tensor<1x6x3x4xf32>"},
  {"conv_transpose", R"(
  %x = graph.param "x" : tensor<1x4x3x3xf32>
  %w = graph.param "w" : tensor<4x3x3x3xf32>
  %out = graph.conv2d_input_grad %x, %w strides [2, 2] padding [1, 0, 1, 1] dilations [1, 1] groups = 2 : tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x5x6xf32>)", "tensor<1x6x5x6xf32>"},
  {"pooling", R"(
  %x = graph.param "x" : tensor<1x2x5x5xf32>
  %m = graph.max_pool2d %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<1x2x5x5xf32>
  %a = graph.avg_pool2d %x kernel [2, 2] strides [2, 2] padding [0, 0, 1, 1] : tensor<1x2x5x5xf32>
  %g = graph.global_avg_pool %x : tensor<1x2x5x5xf32>
  %s = graph.add %m, %a : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  %out = graph.add %s, %g : tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>)", "tensor<1x2x3x3xf32>"},
  {"cross_entropy", R"(
  %l = graph.param "logits" : tensor<2x3x4xf32>
  %y = graph.input "labels" : tensor<2x3xi64>
  %ce = graph.cross_entropy %l, %y : tensor<2x3x4xf32>, tensor<2x3xi64>
  %out = graph.reshape %ce : tensor<f32> -> tensor<1xf32>)", "tensor<1xf32>"},
  {"moe", R"(
  %x = graph.param "x" : tensor<6x4xf32>
  %r = graph.param "router" : tensor<4x3xf32>
  %w1 = graph.param "w1" : tensor<3x4x5xf32>
  %logits = graph.matmul %x, %r : tensor<6x4xf32>, tensor<4x3xf32>
  %gw, %gi = graph.moe_gate %logits top_k = 2 renormalize : tensor<6x3xf32>
  %d = graph.moe_dispatch %x, %gi experts = 3 capacity = 3 : tensor<6x4xf32>, tensor<6x2xi64>
  %h = graph.matmul %d, %w1 : tensor<3x3x4xf32>, tensor<3x4x5xf32>
  %out = graph.moe_combine %h, %gw, %gi : tensor<3x3x5xf32>, tensor<6x2xf32>, tensor<6x2xi64>)", "tensor<6x5xf32>"},
};
// clang-format on

class Gradients : public ::testing::TestWithParam<GradCase> {};

TEST_P(Gradients, MatchFiniteDifferences) { checkGradients(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    AllOps, Gradients, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<GradCase> &info) {
      return std::string(info.param.name);
    });

} // namespace

namespace {

/// Whole zoo models, small: every kind of parameter gets a sampled check;
/// with `fuseAttention`, after cleave-fuse-attention (graph.attention's
/// gradient inside a whole model).
void checkZooGradients(llvm::StringRef spec, int64_t vocab,
                       bool fuseAttention = false) {
  SCOPED_TRACE(spec.str());
  Context context;
  auto module = cleave::buildZooModel(context.ctx, spec, {});
  ASSERT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  if (fuseAttention) {
    PassManager pm(&context.ctx);
    pm.nest<func::FuncOp>().addPass(cleave::createFuseAttention());
    ASSERT_TRUE(succeeded(pm.run(**module)));
    int64_t fused = 0;
    (**module).walk([&](cleave::graph::AttentionOp) { ++fused; });
    ASSERT_GT(fused, 0);
  }
  Domain d;
  d.lo = -0.5f;
  d.hi = 0.5f;
  d.indexRange = vocab;
  d.samplesPerParam = 3;
  checkModuleGradients(**module, d);
}

TEST(ZooGradients, Gpt) {
  checkZooGradients("gpt,layers=2,hidden=16,heads=2,vocab=11,seq=5,batch=2",
                    11);
}

TEST(ZooGradients, Llama) {
  checkZooGradients("llama,layers=1,hidden=16,heads=4,kv_heads=2,ffn=24,"
                    "vocab=13,seq=4,batch=2",
                    13);
}

TEST(ZooGradients, LlamaFusedAttention) {
  checkZooGradients("llama,layers=1,hidden=16,heads=4,kv_heads=2,ffn=24,"
                    "vocab=13,seq=4,batch=2",
                    13, /*fuseAttention=*/true);
}

TEST(ZooGradients, Mixtral) {
  checkZooGradients("moe,layers=1,hidden=8,heads=2,kv_heads=1,ffn=12,vocab=7,"
                    "seq=6,batch=1,experts=4,top_k=2,capacity_factor=2.0",
                    4);
}

} // namespace

namespace {

/// ONNX training losses, imported (OnnxLossConverters.cpp): their composed
/// ops' gradients with respect to the scores, against finite differences.
void checkImportedLoss(const char *op, const char *reduction) {
  SCOPED_TRACE(std::string(op) + " " + reduction);
  cleave::testing::ModelBuilder m;
  m.floats("scores", {4, 5});
  m.ints("targets", {2, 1, 3, 0});
  m.floats("weights", {5}, 1.5f);
  auto &node = m.node(op, "loss", {"scores", "targets", "weights"}, {"loss"});
  cleave::testing::ModelBuilder::stringAttr(node, "reduction", reduction);
  cleave::testing::ModelBuilder::intAttr(node, "ignore_index", 3);
  m.output("loss", 0);
  Context context;
  cleave::testing::Import import = m.import(context.ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  checkModuleGradients(*import.module, Domain{});
}

TEST(ImportedLossGradients, SoftmaxCrossEntropy) {
  checkImportedLoss("SoftmaxCrossEntropyLoss", "mean");
  checkImportedLoss("SoftmaxCrossEntropyLoss", "sum");
}

TEST(ImportedLossGradients, NegativeLogLikelihood) {
  checkImportedLoss("NegativeLogLikelihoodLoss", "mean");
}

} // namespace
