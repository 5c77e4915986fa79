//===- ConvOpsTest.cpp - conv2d and its gradients against the CPU ---------===//

#include "CudaOpCase.h"

using namespace cleave::test;

namespace {

struct Conv {
  std::vector<int64_t> input, filter, output;
  std::vector<int64_t> strides{1, 1}, padding{0, 0, 0, 0}, dilations{1, 1};
  int64_t groups = 1;
};

void setAttrs(OpCase &t, const Conv &c) {
  t.setInts("strides", c.strides)
      .setInts("padding", c.padding)
      .setInts("dilations", c.dilations)
      .setInt("groups", c.groups);
}

void checkAll(const Conv &c, bool bias) {
  OpCase fwd("graph.conv2d");
  fwd.f32(c.input, 1);
  fwd.f32(c.filter, 2);
  if (bias)
    fwd.f32({c.filter[0]}, 3);
  fwd.output(c.output);
  setAttrs(fwd, c);
  fwd.expectMatch(1e-4, 1e-5);

  OpCase in("graph.conv2d_input_grad");
  in.f32(c.output, 4);
  in.f32(c.filter, 2);
  in.output(c.input);
  setAttrs(in, c);
  in.expectMatch(1e-4, 1e-5);

  OpCase filt("graph.conv2d_filter_grad");
  filt.f32(c.input, 1);
  filt.f32(c.output, 4);
  filt.output(c.filter);
  setAttrs(filt, c);
  filt.expectMatch(1e-4, 1e-5);
}

} // namespace

TEST_F(CudaOps, ConvPatchEmbedding) {
  // ViT: kernel = stride = patch.
  Conv c{{2, 3, 32, 32}, {24, 3, 8, 8}, {2, 24, 4, 4}};
  c.strides = {8, 8};
  checkAll(c, true);
}

TEST_F(CudaOps, ConvPaddedStridedDilated) {
  Conv c{{2, 4, 11, 9}, {6, 4, 3, 3}, {2, 6, 6, 3}};
  c.strides = {2, 2};
  c.padding = {1, 0, 1, 0};
  c.dilations = {1, 2};
  checkAll(c, false);
}

TEST_F(CudaOps, ConvGroupedAndPointwise) {
  Conv grouped{{3, 4, 7, 7}, {6, 2, 3, 3}, {3, 6, 7, 7}};
  grouped.padding = {1, 1, 1, 1};
  grouped.groups = 2;
  checkAll(grouped, true);
  Conv pointwise{{2, 8, 5, 5}, {4, 8, 1, 1}, {2, 4, 5, 5}};
  checkAll(pointwise, true);
}
