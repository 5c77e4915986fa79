"""Reads a safetensors file with Hugging Face's own reader and compares it
with cleave's view of a checkpoint (`cleave checkpoint inspect --json`):
every parameter is there, whole, with its shape, and its values are finite.
With --equal FILE, the values must also equal FILE's (another export);
with --close FILE RTOL, agree with them within RTOL of the largest
magnitude of each tensor, or of 0.01 for a tensor smaller than that (two
programs that round differently, such as fused and unfused attention; a
key bias, whose gradient is zero in exact arithmetic, holds only rounding).

usage: check_safetensors.py EXPORT.safetensors INSPECT.json
           [--equal OTHER | --close OTHER RTOL]
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
    if len(sys.argv) > 5 and sys.argv[3] == "--close":
        other, rtol = load_file(sys.argv[4]), float(sys.argv[5])
        worst = 0.0
        for name, array in exported.items():
            scale = max(float(np.abs(other[name]).max()), 0.01)
            err = float(np.abs(array - other[name]).max()) / scale
            worst = max(worst, err)
            if not err <= rtol:
                sys.exit("%s differs from %s by %.3g of its largest value "
                         "(tolerance %g)" % (name, sys.argv[4], err, rtol))
        print("close: every parameter within %g of %s (worst %.3g)" %
              (rtol, sys.argv[4], worst))
    print("safetensors: %d parameters, %d values, as the checkpoint says" %
          (len(exported), sum(a.size for a in exported.values())))


if __name__ == "__main__":
    main()
