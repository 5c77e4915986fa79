func.func @forward(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // An op whose shapes do not fit: the error points at it.
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return %0 : tensor<2x5xf32>
}
