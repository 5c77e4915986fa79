"""Reads a safetensors file with Hugging Face's own reader and compares it
with cleave's view of a checkpoint (`cleave checkpoint inspect --json`):
every parameter is there, whole, with its shape, and its values are finite.
With --equal FILE, the values must also equal FILE's (another export).

usage: check_safetensors.py EXPORT.safetensors INSPECT.json [--equal OTHER]
"""
import json
import sys

import numpy as np
from safetensors.numpy import load_file


def main():
    exported = load_file(sys.argv[1])
    with open(sys.argv[2]) as f:
        inspect = json.load(f)
    params = {t["name"]: t["shape"] for t in inspect["tensors"]
              if t["state"] == ""}
    if set(exported) != set(params):
        sys.exit("names differ: only in the export %s, only in the "
                 "checkpoint %s" % (sorted(set(exported) - set(params)),
                                    sorted(set(params) - set(exported))))
    for name, shape in params.items():
        array = exported[name]
        if list(array.shape) != shape or array.dtype != np.float32:
            sys.exit("%s: %s %s, the checkpoint says %s float32" %
                     (name, list(array.shape), array.dtype, shape))
        if not np.isfinite(array).all():
            sys.exit("%s: non-finite values" % name)
    if len(sys.argv) > 4 and sys.argv[3] == "--equal":
        other = load_file(sys.argv[4])
        for name, array in exported.items():
            if not np.array_equal(array, other[name]):
                sys.exit("%s differs from %s" % (name, sys.argv[4]))
    print("safetensors: %d parameters, %d values, as the checkpoint says" %
          (len(exported), sum(a.size for a in exported.values())))


if __name__ == "__main__":
    main()
