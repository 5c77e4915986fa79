#!/usr/bin/env python3
"""Two parameter dumps agree: `cleave-worker --dump-params DIR` of two runs.

Every file NAME.rankR.bin of the first directory (not the gradient files
NAME.grad.rankR.bin beside them) must exist in the second
with the same size, and its f32 values agree within the tolerance, by the
error `cleave run --check` uses: max |a - b| / max(max |b|, 1e-3).
Prints the number compared and the largest error; exits 1 naming the first
file over the tolerance.

usage: compare_params.py DIR_A DIR_B [--tolerance 1e-5]
"""
import array
import os
import sys


def load(path):
    values = array.array("f")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % 4:
        raise ValueError(f"{path}: {len(data)} bytes is not a whole number of f32")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    tolerance = 1e-5
    if "--tolerance" in argv:
        i = argv.index("--tolerance")
        tolerance = float(argv[i + 1])
        args.remove(argv[i + 1])
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    a_dir, b_dir = args
    for d in (a_dir, b_dir):
        if not os.path.isdir(d):
            print(f"{d}: no such directory (did that run dump its parameters?)")
            return 1
    # Parameters only: NAME.grad.rankR.bin are the steps' gradients.
    names = sorted(n for n in os.listdir(a_dir)
                   if n.endswith(".bin") and ".grad.rank" not in n)
    if not names:
        print(f"{a_dir}: no parameter files", file=sys.stderr)
        return 2
    worst, worst_name = 0.0, ""
    for name in names:
        b_path = os.path.join(b_dir, name)
        if not os.path.exists(b_path):
            print(f"{name}: missing from {b_dir}")
            return 1
        a, b = load(os.path.join(a_dir, name)), load(b_path)
        if len(a) != len(b):
            print(f"{name}: {len(a)} values against {len(b)}")
            return 1
        scale = max([abs(v) for v in b] + [1e-3])
        err = max((abs(x - y) for x, y in zip(a, b)), default=0.0) / scale
        if not err <= tolerance:
            print(f"{name}: relative error {err:.2e} > {tolerance:.0e}")
            return 1
        if err > worst:
            worst, worst_name = err, name
    print(f"{len(names)} parameter files agree within {tolerance:.0e}; "
          f"largest relative error {worst:.2e}" +
          (f" ({worst_name})" if worst_name else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
