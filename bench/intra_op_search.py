#!/usr/bin/env python3
"""Speed of the intra-operator search (the per-op sharding ILP, CBC).

For GPT models of growing depth, tensor-parallel over the 8 GPUs of a DGX
A100, each device holding at most 1.5x an even share of the parameters
(which forces the large weights to be split: a knapsack across layers),
this runs `cleave-opt --cleave-intra-op-search` on the imported model twice,
side by side: reduced (the default: repeated layers tied, so that each
distinct layer is solved once, and views merged into their producers) and
the whole problem, every op on its own. It prints the program
sizes, the solve times (the pass's own report, which excludes import and
parsing), the objectives (predicted seconds of a training step's compute and
communication on one device) and their ratio.

A second table searches one model on two DGX nodes as a flat mesh of 16
and as meshes of 2 x 8 and 2 x 2 x 4 (the first axis across the nodes),
with the strategies chosen for the first layer's q and output projections.

Tying restricts the choice to the same strategy at the same place of every
layer of one structure, so its objective can only be >= the whole
problem's; the table shows by how much. Merging views is exact.

A third table runs the LP relaxation rounded and improved by local moves,
returned when within 2% of the relaxation's bound, against CBC alone
(branch and bound to 0.1%, or the time limit), on meshes of two and three
axes: the times to an answer and the answers' objectives.

Usage: bench/intra_op_search.py [--build DIR] [--quick] [--untied-limit S]
                                [--rounding-limit S]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# name, zoo spec (batch is the microbatch the search sees)
MODELS = [
    ("GPT h1024 L1", "gpt,layers=1,hidden=1024,heads=16,seq=512,vocab=1000,batch=4"),
    ("GPT h1024 L4", "gpt,layers=4,hidden=1024,heads=16,seq=512,vocab=1000,batch=4"),
    ("GPT h2048 L12", "gpt,layers=12,hidden=2048,heads=16,seq=1024,vocab=32000,batch=8"),
    ("GPT h2048 L24", "gpt,layers=24,hidden=2048,heads=16,seq=1024,vocab=32000,batch=8"),
    ("GPT h2048 L48", "gpt,layers=48,hidden=2048,heads=16,seq=1024,vocab=32000,batch=8"),
    ("GPT-3 175B L96", "gpt3-175b,batch=1"),
    ("MoE every 2nd, L8", "moe,layers=8,hidden=1024,heads=16,kv_heads=16,ffn=2048,"
     "vocab=1000,seq=512,batch=4,experts=8,top_k=2,moe_every=2"),
]
QUICK = {"GPT h1024 L1", "GPT h1024 L4", "GPT h2048 L12"}

REMARK = re.compile(
    r"intra-op search: (\d+) ops(?: \((\d+) after reduction\))?, "
    r"(\d+) variables \((\d+) binary\), (\d+) constraints; (\S+( limit)?), "
    r"objective (\S+) ms, gap (\S+)%, solved in (\S+) s")


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return out


def search(opt, mlir, budget, reduce, limit, mesh="8",
           cluster="dgx-a100-80g", rounding=True, gap=1e-3):
    on = "true" if reduce else "false"
    flags = (f"mesh-shape={mesh} cluster={cluster} param-memory={budget:.0f} "
             f"report=true time-limit={limit} "
             f"tie-repeated-layers={on} merge-followers={on} "
             f"lp-rounding={'true' if rounding else 'false'} "
             f"relative-gap={gap}")
    start = time.perf_counter()
    out = run([opt, mlir, f"--cleave-intra-op-search={flags}", "-o",
               os.devnull])
    wall = time.perf_counter() - start
    m = REMARK.search(out.stderr)
    if not m:
        sys.exit(f"no report in:\n{out.stderr[-2000:]}")
    ops, solved, variables, binary, constraints, status, _, objective, gap, \
        seconds = m.groups()
    return {
        "ops": int(ops), "solved": int(solved or ops),
        "variables": int(variables), "binary": int(binary),
        "constraints": int(constraints), "status": status,
        "objective_ms": float(objective), "gap": float(gap),
        "seconds": float(seconds), "wall": wall,
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(here, "..", "build"))
    parser.add_argument("--quick", action="store_true",
                        help="only the three smallest models")
    parser.add_argument("--rounding-limit", type=float, default=30,
                        help="time limit of each search in the table of "
                        "the rounded relaxation against CBC alone")
    parser.add_argument("--untied-limit", type=float, default=120,
                        help="CBC time limit of the untied runs, seconds")
    args = parser.parse_args()
    cleave = os.path.join(args.build, "tools", "cleave", "cleave")
    opt = os.path.join(args.build, "tools", "cleave-opt", "cleave-opt")

    print(f"{'model':<19} {'ops':>5} | {'reduced: nodes':>14} {'vars':>6} "
          f"{'solve s':>8} {'ms':>9} | {'whole: vars':>12} {'solve s':>8} "
          f"{'ms':>9} {'status':>10} | {'time ratio':>10} {'obj ratio':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in MODELS:
            if args.quick and name not in QUICK:
                continue
            mlir = os.path.join(tmp, "model.mlir")
            run([cleave, "import", "zoo:" + spec, "-o", mlir])
            summary = json.loads(run([cleave, "summary", "zoo:" + spec,
                                      "--json"]).stdout)
            budget = 1.5 * summary["parameters"]["bytes"] / 8
            tied = search(opt, mlir, budget, True, 600)
            untied = search(opt, mlir, budget, False, args.untied_limit)
            print(f"{name:<19} {tied['ops']:>5} | {tied['solved']:>14} "
                  f"{tied['variables']:>6} {tied['seconds']:>8.2f} "
                  f"{tied['objective_ms']:>9.3f} | {untied['variables']:>12} "
                  f"{untied['seconds']:>8.2f} {untied['objective_ms']:>9.3f} "
                  f"{untied['status']:>10} | "
                  f"{untied['seconds'] / max(tied['seconds'], 1e-9):>10.1f} "
                  f"{tied['objective_ms'] / untied['objective_ms']:>9.4f}",
                  flush=True)
        meshes(cleave, opt, tmp, args.quick)
        rounding(cleave, opt, tmp, args.rounding_limit)


def two_node_model(cleave, tmp, spec, name):
    """The zoo model imported, and the parameter budget of 2.5x an even
    share of two DGX nodes (16 GPUs)."""
    mlir = os.path.join(tmp, name)
    run([cleave, "import", "zoo:" + spec, "-o", mlir])
    summary = json.loads(run([cleave, "summary", "zoo:" + spec,
                              "--json"]).stdout)
    return mlir, 2.5 * summary["parameters"]["bytes"] / 16


def meshes(cleave, opt, tmp, quick):
    """One model on two DGX nodes (16 GPUs) as a flat mesh and as meshes of
    two and three axes (the first across the nodes)."""
    spec = ("gpt,layers=2,hidden=1024,heads=16,seq=512,vocab=1000,batch=8"
            if quick else
            "gpt,layers=24,hidden=2048,heads=16,seq=1024,vocab=32000,batch=16")
    mlir, budget = two_node_model(cleave, tmp, spec, "mesh.mlir")
    print(f"\n{spec} on dgx-a100-80g,nodes=2, parameters <= 2.5x the even "
          "share")
    print(f"{'mesh':<8} {'nodes':>5} {'vars':>7} {'binary':>6} {'solve s':>8} "
          f"{'ms':>9} {'status':>8} | first layer's q and o projections")
    for mesh in ["16", "2x8", "2x2x4"]:
        r = search(opt, mlir, budget, True, 600, mesh,
                   "dgx-a100-80g,nodes=2")
        annotated = run([opt, mlir,
                         f"--cleave-intra-op-search=mesh-shape={mesh} "
                         f"cluster=dgx-a100-80g,nodes=2 "
                         f"param-memory={budget:.0f}"]).stdout
        strategies = re.findall(
            r'graph.matmul %\d+, %\d+ [^\n]*cleave.strategy = "([^"]+)"',
            annotated)
        print(f"{mesh:<8} {r['solved']:>5} {r['variables']:>7} "
              f"{r['binary']:>6} {r['seconds']:>8.2f} "
              f"{r['objective_ms']:>9.3f} {r['status']:>8} | "
              f"{strategies[0]}, {strategies[5]}", flush=True)


def rounding(cleave, opt, tmp, limit):
    """The rounded LP relaxation, returned when within 2% of its bound,
    against CBC alone (gap 0.1%, the time limit), on meshes of two and
    three axes."""
    spec = "gpt,layers=2,hidden=1024,heads=16,seq=512,vocab=1000,batch=8"
    mlir, budget = two_node_model(cleave, tmp, spec, "rounding.mlir")
    print(f"\n{spec} on dgx-a100-80g,nodes=2, parameters <= 2.5x the even "
          f"share: the rounded relaxation (relative-gap 2%) against CBC "
          f"alone (relative-gap 0.1%, time limit {limit:g} s)")
    print(f"{'mesh':<8} {'vars':>7} | {'rounded: status':>15} {'wall s':>7} "
          f"{'ms':>8} {'gap %':>6} | {'CBC: status':>11} {'wall s':>7} "
          f"{'ms':>8} {'gap %':>6} | {'time ratio':>10} {'obj ratio':>9}")
    for mesh in ["2x8", "2x2x2", "4x2x2", "2x2x4"]:
        a = search(opt, mlir, budget, True, limit, mesh,
                   "dgx-a100-80g,nodes=2", rounding=True, gap=0.02)
        b = search(opt, mlir, budget, True, limit, mesh,
                   "dgx-a100-80g,nodes=2", rounding=False)
        print(f"{mesh:<8} {a['variables']:>7} | {a['status']:>15} "
              f"{a['wall']:>7.1f} {a['objective_ms']:>8.3f} {a['gap']:>6.2f} | "
              f"{b['status']:>11} {b['wall']:>7.1f} {b['objective_ms']:>8.3f} "
              f"{b['gap']:>6.2f} | {b['wall'] / a['wall']:>10.1f} "
              f"{a['objective_ms'] / b['objective_ms']:>9.4f}", flush=True)


if __name__ == "__main__":
    main()
