// A weight held by a dense_resource whose blob the file lacks (an .mlir
// written with the resources elided): an error at the op, not an abort.
module attributes {cleave.model = "m", cleave.source = "onnx"} {
  func.func @forward() -> tensor<2x4xf32> {
    %0 = graph.input "x" : tensor<2x3xf32>
    %1 = graph.param "w" = dense_resource<w_blob> : tensor<3x4xf32> : tensor<3x4xf32>
    %2 = graph.matmul %0, %1 : tensor<2x3xf32>, tensor<3x4xf32>
    return %2 : tensor<2x4xf32>
  }
}
