#!/usr/bin/env python3
"""Writes, as ONNX protobuf text, a residual MLP whose blocks share weights
the way exporters share them: the TorchScript exporter merges equal
initializers (GPT-2's LayerNorm weights, all ones at initialisation, become
one tensor read by every layer), and tied weights are read by the first
and last layers. Four blocks x + tanh(x W_i + shared_bias) * shared_gain,
then a head tied to block 0's weight: `shared_bias` is read by every
block, `shared_gain` by blocks 1 and 3, `layers.0.weight` by block 0 and
the head. Under pp=2 or pp=4 each is held by several stages. Standard
library only; the weights are fixed by a formula."""

import struct

HIDDEN, LAYERS, BATCH = 8, 4, 4


def raw(values):
    data = struct.pack("<%df" % len(values), *values)
    return "".join("\\%03o" % b for b in data)


def init(name, dims, seed):
    n = 1
    for d in dims:
        n *= d
    values = [((i * 7919 + seed * 104729) % 97 - 48) / 200.0
              for i in range(n)]
    return ('  initializer { %s data_type: 1 name: "%s" raw_data: "%s" }'
            % (" ".join("dims: %d" % d for d in dims), name, raw(values)))


def main():
    print('ir_version: 8 opset_import { version: 17 } producer_name: "test"')
    print('graph { name: "shared_weights"')
    x = "x"
    for i in range(LAYERS):
        w = "layers.%d.weight" % i
        print('  node { input: "%s" input: "%s" output: "l%d_mm" '
              'op_type: "MatMul" }' % (x, w, i))
        print('  node { input: "l%d_mm" input: "shared_bias" output: "l%d_b" '
              'op_type: "Add" }' % (i, i))
        print('  node { input: "l%d_b" output: "l%d_t" op_type: "Tanh" }'
              % (i, i))
        last = "l%d_t" % i
        if i % 2 == 1:
            print('  node { input: "l%d_t" input: "shared_gain" '
                  'output: "l%d_g" op_type: "Mul" }' % (i, i))
            last = "l%d_g" % i
        print('  node { input: "%s" input: "%s" output: "l%d_out" '
              'op_type: "Add" }' % (x, last, i))
        x = "l%d_out" % i
    # The head reads block 0's weight, transposed: a tied weight.
    print('  node { input: "layers.0.weight" output: "head_w" '
          'op_type: "Transpose" attribute { name: "perm" ints: 1 ints: 0 '
          'type: INTS } }')
    print('  node { input: "%s" input: "head_w" output: "logits" '
          'op_type: "MatMul" }' % x)
    for i in range(LAYERS):
        print(init("layers.%d.weight" % i, [HIDDEN, HIDDEN], i + 1))
    print(init("shared_bias", [HIDDEN], 11))
    print(init("shared_gain", [HIDDEN], 13))
    print('  input { name: "x" type { tensor_type { elem_type: 1 shape { '
          'dim { dim_value: %d } dim { dim_value: %d } } } } }'
          % (BATCH, HIDDEN))
    print('  output { name: "logits" type { tensor_type { elem_type: 1 '
          'shape { dim { dim_value: %d } dim { dim_value: %d } } } } }'
          % (BATCH, HIDDEN))
    print('}')


if __name__ == "__main__":
    main()
