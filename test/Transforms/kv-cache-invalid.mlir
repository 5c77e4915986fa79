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

// -----

// Two tokens a sequence, a mask that lets each see both: not causal.
func.func @forward(%q: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %mask = graph.constant dense<0.0> : tensor<1x1x2x2xf32>
  // expected-error @+1 {{is not plain causal self-attention}}
  %o, %lse = graph.attention %q, %q, %q mask %mask : tensor<1x1x2x2xf32> scale = 0.5 : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
  return %o : tensor<1x2x2x4xf32>
}

// -----

// An exporter's padding input read beyond the mask: nothing fills it.
func.func @forward(%q: tensor<2x2x1x4xf32>) -> (tensor<2x2x1x4xf32>, tensor<2x1xi64>) {
  // expected-error @+1 {{is read by more than attention's causal mask}}
  %pad = graph.input "attention_mask" : tensor<2x1xi64>
  %twice = graph.add %pad, %pad : tensor<2x1xi64>, tensor<2x1xi64>
  %o, %lse = graph.attention %q, %q, %q scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  return %o, %twice : tensor<2x2x1x4xf32>, tensor<2x1xi64>
}

// -----

// An exporter's position_ids of another shape than the step's tokens.
func.func @forward(%q: tensor<2x2x1x4xf32>) -> (tensor<2x2x1x4xf32>, tensor<1x1xi64>) {
  // expected-error @+1 {{is 'tensor<1x1xi64>', not the step's positions tensor<2x1xi64>}}
  %pos = graph.input "position_ids" : tensor<1x1xi64>
  %o, %lse = graph.attention %q, %q, %q scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  return %o, %pos : tensor<2x2x1x4xf32>, tensor<1x1xi64>
}

// -----

// Rotary angles folded at export (rotate_half times a constant table):
// they cannot follow each token's position.
func.func @forward(%q: tensor<2x2x1x4xf32>) -> tensor<2x2x1x4xf32> {
  %sin = graph.param "unsqueeze_15" frozen = dense<0.5> : tensor<1x1x1x4xf32> : tensor<1x1x1x4xf32>
  %lo = graph.slice %q starts [0, 0, 0, 0] limits [2, 2, 1, 2] strides [1, 1, 1, 1] : tensor<2x2x1x4xf32>
  %hi = graph.slice %q starts [0, 0, 0, 2] limits [2, 2, 1, 4] strides [1, 1, 1, 1] : tensor<2x2x1x4xf32>
  %neg = graph.neg %hi : tensor<2x2x1x2xf32>
  %rot = graph.concat %neg, %lo axis = 3 : tensor<2x2x1x2xf32>, tensor<2x2x1x2xf32>
  // expected-error @+1 {{rotates by angles fixed when the model was exported}}
  %r = graph.mul %rot, %sin : tensor<2x2x1x4xf32>, tensor<1x1x1x4xf32>
  %o, %lse = graph.attention %r, %r, %r scale = 0.5 causal : tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>, tensor<2x2x1x4xf32>
  return %o : tensor<2x2x1x4xf32>
}
