//===- ImportedModelEvalTest.cpp - Imported weights compute PyTorch's output ===//
//
// The tiny GPT exported with its weights (test/models/tiny_gpt_weights.*)
// is imported and run by the reference evaluator on the input PyTorch saw;
// its logits must match PyTorch's. This checks the importer's semantics
// (shape folding, the LayerNorm pattern, masks, transposes) end to end, not
// only its shapes.
//
//===----------------------------------------------------------------------===//

#include "cleave/Evaluator/GraphEvaluator.h"
#include "cleave/Importers/ModelLoader.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <iterator>

using namespace mlir;
namespace k = cleave::kernels;

namespace {

template <typename T> std::vector<T> readBinary(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

TEST(ImportedModel, TinyGptLogitsMatchPyTorch) {
  std::string dir = CLEAVE_TEST_MODELS_DIR;
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module =
      cleave::loadModel(ctx, dir + "/tiny_gpt_weights.onnx", {});
  ASSERT_TRUE(module);
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(forward);

  std::vector<int64_t> ids = readBinary<int64_t>(dir + "/tiny_gpt_weights.input.bin");
  std::vector<float> expected =
      readBinary<float>(dir + "/tiny_gpt_weights.logits.bin");
  ASSERT_EQ(ids.size(), 2u * 8);
  ASSERT_EQ(expected.size(), 2u * 8 * 64);

  cleave::GraphEvaluator eval;
  eval.bindings["input_ids"] = k::IndexTensor({2, 8}, ids);
  auto results = eval.run(forward);
  ASSERT_TRUE(succeeded(results));
  const k::Tensor &logits = std::get<k::Tensor>((*results)[0]);
  ASSERT_EQ(logits.shape(), (k::Shape{2, 8, 64}));
  double maxRel = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double err = std::fabs(logits[i] - expected[i]) /
                 std::max(1.0, double(std::fabs(expected[i])));
    maxRel = std::max(maxRel, err);
  }
  EXPECT_LT(maxRel, 1e-4);
}

} // namespace
