//===- LayerNumberingTest.cpp - Layers read off parameter names -----------===//

#include "cleave/Analysis/LayerNumbering.h"

#include "gtest/gtest.h"

using namespace cleave;

namespace {

TEST(LayerNumbering, LayerOfParamName) {
  EXPECT_EQ(layerOfParamName("h.3.attn.q_proj.weight"), 3);
  EXPECT_EQ(layerOfParamName("layers.12.attention.wq.weight"), 12);
  EXPECT_EQ(layerOfParamName("blocks.0.ln1.weight"), 0);
  // torchvision's ViT: the block is "encoder_layer_3", its MLP a Sequential
  // whose Linear layers are "mlp.0" and "mlp.3" (not layers 0 and 3).
  EXPECT_EQ(layerOfParamName("encoder.layers.encoder_layer_3.mlp.0.weight"), 3);
  EXPECT_EQ(layerOfParamName("encoder.layers.encoder_layer_11.ln_1.bias"), 11);
  // Initializers ONNX names itself count tensors, not layers.
  EXPECT_EQ(layerOfParamName("onnx::MatMul_1573"), -1);
  EXPECT_TRUE(isGeneratedParamName("onnx::MatMul_1573"));
  // The dynamo exporter's optimiser names folded tensors after the value:
  // "embedding_1" (a slice of the position table) is no layer 1.
  EXPECT_EQ(layerOfParamName("embedding_1"), -1);
  EXPECT_EQ(layerOfParamName("val_313"), -1);
  EXPECT_TRUE(isGeneratedParamName("val_313"));
  EXPECT_TRUE(isGeneratedParamName("embedding_1"));
  EXPECT_FALSE(isGeneratedParamName("model.layers.1.mlp.weight"));
  EXPECT_FALSE(isGeneratedParamName("cls_token"));
  EXPECT_EQ(layerOfParamName("blocks.2.conv_1.weight"), 2);
  EXPECT_FALSE(isGeneratedParamName("h.0.attn.q_proj.weight"));
  // A ResNet's "layer1" is a stage; "conv1" and "bn1" are no layer.
  EXPECT_EQ(layerOfParamName("conv1.weight"), -1);
  EXPECT_EQ(layerOfParamName("bn1.bias"), -1);
  EXPECT_EQ(layerOfParamName("layer1.2.conv1.weight"), 2);
  EXPECT_EQ(layerOfParamName("ln_f.weight"), -1);
  EXPECT_EQ(layerOfParamName("wte.weight"), -1);
}

} // namespace
