"""Compares two float32 logits files element by element: prints the
largest difference relative to max(1, |reference|) and fails beyond the
tolerance or on a size mismatch.

usage: compare_logits.py MINE REFERENCE TOLERANCE
"""
import array
import sys


def read(path):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


mine, ref, tolerance = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if len(mine) != len(ref):
    sys.exit(f"logits: {len(mine)} values, the reference has {len(ref)}")
worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(mine, ref))
print(f"logits: {len(ref)} values, largest relative difference {worst:.2e}")
if not worst <= tolerance:
    sys.exit(f"logits differ beyond {tolerance}")
