#!/usr/bin/env python3
"""Plans of CNNs with tensor parallelism: search time, the plan, and what
tensor parallelism buys.

Graphs without transformer layers are planned with data, tensor and
pipeline parallelism of their residual blocks (GraphPlan.h); for every
tensor-parallel degree and microbatch size the intra-operator search
chooses the sharding (convolutions by channels or groups, batch norms by
channels). Two tables:

1. Planning on DGX A100 nodes: for each model and cluster, `cleave compile`
   searching every knob against the same search held to tp=1 (data
   parallelism and pipeline stages only, as before tensor parallelism for
   CNNs): wall time, plans considered, the chosen knobs, and the predicted
   step times side by side.

2. Measured on this machine's CPU ranks (--run): a Wide ResNet-50 (64x64
   images, 10 classes) on 2 local ranks under tp=2, dp=2 and pp=2, each
   compiled with --fix and run for --steps steps; the predicted step time
   against the measured median (steps after the first), and each plan's
   measured time over the tp=2 plan's. Run on an otherwise idle machine.

Python 3 standard library only.

    python3 bench/graph_plan_search.py            # table 1
    python3 bench/graph_plan_search.py --run      # and table 2
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import compile_json
from benchlib import DEFAULT_CLEAVE, ROOT

RESNET50 = os.path.join(ROOT, "test", "models", "resnet50.onnx")
STEP_RE = re.compile(r"^step\s+(\d+)\s+loss\s+(\S+)\s+time\s+([0-9.]+)\s*ms")

# (label, model arguments, nodes, global batch)
ROWS = [
    ("resnet50.onnx", [RESNET50, "--batch", "8"], 1, 256),
    ("resnet50.onnx", [RESNET50, "--batch", "8"], 2, 256),
    ("resnet50.onnx", [RESNET50, "--batch", "8"], 4, 512),
    ("wrn-50-2", ["zoo:wrn-50-2"], 1, 256),
    ("wrn-50-2", ["zoo:wrn-50-2"], 2, 64),
    ("wrn-101-2", ["zoo:wrn-101-2"], 4, 64),
]


def knobs(d):
    p = d["plan"]
    return "dp=%d tp=%d pp=%d mb=%d zero=%d" % (
        p["dp"], p["tp"], p["pp"], p["microbatch_size"], p["zero"])


def planning(cleave):
    print("1. Planning on DGX A100 nodes: the whole search against the "
          "search held to tp=1")
    head = "%-14s %5s %6s | %7s %6s %-30s %9s | %7s %-30s %9s | %6s" % (
        "model", "GPUs", "batch", "wall s", "plans", "searched plan",
        "step ms", "wall s", "tp=1 plan", "step ms", "ratio")
    print(head)
    print("-" * len(head))
    for label, args, nodes, batch in ROWS:
        cluster = "dgx-a100-80g,nodes=%d" % nodes
        full, wall, err = compile_json(cleave, args, cluster, batch)
        base, wall1, err1 = compile_json(cleave, args, cluster, batch,
                                         "tp=1")
        if not full or not base:
            print("%-14s %5d %6d | failed: %s" % (label, 8 * nodes, batch,
                                                  err or err1))
            continue
        t = full["predicted"]["step_time_s"] * 1e3
        t1 = base["predicted"]["step_time_s"] * 1e3
        print("%-14s %5d %6d | %7.2f %6d %-30s %9.2f | %7.2f %-30s %9.2f | "
              "%6.3f" % (label, 8 * nodes, batch, wall,
                         full["search"]["candidates_evaluated"], knobs(full),
                         t, wall1, knobs(base), t1, t1 / t))
    print("ratio: the tp=1 plan's predicted step time over the searched "
          "plan's (above 1: tensor parallelism helps)")
    print()


def run_plan(cleave, model, fix, global_batch, steps, path):
    """Compiles `model` for 2 CPU ranks with --fix `fix` into `path`, runs
    it `steps` steps with one BLAS thread a rank: (its `inspect --json`,
    the predicted step ms, the median measured ms of steps 2 on)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    subprocess.run([cleave, "compile", model, "--cluster",
                    "cpu-local,devices=2", "--global-batch", str(global_batch),
                    "--optimizer", "sgd", "--fix", fix, "-o", path],
                   check=True, capture_output=True, env=env)
    info = json.loads(subprocess.run(
        [cleave, "inspect", path, "--json"], check=True,
        capture_output=True, text=True, env=env).stdout)
    out = subprocess.run([cleave, "run", path, "--steps", str(steps)],
                         check=True, capture_output=True, text=True,
                         env=env).stdout
    times = [float(m.group(3)) for m in
             (STEP_RE.match(l.strip()) for l in out.splitlines()) if m]
    return (info, info["predicted"]["step_time_s"] * 1e3,
            statistics.median(times[1:]))


def measure(cleave, args):
    model = "zoo:wideresnet,depth=50,width=1,image=64,classes=10"
    plans = [("tp=2", "tp=2,microbatch=4"),
             ("dp=2", "dp=2,microbatch=2"),
             ("pp=2 1f1b mb1", "pp=2,microbatch=1,schedule=1f1b")]
    work = tempfile.mkdtemp(prefix="cleave-graph-bench-")
    rows = []
    for name, fix in plans:
        path = os.path.join(work, re.sub(r"\W+", "_", name) + ".cleave")
        _, predicted, measured = run_plan(cleave, model, fix, 4, args.steps,
                                          path)
        rows.append((name, predicted, measured))
    print("2. Measured: %s, 2 CPU ranks, global batch 4, sgd, "
          "OPENBLAS_NUM_THREADS=1, median of steps 2-%d" % (model,
                                                            args.steps))
    head = "%-16s %13s %12s %14s %14s" % (
        "plan", "predicted ms", "measured ms", "pred / tp=2", "meas / tp=2")
    print(head)
    print("-" * len(head))
    for name, p, m in rows:
        print("%-16s %13.1f %12.1f %14.2f %14.2f" % (
            name, p, m, p / rows[0][1], m / rows[0][2]))
    print("(predicted from the cluster preset's peaks: no profile)")


def cli(doc, planning, measure, run_help, steps, more_args=None):
    """The command line of a graph-plan benchmark: the planning table, and
    with --run the measured one (`measure(cleave, args)`); `more_args(ap)`
    adds a benchmark's own options."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--cleave", default=DEFAULT_CLEAVE)
    ap.add_argument("--run", action="store_true", help=run_help)
    ap.add_argument("--steps", type=int, default=steps)
    if more_args:
        more_args(ap)
    args = ap.parse_args()
    if not os.access(args.cleave, os.X_OK):
        sys.exit("no cleave at %s (build first)" % args.cleave)
    planning(args.cleave)
    if args.run:
        measure(args.cleave, args)


if __name__ == "__main__":
    cli(__doc__, planning, measure,
        "also measure tp=2, dp=2 and pp=2 on 2 CPU ranks", 8)
