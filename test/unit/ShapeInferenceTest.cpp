//===- ShapeInferenceTest.cpp - Shape rules of graph ops ------------------===//

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace cleave::graph;

namespace {

TEST(ShapeInference, BroadcastFollowsNumpy) {
  MLIRContext ctx;
  FailureOr<Shape> s = broadcastShapes(std::nullopt, {{8, 1, 6, 1}, {7, 1, 5}});
  ASSERT_TRUE(succeeded(s));
  EXPECT_EQ(*s, (Shape{8, 7, 6, 5}));
  EXPECT_TRUE(failed(broadcastShapes(std::nullopt, {{2, 3}, {4, 3}})));
  EXPECT_EQ(*broadcastShapes(std::nullopt, {{}, {3, 4}}), (Shape{3, 4}));
}

TEST(ShapeInference, MatmulBroadcastsBatchAndTransposes) {
  MLIRContext ctx;
  auto f32 = Float32Type::get(&ctx);
  SmallVector<Type> out;
  // Grouped-query attention: 2 key heads shared by groups of 4 query heads.
  auto q = RankedTensorType::get({1, 2, 4, 16, 64}, f32);
  auto k = RankedTensorType::get({1, 2, 1, 16, 64}, f32);
  ASSERT_TRUE(succeeded(inferMatmulResult(std::nullopt, q, k, false, true, out)));
  EXPECT_EQ(cast<RankedTensorType>(out[0]).getShape(),
            ArrayRef<int64_t>({1, 2, 4, 16, 16}));
  out.clear();
  EXPECT_TRUE(failed(inferMatmulResult(std::nullopt, q, k, false, false, out)));
}

TEST(ShapeInference, ConvAndPoolOutputSizes) {
  MLIRContext ctx;
  auto f32 = Float32Type::get(&ctx);
  SmallVector<Type> out;
  auto x = RankedTensorType::get({2, 3, 224, 224}, f32);
  auto w = RankedTensorType::get({64, 3, 7, 7}, f32);
  ASSERT_TRUE(succeeded(inferConv2dResult(std::nullopt, x, w, Type(), {2, 2},
                                          {3, 3, 3, 3}, {1, 1}, 1, out)));
  EXPECT_EQ(cast<RankedTensorType>(out[0]).getShape(),
            ArrayRef<int64_t>({2, 64, 112, 112}));
  ASSERT_TRUE(succeeded(inferPool2dResult(std::nullopt, out[0], {3, 3}, {2, 2},
                                          {1, 1, 1, 1}, out)));
  EXPECT_EQ(cast<RankedTensorType>(out[1]).getShape(),
            ArrayRef<int64_t>({2, 64, 56, 56}));
}

TEST(ShapeInference, BytesCountElementWidth) {
  MLIRContext ctx;
  EXPECT_EQ(tensorBytes(RankedTensorType::get({4, 8}, BFloat16Type::get(&ctx))), 64);
  EXPECT_EQ(tensorBytes(RankedTensorType::get({4, 8}, IntegerType::get(&ctx, 1))), 32);
  EXPECT_EQ(numElements(RankedTensorType::get({}, Float32Type::get(&ctx))), 1);
}

} // namespace
