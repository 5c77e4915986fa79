// Integer arithmetic computed at run time, as imported ONNX models do it
// (index and position arithmetic, clamps of byte data): a remainder with
// the divisor's sign, unsigned division, wrap-around, an unsigned compare
// and a select, each cast to f32 for the comparison with Python's results.
func.func @forward() -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %ids = graph.input "ids" : tensor<2x4xi64>
  %bytes = graph.input "bytes" : tensor<2x4xui8>
  %d = graph.input "d" : tensor<4xi64>
  %seven = graph.constant dense<7> : tensor<ui8>
  %m = graph.mod %ids, %d : tensor<2x4xi64>, tensor<4xi64>
  %q = graph.div %bytes, %seven : tensor<2x4xui8>, tensor<ui8>
  %s = graph.add %bytes, %bytes : tensor<2x4xui8>, tensor<2x4xui8>
  %big = graph.compare "gt", %bytes, %seven : tensor<2x4xui8>, tensor<ui8>
  %sel = graph.where %big, %q, %seven : tensor<2x4xi1>, tensor<2x4xui8>, tensor<ui8>
  %mf = graph.cast %m : tensor<2x4xi64> to tensor<2x4xf32>
  %qf = graph.cast %q : tensor<2x4xui8> to tensor<2x4xf32>
  %sf = graph.cast %s : tensor<2x4xui8> to tensor<2x4xf32>
  %self = graph.cast %sel : tensor<2x4xui8> to tensor<2x4xf32>
  // Integer data movement: each row's last two ids, then its first two.
  %tail = graph.slice %ids starts [0, 2] limits [2, 4] strides [1, 1] : tensor<2x4xi64>
  %head = graph.slice %ids starts [0, 0] limits [2, 2] strides [1, 1] : tensor<2x4xi64>
  %both = graph.concat %tail, %head axis = 1 : tensor<2x2xi64>, tensor<2x2xi64>
  %bf = graph.cast %both : tensor<2x4xi64> to tensor<2x4xf32>
  return %mf, %qf, %sf, %self, %bf : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
