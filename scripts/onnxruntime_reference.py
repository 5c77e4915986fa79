#!/usr/bin/env python3
"""Reference outputs of an ONNX model from onnxruntime.

Runs MODEL in onnxruntime (CPU execution provider, graph optimisations off,
so that nothing is fused or reordered beyond what the model says) on raw
little-endian input files and writes each output as raw little-endian
float32, the format `cleave run --expect-output I=FILE` compares with.

    python3 scripts/onnxruntime_reference.py MODEL.onnx \\
        --input input_ids=ids.bin [--input ...] --output 0=logits.bin

Input files hold the input's dtype (from the model) in C order; the shape is
the model's, whose symbolic dimensions must be given with --dim NAME=SIZE.
A file holding several of the model's (fixed) batches runs batch by batch
and the outputs are concatenated, as cleave's data-parallel replicas see it.
onnxruntime (PyPI) is a test-time reference only: cleave never needs it.
"""

import argparse
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("model")
    parser.add_argument("--input", action="append", default=[],
                        metavar="NAME=FILE")
    parser.add_argument("--output", action="append", default=[],
                        metavar="INDEX=FILE")
    parser.add_argument("--dim", action="append", default=[],
                        metavar="NAME=SIZE")
    args = parser.parse_args()

    dims = dict(d.split("=", 1) for d in args.dim)
    model = onnx.load(args.model)
    types = {i.name: i.type.tensor_type for i in model.graph.input}
    feeds = {}
    for spec in args.input:
        name, path = spec.split("=", 1)
        if name not in types:
            sys.exit(f"{args.model}: no input named '{name}'")
        t = types[name]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        shape = []
        for d in t.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(int(dims[d.dim_param]))
            else:
                sys.exit(f"{name}: give the size of '{d.dim_param}' with --dim")
        data = np.fromfile(path, dtype=dtype)
        one = int(np.prod(shape))
        if one == 0 or data.size % one:
            sys.exit(f"{path}: {data.size} values for shape {shape}")
        feeds[name] = data.reshape([data.size // one * shape[0]] + shape[1:])
        batches = data.size // one
        batch = shape[0]

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(args.model, options,
                                   providers=["CPUExecutionProvider"])
    runs = [session.run(None, {k: v[i * batch:(i + 1) * batch]
                               for k, v in feeds.items()})
            for i in range(batches)]
    results = [np.concatenate([r[o] for r in runs])
               for o in range(len(runs[0]))]
    for spec in args.output:
        index, path = spec.split("=", 1)
        value = np.ascontiguousarray(results[int(index)], dtype=np.float32)
        value.tofile(path)
        print(f"output {index} ({session.get_outputs()[int(index)].name}): "
              f"shape {list(value.shape)} -> {path}")


if __name__ == "__main__":
    main()
