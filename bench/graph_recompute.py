"""Recomputation for graphs without transformer layers: what checkpointing
residual blocks buys the search, and what it costs on CPU ranks.

A graph without transformer layers (a ResNet, an imported CNN) is planned
with data, tensor and pipeline parallelism of its residual blocks
(GraphPlan.h); the search also chooses recomputation: none, every stage's
blocks, or the first k stages' only (under 1F1B the first stages hold the
most microbatches in flight). A recomputing block keeps its input and output
and runs its forward pass again before its backward pass (cleave-recompute
with residual-blocks). Two tables:

1. Predicted, A100 clusters: `cleave compile` searching every knob against
   the same search with recompute fixed to none: the chosen plans, their
   predicted step times and the ratio (above 1: recomputation helps;
   "none fits" where no plan fits without it).

2. Measured on this machine's CPU ranks (--run): a Wide ResNet-50 (64x64
   images) on 2 local ranks, data-parallel, compiled with recompute none
   and full: the predicted step time and planned arena of each, the
   measured median step time, and full's ratios over none's. Run on an
   otherwise idle machine.

Python 3 standard library only.

    python3 bench/graph_recompute.py            # table 1
    python3 bench/graph_recompute.py --run      # and table 2
"""

import os
import tempfile

from graph_plan_search import cli, run_plan
from benchlib import compile_json


# (label, model arguments, cluster, global batch)
ROWS = [
    # One DGX: tensor parallelism over NVLink beats recomputing.
    ("wrn-101-2 @3072", ["zoo:wrn-101-2,image=3072"],
     "dgx-a100-40g,nodes=1", 8),
    # One A100 per node (tensor parallelism stays inside a node): one
    # image's activations do not fit without recomputation.
    ("wrn-101-2 @3072", ["zoo:wrn-101-2,image=3072"],
     "dgx-a100-40g,nodes=8,devices=1", 8),
    ("wrn-101-2 @2816", ["zoo:wrn-101-2,image=2816"],
     "dgx-a100-40g,nodes=8,devices=1", 16),
    ("wrn-101-2 @2816", ["zoo:wrn-101-2,image=2816"],
     "dgx-a100-40g,nodes=8,devices=1", 64),
    # ImageNet-sized images: smaller microbatches cost less than the pass.
    ("wrn-50-2 @224", ["zoo:wrn-50-2"], "dgx-a100-40g,nodes=1", 2048),
]


def knobs(d):
    p = d["plan"]
    rc = p.get("stage_recompute") or [p.get("recompute", "none")]
    rc = "/".join(rc) if len(set(rc)) > 1 else rc[0]
    return "dp%d tp%d pp%d mb%d z%d rc=%s" % (
        p["dp"], p["tp"], p["pp"], p["microbatch_size"], p["zero"], rc)


def planning(cleave):
    print("1. Predicted: the whole search against the search with "
          "recompute=none")
    head = "%-16s %-30s %6s | %-34s %8s | %-34s %8s | %6s" % (
        "model", "cluster", "batch", "searched plan", "step s",
        "recompute=none plan", "step s", "ratio")
    print(head)
    print("-" * len(head))
    for label, args, cluster, batch in ROWS:
        free, _, err = compile_json(cleave, args, cluster, batch)
        held, _, err1 = compile_json(cleave, args, cluster, batch,
                                     "recompute=none")
        if not free:
            print("%-16s %-30s %6d | failed: %s" % (label, cluster, batch,
                                                    err))
            continue
        t = free["predicted"]["step_time_s"]
        if held:
            t0 = held["predicted"]["step_time_s"]
            other, step0, ratio = knobs(held), "%8.3f" % t0, "%6.3f" % (t0 / t)
        else:
            other, step0, ratio = "none fits", "%8s" % "-", "%6s" % "-"
        print("%-16s %-30s %6d | %-34s %8.3f | %-34s %s | %s" % (
            label, cluster, batch, knobs(free), t, other, step0, ratio))
    print("ratio: recompute=none's predicted step time over the searched "
          "plan's")
    print()


def measure(cleave, args):
    model = "zoo:wideresnet,depth=50,width=1,image=64,classes=10"
    work = tempfile.mkdtemp(prefix="cleave-graph-recompute-")
    rows = []
    for mode in ("none", "full"):
        info, predicted, measured = run_plan(
            cleave, model, "tp=1,dp=2,microbatch=8,zero=0,recompute=" + mode,
            16, args.steps, os.path.join(work, mode + ".cleave"))
        arena = max(m["arena_bytes"] for m in info["memory"]) / 2**20
        activations = max(m["planned_by_kind"].get("stash", 0) +
                          m["planned_by_kind"].get("transient", 0)
                          for m in info["memory"]) / 2**20
        rows.append((mode, predicted, measured, arena, activations))
    print("2. Measured: %s, dp=2 on 2 CPU ranks, microbatch 8, global batch "
          "16, sgd, OPENBLAS_NUM_THREADS=1, median of steps 2-%d" % (
              model, args.steps))
    head = "%-10s %13s %12s %10s %22s" % (
        "recompute", "predicted ms", "measured ms", "arena MiB",
        "stash+transient MiB")
    print(head)
    print("-" * len(head))
    for mode, p, m, a, s in rows:
        print("%-10s %13.1f %12.1f %10.1f %22.1f" % (mode, p, m, a, s))
    (_, p0, m0, a0, s0), (_, p1, m1, a1, s1) = rows
    print("full / none: predicted %.3f, measured %.3f step time; arena "
          "%.3f, stash+transient %.3f" % (p1 / p0, m1 / m0, a1 / a0,
                                           s1 / s0))
    print("(predicted from the cluster preset's peaks: no profile)")


if __name__ == "__main__":
    cli(__doc__, planning, measure,
        "also measure recompute none and full on 2 CPU ranks", 6)
