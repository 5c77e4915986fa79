"""Pipeline schedules for graphs without transformer layers: what each buys
the search, predicted and measured.

A graph without transformer layers (a ResNet, an imported CNN) is pipelined
over its residual blocks (GraphPlan.h) under GPipe, 1F1B, interleaved 1F1B
(2-4 chunks of blocks per stage, chunk c on stage c % pp) or ZB-H1 (each
backward split into B, what the gradient sent back needs, and W, the weight
gradients, deferred into the bubble). Two tables:

1. Predicted, A100 clusters: for each row, `cleave compile` with the
   schedule fixed to each in turn (the other knobs searched) and the whole
   search: each plan, its predicted step time and bubble, and the ratio of
   1F1B's step time over it.

2. Measured on this machine's CPU ranks (--run): a Wide ResNet-50 (64x64
   images) cut into 2 stages on 2 local ranks, one image a microbatch, 4
   microbatches a step, under each schedule: the predicted step time and
   bubble, and the measured median step time (the median over --launches
   launches, taken round-robin over the schedules so that the machine's
   drift falls on all alike, of each launch's median of steps 2 on), and
   1F1B's time over each, predicted and measured. Run on an otherwise idle
   machine.

Python 3 standard library only.

    python3 bench/graph_schedules.py            # table 1
    python3 bench/graph_schedules.py --run      # and table 2
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from graph_plan_search import STEP_RE, cli
from benchlib import compile_json

SCHEDULES = ["1f1b", "gpipe", "interleaved", "zb-h1"]

# (label, model arguments, cluster, global batch, knobs held for every run)
ROWS = [
    # Images too large for one A100 at a time: two stages of blocks.
    ("wrn-101-2 @2816", ["zoo:wrn-101-2,image=2816"],
     "dgx-a100-40g,nodes=8,devices=1", 64, ""),
    # The exported ResNet-50 held to four stages over four DGX nodes.
    ("resnet50.onnx pp4", [os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "test", "models", "resnet50.onnx"), "--batch", "8"],
     "dgx-a100-80g,nodes=4", 256, "pp=4"),
    ("wrn-50-2 @224 pp4", ["zoo:wrn-50-2"], "dgx-a100-40g,nodes=4,devices=1",
     256, "pp=4"),
]


def knobs(d):
    p = d["plan"]
    rc = p.get("stage_recompute") or [p.get("recompute", "none")]
    rc = "/".join(rc) if len(set(rc)) > 1 else rc[0]
    schedule = p["schedule"]
    if schedule == "interleaved":
        schedule += "/%d" % p["vpp"]
    return "dp%d tp%d pp%d mb%d %s z%d rc=%s" % (
        p["dp"], p["tp"], p["pp"], p["microbatch_size"], schedule, p["zero"],
        rc)


def joined(*fixes):
    return ",".join(f for f in fixes if f)


def planning(cleave):
    print("1. Predicted: the schedule fixed to each in turn (the rest "
          "searched), and the whole search")
    head = "%-18s %-30s %5s | %-12s | %-44s %8s %7s %6s" % (
        "model", "cluster", "batch", "schedule", "plan", "step s", "bubble",
        "1f1b/x")
    print(head)
    print("-" * len(head))
    for label, args, cluster, batch, held in ROWS:
        results = []
        for schedule in SCHEDULES + ["searched"]:
            fix = held if schedule == "searched" else joined(
                held, "schedule=" + schedule)
            d, _, err = compile_json(cleave, args, cluster, batch, fix)
            results.append((schedule, d, err))
        base = results[0][1]
        for schedule, d, err in results:
            if not d:
                print("%-18s %-30s %5d | %-12s | failed: %s" % (
                    label, cluster, batch, schedule, err))
                continue
            t = d["predicted"]["step_time_s"]
            ratio = ("%6.3f" % (base["predicted"]["step_time_s"] / t)
                     if base else "%6s" % "-")
            print("%-18s %-30s %5d | %-12s | %-44s %8.3f %6.1f%% %s" % (
                label, cluster, batch, schedule, knobs(d), t,
                100 * d["predicted"]["bubble_fraction"], ratio))
    print("1f1b/x: the 1F1B plan's predicted step time over this plan's")
    print()


def measure(cleave, args):
    model = "zoo:wideresnet,depth=50,width=1,image=64,classes=10"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    work = tempfile.mkdtemp(prefix="cleave-graph-schedules-")
    plans = [("1f1b", "schedule=1f1b"), ("gpipe", "schedule=gpipe"),
             ("interleaved/2", "schedule=interleaved,vpp=2"),
             ("zb-h1", "schedule=zb-h1")]
    info = {}
    for name, fix in plans:
        path = os.path.join(work, name.replace("/", "-") + ".cleave")
        subprocess.run([cleave, "compile", model, "--cluster",
                        "cpu-local,devices=2", "--global-batch", "4",
                        "--optimizer", "sgd", "--fix",
                        "tp=1,pp=2,microbatch=1," + fix, "-o", path],
                       check=True, capture_output=True, env=env)
        info[name] = (path, json.loads(subprocess.run(
            [cleave, "inspect", path, "--json"], check=True,
            capture_output=True, text=True, env=env).stdout))
    launches = {name: [] for name, _ in plans}
    for launch in range(args.launches):
        for name, _ in plans:
            out = subprocess.run([cleave, "run", info[name][0], "--steps",
                                  str(args.steps)], check=True,
                                 capture_output=True, text=True,
                                 env=env).stdout
            times = [float(m.group(3)) for m in
                     (STEP_RE.match(l.strip()) for l in out.splitlines())
                     if m]
            launches[name].append(statistics.median(times[1:]))
        print("launch %d of %d done" % (launch + 1, args.launches),
              file=sys.stderr)
    print("2. Measured: %s, pp=2 on 2 CPU ranks, microbatch 1, 4 "
          "microbatches, sgd, OPENBLAS_NUM_THREADS=1; median over %d "
          "launches of steps 2-%d" % (model, args.launches, args.steps))
    head = "%-14s %13s %7s %12s %22s %13s %12s" % (
        "schedule", "predicted ms", "bubble", "measured ms",
        "launch medians ms", "pred 1f1b/x", "meas 1f1b/x")
    print(head)
    print("-" * len(head))
    p0 = info["1f1b"][1]["predicted"]["step_time_s"] * 1e3
    m0 = statistics.median(launches["1f1b"])
    for name, _ in plans:
        d = info[name][1]["predicted"]
        p = d["step_time_s"] * 1e3
        m = statistics.median(launches[name])
        print("%-14s %13.1f %6.1f%% %12.1f %22s %13.3f %12.3f" % (
            name, p, 100 * d["bubble_fraction"], m,
            " ".join("%.0f" % t for t in launches[name]), p0 / p, m0 / m))
    print("(predicted from the cluster preset's peaks: no profile; the "
          "ratios are what to compare)")


if __name__ == "__main__":
    cli(__doc__, planning, measure,
        "also measure each schedule on 2 CPU ranks", 8,
        lambda ap: ap.add_argument("--launches", type=int, default=3))
