"""Counts rank 0's compute events of a `cleave run --trace` by kernel:
the fused runs (matmul+bias, matmul+bias+activation,
matmul+activation_grad, matmul+batch_reduce) and the plain matmuls, one
"NAME N" line each, sorted."""
import collections
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
counts = collections.Counter(
    e["name"] for e in events
    if e.get("ph") == "X" and e.get("pid") == 0 and e.get("tid") == 1 and
    ("matmul" in e["name"]))
for name in sorted(counts):
    print(name, counts[name])
