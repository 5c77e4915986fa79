#!/usr/bin/env python3
"""Writes, as ONNX protobuf text, a small video model with a region head as
exporters write them at opset 16: a 3-D convolution over a clip (strided in
space), a 3-D transposed convolution back up, a mean over time, and
RoiAlign pooling fixed regions of the frames' features (a two-stage
detector's second stage), whose mean joins the clip's features. Standard
library only; the weights are fixed by a formula."""

import struct
import sys

CHANNELS, HIDDEN, UP, DEPTH, SIDE = 3, 8, 4, 4, 8


def floats(values):
    raw = struct.pack("<%df" % len(values), *values)
    return "".join("\\%03o" % b for b in raw)


def weights(n, seed):
    return [((i * 7919 + seed * 104729) % 101 - 50) / 400.0 for i in range(n)]


def ints(name, values):
    return ' attribute { name: "%s" %s type: INTS }' % (
        name, " ".join("ints: %d" % v for v in values))


def main():
    rois = [0.5, 1.0, 6.0, 7.5, 2.0, 0.0, 7.0, 4.0, -1.0, 3.0, 5.0, 9.0]
    nodes = [
        'node { input: "clip" input: "w1" input: "b1" output: "c1" '
        'op_type: "Conv"' + ints("pads", [1] * 6) + ints("strides", [1, 2, 2])
        + ' }',
        'node { input: "c1" output: "r1" op_type: "Relu" }',
        'node { input: "r1" input: "w2" output: "up" op_type: "ConvTranspose"'
        + ints("strides", [2, 2, 2]) + ints("pads", [1, 0, 0, 0, 0, 0])
        + ' }',
        'node { input: "up" output: "frames" op_type: "ReduceMean"'
        + ints("axes", [2]) + ' attribute { name: "keepdims" i: 0 type: INT } }',
        'node { output: "rois" op_type: "Constant" attribute { name: "value" '
        't { data_type: 1 dims: 3 dims: 4 raw_data: "%s" } type: TENSOR } }'
        % floats(rois),
        'node { output: "images" op_type: "Constant" attribute { name: "value" '
        't { data_type: 7 dims: 3 int64_data: 0 int64_data: 1 int64_data: 1 } '
        'type: TENSOR } }',
        'node { input: "frames" input: "rois" input: "images" output: "pooled" '
        'op_type: "RoiAlign" attribute { name: "output_height" i: 2 type: INT } '
        'attribute { name: "output_width" i: 2 type: INT } attribute { name: '
        '"sampling_ratio" i: 2 type: INT } attribute { name: "spatial_scale" '
        'f: 1.0 type: FLOAT } }',
        'node { input: "pooled" output: "region" op_type: "ReduceMean" '
        'attribute { name: "keepdims" i: 0 type: INT } }',
        'node { input: "up" output: "clipfeat" op_type: "ReduceMean"'
        + ints("axes", [2, 3, 4])
        + ' attribute { name: "keepdims" i: 0 type: INT } }',
        'node { input: "clipfeat" input: "region" output: "y" op_type: "Add" }',
    ]
    out = sys.stdout
    out.write('ir_version: 8\nopset_import { domain: "" version: 16 }\n')
    out.write('graph {\n  name: "video_regions"\n')
    for n in nodes:
        out.write("  %s\n" % n)
    n1 = HIDDEN * CHANNELS * 27
    out.write('  initializer { name: "w1" data_type: 1 dims: %d dims: %d '
              'dims: 3 dims: 3 dims: 3 raw_data: "%s" }\n'
              % (HIDDEN, CHANNELS, floats(weights(n1, 1))))
    out.write('  initializer { name: "b1" data_type: 1 dims: %d raw_data: '
              '"%s" }\n' % (HIDDEN, floats([0.01] * HIDDEN)))
    out.write('  initializer { name: "w2" data_type: 1 dims: %d dims: %d '
              'dims: 2 dims: 2 dims: 2 raw_data: "%s" }\n'
              % (HIDDEN, UP, floats(weights(HIDDEN * UP * 8, 2))))
    out.write('  input { name: "clip" type { tensor_type { elem_type: 1 shape '
              '{ dim { dim_param: "batch" } dim { dim_value: %d } dim { '
              'dim_value: %d } dim { dim_value: %d } dim { dim_value: %d } } } '
              '} }\n' % (CHANNELS, DEPTH, SIDE, SIDE))
    out.write('  output { name: "y" type { tensor_type { elem_type: 1 shape { '
              'dim { dim_param: "batch" } dim { dim_value: %d } } } } }\n}\n'
              % UP)


if __name__ == "__main__":
    main()
