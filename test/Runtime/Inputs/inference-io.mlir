func.func @forward() -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %x = graph.input "x" : tensor<2x3xf32>
  %w = graph.input "w" : tensor<3xf32>
  %c = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = graph.add %x, %c : tensor<2x3xf32>, tensor<2x3xf32>
  %y = graph.add %s, %w : tensor<2x3xf32>, tensor<3xf32>
  return %c, %y : tensor<2x3xf32>, tensor<2x3xf32>
}
