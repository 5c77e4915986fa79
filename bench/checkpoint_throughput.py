#!/usr/bin/env python3
"""Checkpoint save and load throughput, and how long a step stalls for a
save, written synchronously against in the background.

A GPT of about 110M parameters (AdamW: 1.3 GB of parameters and moments)
is trained on 4 local CPU ranks (tp=4, so every rank holds a quarter), with
a save every other step, once with --save-sync and once asynchronous (the
default), in the same run of this script so that the ratio is measured
side by side. Each save line of the worker gives the bytes, the time to
commit and the longest stall of any rank's step; a resume then gives the
load time. Printed as a table; the ratio of the stalls is what this noisy
2-core machine can report (absolute times count only on real hardware).

usage: bench/checkpoint_throughput.py [--cleave build/tools/cleave/cleave]
           [--model zoo:gpt,...] [--steps 6] [--repeats 2]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

SAVE = re.compile(r"checkpoint: step (\d+) saved to .*: ([\d.]+) MB in "
                  r"([\d.]+) s \(([\d.]+) GB/s written\), step stalled "
                  r"([\d.]+) ms \((sync|async)\)")
LOAD = re.compile(r"checkpoint: resumed from .*: ([\d.]+) MB read in "
                  r"([\d.]+) s \(([\d.]+) GB/s\)")
STEP = re.compile(r"^step (\d+)  loss [\d.na]+  time ([\d.]+) ms")


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), out.stdout[-3000:],
                                       out.stderr[-3000:]))
    return out.stdout


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--cleave",
                    default=os.path.join(root, "build/tools/cleave/cleave"))
    ap.add_argument("--model", default="zoo:gpt,layers=8,hidden=1024,heads=16,"
                    "seq=16,vocab=8192")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cleave-ckpt-bench-")
    plan = os.path.join(work, "p.cleave")
    run([args.cleave, "compile", args.model, "--cluster", "cpu-local,devices=4",
         "--global-batch", "4", "--fix", "tp=4,microbatch=1", "-o", plan])
    rows = {"sync": [], "async": []}
    steps = {"sync": [], "async": [], "none": []}
    loads = []
    for repeat in range(args.repeats):
        # Alternate the order so that drift falls on both alike.
        modes = ["sync", "async", "none"] if repeat % 2 == 0 else \
            ["none", "async", "sync"]
        for mode in modes:
            ck = os.path.join(work, "ck-%s-%d" % (mode, repeat))
            cmd = [args.cleave, "run", plan, "--steps", str(args.steps),
                   "--timeout", "600"]
            if mode != "none":
                cmd += ["--save", ck, "--save-every", "2", "--keep", "1"]
            if mode == "sync":
                cmd.append("--save-sync")
            out = run(cmd)
            for line in out.splitlines():
                m = SAVE.search(line)
                if m:
                    rows[mode].append((float(m.group(2)), float(m.group(3)),
                                       float(m.group(4)), float(m.group(5))))
                m = STEP.match(line)
                # The first step warms the caches.
                if m and int(m.group(1)) > 1:
                    steps[mode].append(float(m.group(2)))
            if mode == "async":
                out = run([args.cleave, "run", plan, "--resume", ck,
                           "--steps", "1", "--timeout", "600"])
                for line in out.splitlines():
                    m = LOAD.search(line)
                    if m:
                        loads.append((float(m.group(1)), float(m.group(2)),
                                      float(m.group(3))))
    print("checkpoint throughput, %s, tp=4 on 4 local ranks, %d steps x %d "
          "repeats" % (args.model, args.steps, args.repeats))
    print("%-8s %10s %12s %14s %16s %16s" % ("mode", "MB/save", "commit s",
                                            "write GB/s", "stall ms (med)",
                                            "step ms (med)"))
    for mode in ("sync", "async"):
        r = rows[mode]
        print("%-8s %10.0f %12.2f %14.2f %16.0f %16.0f" % (
            mode, statistics.median(x[0] for x in r),
            statistics.median(x[1] for x in r),
            statistics.median(x[2] for x in r),
            statistics.median(x[3] for x in r),
            statistics.median(steps[mode])))
    print("%-8s %10s %12s %14s %16s %16.0f" % ("none", "-", "-", "-", "-",
                                               statistics.median(steps["none"])))
    sync_stall = statistics.median(x[3] for x in rows["sync"])
    async_stall = statistics.median(x[3] for x in rows["async"])
    print("stall ratio sync/async: %.1fx" % (sync_stall / max(async_stall, 1e-9)))
    if loads:
        print("load: %.0f MB in %.2f s (%.2f GB/s), median of %d" % (
            statistics.median(x[0] for x in loads),
            statistics.median(x[1] for x in loads),
            statistics.median(x[2] for x in loads), len(loads)))
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
