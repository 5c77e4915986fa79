#!/usr/bin/env python3
"""Writes, as ONNX protobuf text, a speech model's front end as exporters
write it at opset 17: an STFT of the waveform with a Hann window, the power
spectrum, a MelWeightMatrix product, log, and a trainable 1-D convolution
with a mean over time (Whisper's and wav2vec-style feature extractors).
Standard library only; the weights are fixed by a formula."""

import struct
import sys

SAMPLES, FRAME, STEP, MELS, CHANNELS = 4000, 400, 160, 80, 16


def floats(values):
    raw = struct.pack("<%df" % len(values), *values)
    return "".join("\\%03o" % b for b in raw)


def constant(name, dtype, value):
    field = "int64_data" if dtype == 7 else "float_data"
    return ('node { output: "%s" op_type: "Constant" attribute { name: '
            '"value" t { data_type: %d %s: %r } type: TENSOR } }'
            % (name, dtype, field, value))


def main():
    weights = [((i * 7919) % 101 - 50) / 500.0 for i in range(CHANNELS * MELS * 3)]
    nodes = [
        constant("step", 7, STEP), constant("flen", 7, FRAME),
        'node { input: "flen" output: "window" op_type: "HannWindow" }',
        'node { input: "wav" input: "step" input: "window" input: "flen" '
        'output: "spec" op_type: "STFT" }',
        'node { input: "spec" input: "spec" output: "sq" op_type: "Mul" }',
        'node { output: "last" op_type: "Constant" attribute { name: "value" '
        't { data_type: 7 dims: 1 int64_data: -1 } type: TENSOR } }',
        'node { input: "sq" input: "last" output: "power" op_type: "ReduceSum" '
        'attribute { name: "keepdims" i: 0 type: INT } }',
        constant("nmel", 7, MELS), constant("rate", 7, 16000),
        constant("lo", 1, 0.0), constant("hi", 1, 8000.0),
        'node { input: "nmel" input: "flen" input: "rate" input: "lo" '
        'input: "hi" output: "mel" op_type: "MelWeightMatrix" }',
        'node { input: "power" input: "mel" output: "melspec" op_type: "MatMul" }',
        constant("eps", 1, 1e-6),
        'node { input: "melspec" input: "eps" output: "shifted" op_type: "Add" }',
        'node { input: "shifted" output: "logmel" op_type: "Log" }',
        'node { input: "logmel" output: "feat" op_type: "Transpose" attribute '
        '{ name: "perm" ints: 0 ints: 2 ints: 1 type: INTS } }',
        'node { input: "feat" input: "conv_w" input: "conv_b" output: "conv" '
        'op_type: "Conv" attribute { name: "pads" ints: 1 ints: 1 type: INTS } }',
        'node { input: "conv" output: "act" op_type: "Relu" }',
        'node { input: "act" output: "y" op_type: "ReduceMean" attribute { '
        'name: "axes" ints: 2 type: INTS } attribute { name: "keepdims" i: 0 '
        'type: INT } }',
    ]
    out = sys.stdout
    out.write('ir_version: 8\nopset_import { domain: "" version: 17 }\n')
    out.write('graph {\n  name: "speech_frontend"\n')
    for n in nodes:
        out.write("  %s\n" % n)
    out.write('  initializer { name: "conv_w" data_type: 1 dims: %d dims: %d '
              'dims: 3 raw_data: "%s" }\n' % (CHANNELS, MELS, floats(weights)))
    out.write('  initializer { name: "conv_b" data_type: 1 dims: %d '
              'raw_data: "%s" }\n' % (CHANNELS, floats([0.01] * CHANNELS)))
    out.write('  input { name: "wav" type { tensor_type { elem_type: 1 shape { '
              'dim { dim_param: "batch" } dim { dim_value: %d } dim { '
              'dim_value: 1 } } } } }\n' % SAMPLES)
    out.write('  output { name: "y" type { tensor_type { elem_type: 1 shape { '
              'dim { dim_param: "batch" } dim { dim_value: %d } } } } }\n}\n'
              % CHANNELS)


if __name__ == "__main__":
    main()
