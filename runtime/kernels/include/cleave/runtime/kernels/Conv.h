//===- Conv.h - 2-D convolution and pooling (NCHW) --------------*- C++ -*-===//
//
// graph.conv2d (NCHW input, OIHW filter, groups) through im2col and
// cblas_sgemm, and graph.max_pool2d, avg_pool2d and global_avg_pool, with
// their gradients. Padding is [top, left, bottom, right]; an output
// dimension is (in + pads - dilation * (kernel - 1) - 1) / stride + 1.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_CONV_H
#define CLEAVE_RUNTIME_KERNELS_CONV_H

#include "cleave/runtime/kernels/Tensor.h"

#include <array>

namespace cleave::kernels {

struct Conv2dOptions {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> padding{0, 0, 0, 0};
  std::array<int64_t, 2> dilations{1, 1};
  int64_t groups = 1;
};

/// [N, O, OH, OW]; throws on inconsistent shapes or options.
Shape conv2dShape(const Shape &input, const Shape &filter,
                  const Conv2dOptions &options);

/// Floats of scratch that conv2d and conv2dBackward need (one im2col
/// buffer); 0 when the convolution is a plain matrix product (1x1, stride
/// 1, no padding).
int64_t conv2dWorkspaceSize(const Shape &input, const Shape &filter,
                            const Conv2dOptions &options);

/// Convolution with an optional bias [O]. `workspace`, when given, holds
/// conv2dWorkspaceSize floats; otherwise the kernel allocates its own.
void conv2d(ConstTensorRef input, ConstTensorRef filter, ConstTensorRef bias,
            const Conv2dOptions &options, TensorRef out,
            float *workspace = nullptr);

/// Gradients w.r.t. the input, filter and bias (each may be null).
void conv2dBackward(ConstTensorRef input, ConstTensorRef filter,
                    const Conv2dOptions &options, ConstTensorRef dOut,
                    TensorRef dInput, TensorRef dFilter, TensorRef dBias,
                    float *workspace = nullptr);

/// graph.conv2d_input_grad: conv2dBackward for the input alone, which needs
/// only the input's shape (dInput carries it).
void conv2dInputGrad(ConstTensorRef dOut, ConstTensorRef filter,
                     const Conv2dOptions &options, TensorRef dInput,
                     float *workspace = nullptr);

/// graph.conv2d_filter_grad: conv2dBackward for the filter alone, which needs
/// only the filter's shape (dFilter carries it).
void conv2dFilterGrad(ConstTensorRef input, ConstTensorRef dOut,
                      const Conv2dOptions &options, TensorRef dFilter,
                      float *workspace = nullptr);

struct Pool2dOptions {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> padding{0, 0, 0, 0};
};

/// [N, C, OH, OW]; throws on a window larger than the padded input.
Shape pool2dShape(const Shape &input, const Pool2dOptions &options);

/// Max over each window, padding excluded. A window wholly in the padding
/// (only possible when a padding is at least the kernel size) gives 0 here
/// and in avgPool2d.
void maxPool2d(ConstTensorRef in, const Pool2dOptions &options, TensorRef out);

/// Each window's gradient goes to its first maximum in row-major order.
void maxPool2dBackward(ConstTensorRef in, const Pool2dOptions &options,
                       ConstTensorRef dOut, TensorRef dIn);

/// Mean over each window's elements inside the input: padded elements are
/// excluded from the count.
void avgPool2d(ConstTensorRef in, const Pool2dOptions &options, TensorRef out);

/// Needs only the input's shape, which dIn carries.
void avgPool2dBackward(ConstTensorRef dOut, const Pool2dOptions &options,
                       TensorRef dIn);

/// [N, C, H, W] -> [N, C, 1, 1], the mean over H and W.
void globalAvgPool(ConstTensorRef in, TensorRef out);

void globalAvgPoolBackward(ConstTensorRef dOut, TensorRef dIn);

} // namespace cleave::kernels

#endif // CLEAVE_RUNTIME_KERNELS_CONV_H
