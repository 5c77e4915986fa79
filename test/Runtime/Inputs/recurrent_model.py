#!/usr/bin/env python3
"""Writes a small ONNX recurrent classifier as protobuf text (onnx.proto's
ModelProto), for `protoc --encode` to turn into a model file: no onnx
module needed.

Usage: recurrent_model.py lstm|gru|rnn [--bidirectional] > model.textproto
       recurrent_model.py lstm|gru|rnn [--bidirectional] --reference N X.bin Y.bin
         (numpy: a batch of N random inputs and the logits ONNX's
         reference semantics give for them, raw little-endian f32)

X [N, 6, 8] (batch-major, layout 1) -> CELL (hidden 16, weights as
initializers) -> Y_h [N, directions, 16] -> Flatten -> MatMul [16 d, 5]
-> logits [N, 5]. The batch N is symbolic; cleave appends the
cross-entropy against a `labels` input.
"""
import random
import sys

SEQ, INPUT, HIDDEN, CLASSES = 6, 8, 16, 5
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def weights(dims, scale, rng):
    n = 1
    for d in dims:
        n *= d
    return [float(f"{rng.uniform(-scale, scale):.6f}") for _ in range(n)]


def tensor(name, dims, values):
    data = " ".join(f"float_data: {v}" for v in values)
    shape = " ".join(f"dims: {d}" for d in dims)
    return f"initializer {{ name: \"{name}\" data_type: 1 {shape} {data} }}"


def reference(cell, directions, params, n, x_path, y_path):
    """ONNX's RNN/GRU/LSTM (default activations, linear_before_reset 0,
    layout 1) in numpy, then the head."""
    import numpy as np
    g = GATES[cell]
    H = HIDDEN
    W = np.array(params["W"], np.float64).reshape(directions, g * H, INPUT)
    R = np.array(params["R"], np.float64).reshape(directions, g * H, H)
    B = np.array(params["B"], np.float64).reshape(directions, 2 * g * H)
    Wo = np.array(params["W_out"], np.float64).reshape(directions * H, CLASSES)
    x = np.random.default_rng(3).uniform(-1, 1, (n, SEQ, INPUT))
    sig = lambda v: 1 / (1 + np.exp(-v))
    finals = []
    for d in range(directions):
        h = np.zeros((n, H))
        c = np.zeros((n, H))
        wb, rb = B[d, :g * H], B[d, g * H:]
        steps = range(SEQ - 1, -1, -1) if d == 1 else range(SEQ)
        for t in steps:
            xw = x[:, t] @ W[d].T + wb
            hr = h @ R[d].T + rb
            if cell == "rnn":
                h = np.tanh(xw + hr)
            elif cell == "gru":
                z = sig(xw[:, :H] + hr[:, :H])
                r = sig(xw[:, H:2 * H] + hr[:, H:2 * H])
                hh = np.tanh(xw[:, 2 * H:] + (r * h) @ R[d][2 * H:].T +
                             rb[2 * H:])
                h = (1 - z) * hh + z * h
            else:
                i = sig(xw[:, :H] + hr[:, :H])
                o = sig(xw[:, H:2 * H] + hr[:, H:2 * H])
                f = sig(xw[:, 2 * H:3 * H] + hr[:, 2 * H:3 * H])
                cc = np.tanh(xw[:, 3 * H:] + hr[:, 3 * H:])
                c = f * c + i * cc
                h = o * np.tanh(c)
        finals.append(h)
    logits = np.concatenate(finals, axis=1) @ Wo
    x.astype("<f4").tofile(x_path)
    logits.astype("<f4").tofile(y_path)


def value_info(kind, name, dims):
    shape = " ".join(
        f"dim {{ dim_param: \"{d}\" }}" if isinstance(d, str)
        else f"dim {{ dim_value: {d} }}" for d in dims)
    return (f"{kind} {{ name: \"{name}\" type {{ tensor_type {{ elem_type: 1 "
            f"shape {{ {shape} }} }} }} }}")


def main():
    cell = sys.argv[1]
    directions = 2 if "--bidirectional" in sys.argv else 1
    rng = random.Random(7)
    g = GATES[cell]
    scale = 1.0 / HIDDEN ** 0.5
    attrs = (f"attribute {{ name: \"hidden_size\" i: {HIDDEN} type: INT }} "
             "attribute { name: \"layout\" i: 1 type: INT } ")
    if directions == 2:
        attrs += ("attribute { name: \"direction\" s: \"bidirectional\" "
                  "type: STRING } ")
    nodes = [
        f"node {{ input: \"X\" input: \"W\" input: \"R\" input: \"B\" "
        f"output: \"\" output: \"Y_h\" op_type: \"{cell.upper()}\" {attrs}}}",
        "node { input: \"Y_h\" output: \"flat\" op_type: \"Flatten\" "
        "attribute { name: \"axis\" i: 1 type: INT } }",
        "node { input: \"flat\" input: \"W_out\" output: \"logits\" "
        "op_type: \"MatMul\" }",
    ]
    shapes = {"W": [directions, g * HIDDEN, INPUT],
              "R": [directions, g * HIDDEN, HIDDEN],
              "B": [directions, 2 * g * HIDDEN],
              "W_out": [directions * HIDDEN, CLASSES]}
    params = {name: weights(dims, scale, rng) for name, dims in shapes.items()}
    if "--reference" in sys.argv:
        at = sys.argv.index("--reference")
        n, x_path, y_path = sys.argv[at + 1:at + 4]
        reference(cell, directions, params, int(n), x_path, y_path)
        return
    inits = [tensor(name, dims, params[name]) for name, dims in shapes.items()]
    print("ir_version: 8")
    print("opset_import { domain: \"\" version: 14 }")
    print("graph {")
    print("  name: \"recurrent_classifier\"")
    for n in nodes + inits:
        print("  " + n)
    print("  " + value_info("input", "X", ["N", SEQ, INPUT]))
    print("  " + value_info("output", "logits", ["N", CLASSES]))
    print("}")


if __name__ == "__main__":
    main()
