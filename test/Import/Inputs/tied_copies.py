#!/usr/bin/env python3
"""Writes, as ONNX protobuf text, a model whose exporter split tied
weights: `emb` [4, 5], `emb_copy` equal to it, `head` its transpose, and
an unused `ones` [20] of one value (freshly initialised norm scales are
all equal and say nothing). Standard library only."""

import struct

ROWS, COLS = 4, 5


def raw(values):
    return "".join("\\%03o" % b for b in struct.pack("<%df" % len(values),
                                                     *values))


def init(name, dims, values):
    return ('  initializer { %s data_type: 1 name: "%s" raw_data: "%s" }'
            % (" ".join("dims: %d" % d for d in dims), name, raw(values)))


emb = [((i * 37) % 11 - 5) / 8.0 for i in range(ROWS * COLS)]
head = [emb[r * COLS + c] for c in range(COLS) for r in range(ROWS)]
print('ir_version: 8 opset_import { version: 17 } graph { name: "tied"')
print('  node { input: "x" input: "emb" output: "a" op_type: "MatMul" }')
print('  node { input: "x" input: "emb_copy" output: "b" op_type: "MatMul" }')
print('  node { input: "a" input: "b" output: "s" op_type: "Add" }')
print('  node { input: "s" input: "head" output: "y" op_type: "MatMul" }')
print(init("emb", [ROWS, COLS], emb))
print(init("emb_copy", [ROWS, COLS], emb))
print(init("head", [COLS, ROWS], head))
print(init("ones", [COLS * 4], [1.0] * (COLS * 4)))
print(init("ones_too", [COLS * 4], [1.0] * (COLS * 4)))
print('  input { name: "x" type { tensor_type { elem_type: 1 shape { '
      'dim { dim_value: 2 } dim { dim_value: %d } } } } }' % ROWS)
print('  output { name: "y" type { tensor_type { elem_type: 1 shape { '
      'dim { dim_value: 2 } dim { dim_value: %d } } } } }' % ROWS)
print('}')
