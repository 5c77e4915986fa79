// A small residual CNN for tensor-parallel checks (check-graph-plans.test):
// a strided stem with batch norm and max pooling, one bottleneck block with
// a downsampling shortcut, a depthwise convolution, global pooling and a
// linear classifier.
module {
  func.func @forward() -> tensor<f32> {
    %x = graph.input "images" : tensor<4x3x16x16xf32>
    %y = graph.input "labels" : tensor<4xi64>
    %1 = graph.param "stem.weight" : tensor<16x3x3x3xf32>
    %2 = graph.conv2d %x, %1 strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<4x3x16x16xf32>, tensor<16x3x3x3xf32>
    %3 = graph.param "stem.bn.weight" : tensor<16xf32>
    %4 = graph.param "stem.bn.bias" : tensor<16xf32>
    %5 = graph.param "stem.bn.running_mean" frozen : tensor<16xf32>
    %6 = graph.param "stem.bn.running_var" frozen : tensor<16xf32>
    %7 = graph.batch_norm %2, %3, %4, %5, %6 epsilon = 1.000000e-05 training : tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
    %8 = graph.relu %7 : tensor<4x16x8x8xf32>
    %9 = graph.max_pool2d %8 kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] : tensor<4x16x8x8xf32>
    %10 = graph.param "block.conv1.weight" : tensor<8x16x1x1xf32>
    %11 = graph.conv2d %9, %10 strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<4x16x4x4xf32>, tensor<8x16x1x1xf32>
    %12 = graph.param "block.bn1.weight" : tensor<8xf32>
    %13 = graph.param "block.bn1.bias" : tensor<8xf32>
    %14 = graph.param "block.bn1.running_mean" frozen : tensor<8xf32>
    %15 = graph.param "block.bn1.running_var" frozen : tensor<8xf32>
    %16 = graph.batch_norm %11, %12, %13, %14, %15 epsilon = 1.000000e-05 training : tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    %17 = graph.relu %16 : tensor<4x8x4x4xf32>
    %18 = graph.param "block.conv2.weight" : tensor<8x8x3x3xf32>
    %19 = graph.conv2d %17, %18 strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<4x8x4x4xf32>, tensor<8x8x3x3xf32>
    %20 = graph.param "block.bn2.weight" : tensor<8xf32>
    %21 = graph.param "block.bn2.bias" : tensor<8xf32>
    %22 = graph.param "block.bn2.running_mean" frozen : tensor<8xf32>
    %23 = graph.param "block.bn2.running_var" frozen : tensor<8xf32>
    %24 = graph.batch_norm %19, %20, %21, %22, %23 epsilon = 1.000000e-05 training : tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    %25 = graph.relu %24 : tensor<4x8x4x4xf32>
    %26 = graph.param "block.conv3.weight" : tensor<32x8x1x1xf32>
    %27 = graph.conv2d %25, %26 strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<4x8x4x4xf32>, tensor<32x8x1x1xf32>
    %28 = graph.param "block.bn3.weight" : tensor<32xf32>
    %29 = graph.param "block.bn3.bias" : tensor<32xf32>
    %30 = graph.param "block.bn3.running_mean" frozen : tensor<32xf32>
    %31 = graph.param "block.bn3.running_var" frozen : tensor<32xf32>
    %32 = graph.batch_norm %27, %28, %29, %30, %31 epsilon = 1.000000e-05 training : tensor<4x32x4x4xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
    %33 = graph.param "block.downsample.weight" : tensor<32x16x1x1xf32>
    %34 = graph.conv2d %9, %33 strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<4x16x4x4xf32>, tensor<32x16x1x1xf32>
    %35 = graph.param "block.downsample.bn.weight" : tensor<32xf32>
    %36 = graph.param "block.downsample.bn.bias" : tensor<32xf32>
    %37 = graph.param "block.downsample.bn.running_mean" frozen : tensor<32xf32>
    %38 = graph.param "block.downsample.bn.running_var" frozen : tensor<32xf32>
    %39 = graph.batch_norm %34, %35, %36, %37, %38 epsilon = 1.000000e-05 training : tensor<4x32x4x4xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
    %40 = graph.add %32, %39 : tensor<4x32x4x4xf32>, tensor<4x32x4x4xf32>
    %41 = graph.relu %40 : tensor<4x32x4x4xf32>
    %42 = graph.param "depthwise.weight" : tensor<32x1x3x3xf32>
    %43 = graph.conv2d %41, %42 strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 32 : tensor<4x32x4x4xf32>, tensor<32x1x3x3xf32>
    %44 = graph.relu %43 : tensor<4x32x4x4xf32>
    %45 = graph.global_avg_pool %44 : tensor<4x32x4x4xf32>
    %46 = graph.reshape %45 : tensor<4x32x1x1xf32> -> tensor<4x32xf32>
    %47 = graph.param "fc.weight" : tensor<32x10xf32>
    %48 = graph.matmul %46, %47 : tensor<4x32xf32>, tensor<32x10xf32>
    %49 = graph.cross_entropy %48, %y : tensor<4x10xf32>, tensor<4xi64>
    return %49 : tensor<f32>
  }
}
