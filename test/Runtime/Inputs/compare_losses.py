#!/usr/bin/env python3
"""Compares the per-step losses of two `cleave run` logs.

Usage: compare_losses.py A.txt B.txt TOLERANCE
Prints "N steps within TOLERANCE (worst E)" and exits 0 when both logs
have the same steps and every step's losses agree within the relative
TOLERANCE; otherwise names the first step that differs and exits 1.
"""
import re
import sys


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*step (\d+)\s+loss\s+(\S+)", line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
    return out


def main():
    a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
    if not a or a.keys() != b.keys():
        print(f"steps differ: {sorted(a)} vs {sorted(b)}")
        return 1
    worst = 0.0
    for step in sorted(a):
        err = abs(a[step] - b[step]) / max(abs(b[step]), 1e-30)
        worst = max(worst, err)
        if not err <= tol:
            print(f"step {step}: loss {a[step]} vs {b[step]}, relative "
                  f"error {err:.2e} > {tol}")
            return 1
    print(f"{len(a)} steps within {tol} (worst {worst:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
