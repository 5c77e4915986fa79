"""Counts rank 0's compute events of a `cleave run --trace` by kernel:
the fused runs (matmul+bias, matmul+bias+activation,
matmul+activation_grad, matmul+batch_reduce) and the plain matmuls, one
"NAME N" line each, sorted. A second argument counts the kernels whose
name holds it instead of "matmul" (e.g. "attention", "softmax")."""
import collections
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
counts = collections.Counter(
    e["name"] for e in events
    if e.get("ph") == "X" and e.get("pid") == 0 and e.get("tid") == 1 and
    ((sys.argv[2] if len(sys.argv) > 2 else "matmul") in e["name"]))
for name in sorted(counts):
    print(name, counts[name])
