#!/usr/bin/env python3
"""ZeRO's collectives beside compute (overlap-grad=on) against where the
graph needs them (overlap-grad=off), side by side in one run.

Two tables:

1. Predicted, on the GPU presets (the cost model; no GPU is needed): the
   step time of the same ZeRO-1/2/3 plan with overlap-grad on and off, and
   what the search picks for each model. On GPUs NCCL runs on its own
   stream, so the lowering's asynchronous collectives (CollectiveOverlap.h,
   ZeRO-1's reduce-scatter in the backward pass, ZeRO-1/2's gather of the
   updated blocks carried into the next step's forward pass) hide behind
   compute.
2. Measured here, on CPU ranks over MPI (`cleave run`, median step time of
   steps 2..N): the same small GPT under ZeRO-1/2/3 with dp=2, overlap-grad
   on and off, alternating runs. OpenMPI has no progress thread, so a
   collective started early moves only when a rank enters MPI; the CPU
   cluster prices them as not overlapped either way (comm_overlaps_compute
   = 0). This table checks the asynchronous form costs nothing there.

    python3 bench/zero_overlap.py [--cleave build/tools/cleave/cleave]
        [--steps 8] [--repeats 2] [--skip-measured]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
from benchlib import DEFAULT_CLEAVE, ROOT

STEP_RE = re.compile(r"^step\s+(\d+)\s+loss\s+\S+\s+time\s+([0-9.]+)\s*ms")

PREDICTED = [  # model, cluster, global batch, fixed knobs
    ("zoo:megatron-7.5b", "dgx-a100-80g,nodes=16", 512,
     "dp=128,tp=1,pp=1,microbatch=2,schedule=1f1b,recompute=none"),
    ("zoo:megatron-18b", "dgx-a100-80g,nodes=32", 1024,
     "dp=128,tp=2,pp=1,microbatch=2,schedule=1f1b,recompute=none"),
    ("zoo:gpt3-175b", "dgx-a100-80g,nodes=128", 1536,
     "dp=256,tp=4,pp=1,microbatch=1,sp=on,recompute=selective"),
    # A pipeline: ZeRO-1's gather of the updated blocks, carried into the
    # next step, runs in the warm-up of the later stages.
    ("zoo:megatron-1t", "dgx-a100-80g,nodes=384", 3072,
     "dp=24,tp=8,pp=16,vpp=8,microbatch=1,sp=on,recompute=selective"),
]

SMALL_GPT = "zoo:gpt,layers=4,hidden=512,heads=8,seq=128,vocab=8192"


def predicted_table(cleave):
    print("Predicted step time (cost model), overlap-grad on vs off")
    print(f"{'model':>18} {'plan':>34} {'zero':>4} | {'on s':>8} "
          f"{'off s':>8} {'on/off':>6}")
    for model, cluster, batch, fix in PREDICTED:
        for zero in (1, 2, 3):
            times = []
            for overlap in ("on", "off"):
                d, _, err = compile_json(cleave, model, cluster, batch,
                                      f"{fix},zero={zero},overlap-grad={overlap}")
                times.append(d["predicted"]["step_time_s"] if d else None)
            on, off = times
            if on is None or off is None:
                print(f"{model:>18} {fix[:34]:>34} {zero:>4} | does not fit")
                continue
            print(f"{model:>18} {fix[:34]:>34} {zero:>4} | {on:8.3f} "
                  f"{off:8.3f} {on / off:6.3f}")
        d, _, _ = compile_json(cleave, model, cluster, batch, None)
        if d:
            p = d["plan"]
            knobs = ",".join(f"{k}={p[k]}" for k in (
                "dp", "tp", "pp", "zero", "microbatch_size", "schedule",
                "recompute"))
            print(f"{'':>18} {'searched: ' + knobs:>54} | "
                  f"{d['predicted']['step_time_s']:8.3f}")


def measure(cleave, plan, steps, env):
    out = subprocess.run([cleave, "run", plan, "--steps", str(steps)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"cleave run {plan} failed:\n{out.stderr}")
    times = [float(m.group(2)) for line in out.stdout.splitlines()
             if (m := STEP_RE.match(line.strip())) and int(m.group(1)) >= 2]
    return statistics.median(times)


def measured_table(cleave, steps, repeats):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    print()
    print(f"Measured on CPU ranks: {SMALL_GPT}, dp=2, global batch 8, "
          f"microbatch 2, median of steps 2-{steps}, {repeats} alternating "
          "runs each")
    print(f"{'zero':>4} | {'on ms':>8} {'off ms':>8} {'on/off':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for zero in (1, 2, 3):
            plans = {}
            for overlap in ("on", "off"):
                plans[overlap] = os.path.join(tmp, f"z{zero}{overlap}.cleave")
                fix = (f"dp=2,tp=1,pp=1,zero={zero},microbatch=2,"
                       f"overlap-grad={overlap}")
                subprocess.run([cleave, "compile", SMALL_GPT, "--cluster",
                                "cpu-local,devices=2", "--global-batch", "8",
                                "--fix", fix, "-o", plans[overlap]],
                               check=True, capture_output=True)
            runs = {"on": [], "off": []}
            for _ in range(repeats):
                for overlap in ("on", "off"):
                    runs[overlap].append(measure(cleave, plans[overlap],
                                                 steps, env))
            on = statistics.median(runs["on"])
            off = statistics.median(runs["off"])
            print(f"{zero:>4} | {on:8.1f} {off:8.1f} {on / off:6.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cleave", default=DEFAULT_CLEAVE)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip-measured", action="store_true")
    args = ap.parse_args()
    predicted_table(args.cleave)
    if not args.skip_measured:
        measured_table(args.cleave, args.steps, args.repeats)


if __name__ == "__main__":
    main()
