#!/usr/bin/env python3
"""Recomputation per pipeline stage against the best uniform recomputation.

For each row, `cleave compile --json` searches the whole space twice: once
free (the search may recompute on the first k stages only), once for each
uniform mode (`--fix recompute=none|selective|full`), keeping the best of
those. Prints predicted TFLOP/s per device of both and their ratio, and the
plans. The cost model's prediction, no GPU is needed.

    python3 bench/stage_recompute.py [--cleave build/tools/cleave/cleave]
"""

import argparse
import json
import os
import subprocess
import time

from benchlib import DEFAULT_CLEAVE, ROOT, compile_json, recompute_text


ROWS = [  # model, cluster, global batch
    ("zoo:megatron-310b", "dgx-a100-80g,nodes=240", 2160),
    ("zoo:megatron-530b", "dgx-a100-80g,nodes=315", 2520),
    ("zoo:megatron-1t", "dgx-a100-80g,nodes=384", 3072),
    ("zoo:gpt3-175b", "dgx-a100-40g,nodes=64", 1536),
    ("zoo:llama2-70b", "dgx-a100-40g,nodes=8", 512),
]


def describe(d):
    p = d["plan"]
    rc = recompute_text(p)
    return (f"dp{p['dp']} tp{p['tp']} pp{p['pp']} mb{p['microbatch_size']} "
            f"{p['schedule']}{'/' + str(p['vpp']) if p['vpp'] > 1 else ''} "
            f"zero{p['zero']} rc={rc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cleave", default=DEFAULT_CLEAVE)
    args = ap.parse_args()
    print(f"{'model':>18} {'cluster':>24} | {'free':>7} {'uniform':>7} "
          f"{'ratio':>6} | {'search s':>8} | plans (free; best uniform)")
    for model, cluster, batch in ROWS:
        free, secs, _ = compile_json(args.cleave, model, cluster, batch)
        best = None
        for mode in ("none", "selective", "full"):
            d, _, _ = compile_json(args.cleave, model, cluster, batch,
                                f"recompute={mode}")
            if d and (best is None or d["predicted"]["tflops_per_device"] >
                      best["predicted"]["tflops_per_device"]):
                best = d
        if not free or not best:
            print(f"{model:>18} {cluster:>24} | no plan")
            continue
        a = free["predicted"]["tflops_per_device"]
        b = best["predicted"]["tflops_per_device"]
        print(f"{model:>18} {cluster:>24} | {a:7.1f} {b:7.1f} {a / b:6.3f} | "
              f"{secs:8.2f} | {describe(free)}; {describe(best)}")


if __name__ == "__main__":
    main()
