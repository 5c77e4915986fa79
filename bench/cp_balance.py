#!/usr/bin/env python3
"""Causal attention work per context-parallel rank: contiguous blocks
against zig-zag blocks (chunks g and 2cp - 1 - g).

Runs `cleave-bench-cp-balance` (bench/kernels), which times the CPU fused
attention kernels (forward + backward) on every rank's block of queries
against the whole sequence, both layouts side by side in one process, and
prints per layout the slowest rank over the mean: the step of a cp group
waits for its slowest rank at every layer's key/value all-gather, and the
cost model prices the mean (balanced) work.

    bench/cp_balance.py [--bench PATH] [--seq 2048] [--heads 4] [--dim 64]
"""
import argparse
import os
import subprocess
import sys

from benchlib import ROOT

DEFAULT_BENCH = os.path.join(ROOT, "build", "bench", "kernels",
                             "cleave-bench-cp-balance")


def run(bench, seq, cp, heads, dim, repeats):
    out = subprocess.run([bench, str(seq), str(cp), str(heads), str(dim),
                          str(repeats)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr.strip() or "exit %d" % out.returncode)
    rows = {}
    for line in out.stdout.splitlines()[1:]:
        layout, rank, ms, scores = line.split()
        rows.setdefault(layout, []).append((int(rank), float(ms), int(scores)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=DEFAULT_BENCH)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cp", default="2,4,8")
    args = ap.parse_args()
    print(f"fused causal attention, forward + backward, seq {args.seq}, "
          f"{args.heads} heads of {args.dim}; best of {args.repeats}")
    print(f"{'cp':>3} {'layout':>10} {'rank ms (min..max)':>22} "
          f"{'max/mean time':>14} {'max/mean scores':>16}")
    for cp in (int(c) for c in args.cp.split(",")):
        rows = run(args.bench, args.seq, cp, args.heads, args.dim,
                   args.repeats)
        for layout in ("contiguous", "zigzag"):
            ranks = rows[layout]
            times = [ms for _, ms, _ in ranks]
            scores = [s for _, _, s in ranks]
            mean_t = sum(times) / len(times)
            mean_s = sum(scores) / len(scores)
            print(f"{cp:>3} {layout:>10} "
                  f"{min(times):>10.1f}..{max(times):<10.1f} "
                  f"{max(times) / mean_t:>14.2f} {max(scores) / mean_s:>16.2f}")


if __name__ == "__main__":
    main()
