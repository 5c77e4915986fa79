//===- ResNet.cpp - ResNet and Wide ResNet (bottleneck) -------------------===//
//
// torchvision's bottleneck ResNets (He et al. 2016) with the width factor of
// Wide ResNet (Zagoruyko and Komodakis 2016): wide_resnet50_2 doubles the
// bottleneck width. Batch norm runs in training mode; its running
// statistics are frozen parameters.
//
//===----------------------------------------------------------------------===//

#include "ZooFamily.h"

using namespace mlir;

namespace cleave::zoo {

static Value convBn(GraphBuilder &g, Value x, llvm::StringRef name,
                    int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                    bool relu) {
  {
    auto s = g.scope(("conv" + name).str());
    x = g.conv2d(x, out, kernel, stride, pad, /*bias=*/false);
  }
  auto s = g.scope(("bn" + name).str());
  x = g.batchNorm(x, out, 1e-5);
  return relu ? g.relu(x) : x;
}

static llvm::Error buildResNet(GraphBuilder &g, const Config &c) {
  int64_t depth = c.integer("depth"), widthFactor = c.integer("width"),
          classes = c.integer("classes"), image = c.integer("image"),
          batch = c.integer("batch");
  std::vector<int64_t> blocks;
  if (depth == 50)
    blocks = {3, 4, 6, 3};
  else if (depth == 101)
    blocks = {3, 4, 23, 3};
  else if (depth == 152)
    blocks = {3, 8, 36, 3};
  else
    return configError("depth must be 50, 101 or 152, got " +
                       llvm::Twine(depth));
  if (image < 32)
    return configError("image must be at least 32 pixels");

  Value x = g.input("images", {batch, 3, image, image});
  Value labels = g.input("labels", {batch}, g.builder().getI64Type());
  x = convBn(g, x, "1", 64, 7, 2, 3, true);
  x = g.maxPool(x, 3, 2, 1);
  int64_t inChannels = 64;
  for (int64_t stage = 0; stage < 4; ++stage) {
    int64_t planes = 64 << stage;
    int64_t width = planes * widthFactor;
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      auto s = g.scope(("layer" + llvm::Twine(stage + 1) + "." +
                        llvm::Twine(i)).str());
      int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      Value h = convBn(g, x, "1", width, 1, 1, 0, true);
      h = convBn(g, h, "2", width, 3, stride, 1, true);
      h = convBn(g, h, "3", planes * 4, 1, 1, 0, false);
      Value shortcut = x;
      if (stride != 1 || inChannels != planes * 4) {
        auto d = g.scope("downsample");
        {
          auto s0 = g.scope("0");
          shortcut = g.conv2d(x, planes * 4, 1, stride, 0, false);
        }
        auto s1 = g.scope("1");
        shortcut = g.batchNorm(shortcut, planes * 4, 1e-5);
      }
      x = g.relu(g.add(h, shortcut));
      inChannels = planes * 4;
    }
  }
  x = g.reshape(g.globalAvgPool(x), {batch, inChannels});
  auto s = g.scope("fc");
  g.finish({g.crossEntropy(g.linear(x, inChannels, classes, true), labels)});
  return llvm::Error::success();
}

Family resnetFamily() {
  return {"wideresnet",
          "Bottleneck ResNet with a width factor (Wide ResNet)",
          {
              {"depth", "50", "50, 101 or 152 layers"},
              {"width", "2", "bottleneck width factor (1: plain ResNet)"},
              {"classes", "1000", "classes"},
              {"image", "224", "image height and width"},
              {"batch", "1", "images per step"},
          },
          buildResNet};
}

} // namespace cleave::zoo
