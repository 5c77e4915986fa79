//===- Vit.cpp - Vision transformers --------------------------------------===//
//
// ViT (Dosovitskiy et al. 2021) as torchvision builds it: a strided
// convolution cuts the image into patches, a class token and learned
// positions are added, pre-LN encoder blocks follow, and a linear head
// classifies the class token.
//
//===----------------------------------------------------------------------===//

#include "Blocks.h"
#include "ZooFamily.h"

using namespace mlir;

namespace cleave::zoo {

static llvm::Error buildVit(GraphBuilder &g, const Config &c) {
  int64_t layers = c.integer("layers"), hidden = c.integer("hidden"),
          heads = c.integer("heads"), ffn = c.integer("ffn"),
          patch = c.integer("patch"), image = c.integer("image"),
          channels = c.integer("channels"), classes = c.integer("classes"),
          batch = c.integer("batch");
  double eps = c.real("eps"), dropout = c.real("dropout");
  if (auto err = requireDivisible(c, "hidden", "heads"))
    return err;
  if (auto err = requireDivisible(c, "image", "patch"))
    return err;
  int64_t grid = image / patch, tokens = grid * grid + 1;

  Value images = g.input("images", {batch, channels, image, image});
  Value labels = g.input("labels", {batch}, g.builder().getI64Type());
  Value x;
  {
    auto s = g.scope("conv_proj");
    x = g.conv2d(images, hidden, patch, patch, 0, /*bias=*/true);
  }
  x = g.transpose(g.reshape(x, {batch, hidden, grid * grid}), {0, 2, 1});
  // The class token is one parameter shared by the batch: broadcast it by
  // adding zeros, then prepend it to the patch sequence.
  Value cls = g.param("class_token", {1, 1, hidden});
  OpBuilder &b = g.builder();
  auto zerosType = RankedTensorType::get({batch, 1, hidden}, b.getF32Type());
  Value zeros = graph::ConstantOp::create(
      b, g.loc(), DenseElementsAttr::get(zerosType, 0.0f));
  x = g.concat({g.add(cls, zeros), x}, 1);
  {
    auto s = g.scope("encoder");
    x = g.dropout(g.add(x, g.param("pos_embedding", {1, tokens, hidden})),
                  dropout);
    AttentionConfig attn{hidden, heads, heads, true, /*causal=*/false,
                         std::nullopt, dropout};
    for (int64_t i = 0; i < layers; ++i) {
      auto layer = g.scope("layers.encoder_layer_", i);
      Value h;
      {
        auto s = g.scope("ln_1");
        h = g.layerNorm(x, hidden, eps);
      }
      {
        auto s = g.scope("self_attention");
        x = g.add(x, selfAttention(g, h, attn));
      }
      {
        auto s = g.scope("ln_2");
        h = g.layerNorm(x, hidden, eps);
      }
      auto s = g.scope("mlp");
      x = g.add(x, g.dropout(geluMlp(g, h, hidden, ffn, false), dropout));
    }
    auto lnScope = g.scope("ln");
    x = g.layerNorm(x, hidden, eps);
  }
  Value first = g.reshape(g.slice(x, 1, 0, 1), {batch, hidden});
  auto s = g.scope("heads.head");
  g.finish({g.crossEntropy(g.linear(first, hidden, classes, true), labels)});
  return llvm::Error::success();
}

Family vitFamily() {
  return {"vit",
          "Vision transformer (torchvision layout: patch conv, class token)",
          {
              {"layers", "12", "encoder blocks"},
              {"hidden", "768", "model width"},
              {"heads", "12", "attention heads"},
              {"ffn", "3072", "MLP width"},
              {"patch", "16", "patch size"},
              {"image", "224", "image height and width"},
              {"channels", "3", "image channels"},
              {"classes", "1000", "classes"},
              {"batch", "1", "images per step"},
              {"dropout", "0.0", "dropout ratio (0 builds no dropout ops)"},
              {"eps", "1e-6", "LayerNorm epsilon"},
          },
          buildVit};
}

} // namespace cleave::zoo
