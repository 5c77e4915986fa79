// A small U-Net-like CNN (check-unet.test), written as the ONNX importer
// writes ConvTranspose and Resize: an encoder convolution (stride 2), a
// decoder of a transposed convolution (graph.conv2d_input_grad, stride 2)
// beside a nearest 2x upsampling (one GEMM per axis with a 0/1
// interpolation matrix) and a 1x1 convolution, a full-resolution skip
// convolution, a residual refinement convolution, then global pooling and
// a linear classifier.
module {
  func.func @forward() -> tensor<f32> {
    %x = graph.input "images" : tensor<4x3x8x8xf32>
    %y = graph.input "labels" : tensor<4xi64>
    %ew = graph.param "enc.weight" : tensor<8x3x3x3xf32>
    %e = graph.conv2d %x, %ew strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<4x3x8x8xf32>, tensor<8x3x3x3xf32>
    %er = graph.relu %e : tensor<4x8x4x4xf32>
    %uw = graph.param "up.weight" : tensor<8x4x2x2xf32>
    %d1 = graph.conv2d_input_grad %er, %uw strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<4x8x4x4xf32>, tensor<8x4x2x2xf32> -> tensor<4x4x8x8xf32>
    %m = graph.constant dense<[[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]]> : tensor<4x8xf32>
    %r1 = graph.matmul %er, %m : tensor<4x8x4x4xf32>, tensor<4x8xf32>
    %t1 = graph.transpose %r1 [0, 1, 3, 2] : tensor<4x8x4x8xf32>
    %r2 = graph.matmul %t1, %m : tensor<4x8x8x4xf32>, tensor<4x8xf32>
    %t2 = graph.transpose %r2 [0, 1, 3, 2] : tensor<4x8x8x8xf32>
    %pw = graph.param "proj.weight" : tensor<4x8x1x1xf32>
    %d2 = graph.conv2d %t2, %pw strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups = 1 : tensor<4x8x8x8xf32>, tensor<4x8x1x1xf32>
    %sw = graph.param "skip.weight" : tensor<4x3x3x3xf32>
    %s = graph.conv2d %x, %sw strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<4x3x8x8xf32>, tensor<4x3x3x3xf32>
    %a1 = graph.add %d1, %d2 : tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>
    %a2 = graph.add %a1, %s : tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>
    %h = graph.relu %a2 : tensor<4x4x8x8xf32>
    %rw = graph.param "refine.weight" : tensor<4x4x3x3xf32>
    %r = graph.conv2d %h, %rw strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups = 1 : tensor<4x4x8x8xf32>, tensor<4x4x3x3xf32>
    %rr = graph.relu %r : tensor<4x4x8x8xf32>
    %a3 = graph.add %rr, %h : tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>
    %g = graph.global_avg_pool %a3 : tensor<4x4x8x8xf32>
    %f = graph.reshape %g : tensor<4x4x1x1xf32> -> tensor<4x4xf32>
    %cw = graph.param "head.weight" : tensor<4x10xf32>
    %logits = graph.matmul %f, %cw : tensor<4x4xf32>, tensor<4x10xf32>
    %loss = graph.cross_entropy %logits, %y : tensor<4x10xf32>, tensor<4xi64>
    return %loss : tensor<f32>
  }
}
