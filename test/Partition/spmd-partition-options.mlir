// RUN: not cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis=tp size=0}))' 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not cleave-opt %s --pass-pipeline='builtin.module(func.func(cleave-spmd-partition{axis="" size=2}))' 2>&1 | FileCheck %s --check-prefix=AXIS

// SIZE: error: 'func.func' op spmd partition size must be positive, got 0
// AXIS: error: 'func.func' op spmd partition needs a mesh axis name
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
