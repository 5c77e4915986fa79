// RUN: cleave-opt %s -split-input-file --cleave-kv-cache="max-length=8" -verify-diagnostics
// RUN: not cleave-opt %s -split-input-file --cleave-kv-cache 2>&1 | FileCheck %s --check-prefix=LENGTH
// Every graph cleave-kv-cache refuses, with the op or option at fault.
// LENGTH: max-length and block-size must be at least 1 and blocks at least 0 (got 0, 16, 0)

func.func @forward(%q: tensor<2x2x1x4xf32>) -> tensor<2x2x1x4xf32> {
  // expected-error @+1 {{is attention left unfused; a generation step needs every attention fused}}
  %p = graph.softmax %q axis = 3 causal : tensor<2x2x1x4xf32>
  return %p : tensor<2x2x1x4xf32>
}

// -----

// expected-error @+1 {{the model has no attention to give a key/value cache}}
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

// -----

func.func @forward(%q: tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32> {
  // expected-error @+1 {{is not plain causal self-attention}}
  %o, %l = graph.attention %q, %q, %q scale = 0.5 : tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}

// -----

func.func @forward(%q: tensor<2x2x1x4xf32>, %k: tensor<2x2x5x4xf32>) -> tensor<2x2x1x4xf32> {
  // expected-error @+1 {{reads keys of another length or layout than its queries}}
  %o, %l = graph.attention %q, %k, %k scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>
  return %o : tensor<2x2x1x4xf32>
}

// -----

func.func @forward(%q: tensor<2x2x1x4xf32>) -> tensor<2x2x1xf32> {
  // expected-error @+1 {{has its log-sum-exp read (a backward pass)}}
  %o, %l = graph.attention %q, %q, %q scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  return %l : tensor<2x2x1xf32>
}

// -----

func.func @forward(%q: tensor<2x2x1x4xf32>) -> tensor<2x2x1x4xf32> {
  // expected-error @+1 {{is an input the model already has, but a generation step fills 'positions' itself}}
  %p = graph.input "positions" : tensor<2x1xi64>
  %o, %l = graph.attention %q, %q, %q scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  return %o : tensor<2x2x1x4xf32>
}

// -----

func.func @forward(%q: tensor<2x2x1x4xf32>) -> tensor<2x1x4xf32> {
  %w = graph.param "wpe" : tensor<4x4xf32>
  // expected-error @+1 {{reads a position table of 4 positions, fewer than max-length 8}}
  %s = graph.slice %w starts [0, 0] limits [1, 4] strides [1, 1] : tensor<4x4xf32>
  %x = graph.input "x" : tensor<2x1x4xf32>
  %a = graph.add %x, %s : tensor<2x1x4xf32>, tensor<1x4xf32>
  %o, %l = graph.attention %q, %q, %q scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  return %a : tensor<2x1x4xf32>
}
