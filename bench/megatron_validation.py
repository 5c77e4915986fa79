#!/usr/bin/env python3
"""Score Megatron-LM's published configurations with cleave's cost model.

For every row of Narayanan et al., SC'21, Table 1 (GPT on A100 80 GB,
sequence 2048, vocabulary 51200, fp16 mixed precision, 1F1B, full
recomputation), `cleave compile` scores the published (t, p, d, batch) plan on
the one `dgx-a100-80g` preset and this script prints predicted against
measured TFLOP/s per GPU. FLOPs are counted as the paper does, recomputation
included: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).

The paper does not give the microbatch size; the table uses 1 (the size
Megatron-LM's scripts use for these models) and also shows the best feasible
size. Megatron-LM as published reduced fp16 gradients (grad-reduce=half; cleave's
lowering and Megatron-Core reduce fp32 ones) after the pipeline flush and
blocked on pipeline transfers, so the plans are scored with overlap-grad=off
and overlap-p2p=off (cleave's own runtime overlaps both), and it cut the
layers evenly over the stages (stages=even; cleave balances them against the
embedding and head by default). Its full recomputation runs each layer's whole
forward pass again (recompute-scope=layer; cleave's lowering recomputes only
what the backward pass reads, which leaves out the MLP's output GEMM).

A second table scores Megatron-Core r0.8's published H100 weak-scaling
runs (GPT, sequence 4096, vocabulary 131072, dp 48) with the settings its
README states: bf16 (gradients reduced in fp32, Megatron's default for
bf16), the distributed optimizer with its gradient and parameter buckets
(zero=1, zero-bucket=40: 40 M elements a bucket), overlapped gradient
reduction, parameter gathers and p2p, and --tp-comm-overlap (overlap-tp=on:
Transformer Engine's collective GEMMs); attention priced unfused and fused
(attention=fused: cuDNN's fused attention at the rate the dgx-h100 preset
states). overlap-tp and zero-bucket price how Megatron-Core runs; cleave's
own lowering does neither, so `-o` refuses them.

With `--profile FILE` (what `cleave profile --backend cuda` or the device
script's cleave-profile-cuda measured on an H100 or H200: GEMM tables,
bandwidths, collectives) the H100 table is priced on those measurements
instead of the preset's efficiency formulas; the H200 has the H100's
compute, so its GEMM table stands in for it.

Usage: bench/megatron_validation.py [path/to/cleave] [--profile FILE]
"""
import json
import os
import subprocess
import sys
from benchlib import DEFAULT_CLEAVE

ROWS = [  # params, hidden, layers, heads, GPUs, TP, PP, DP, batch, TFLOP/s
    ("1.7b", 2304, 24, 24, 32, 1, 1, 32, 512, 137),
    ("3.6b", 3072, 30, 32, 64, 2, 1, 32, 512, 138),
    ("7.5b", 4096, 36, 32, 128, 4, 1, 32, 512, 142),
    ("18b", 6144, 40, 48, 256, 8, 1, 32, 1024, 135),
    ("39b", 8192, 48, 64, 512, 8, 2, 32, 1536, 138),
    ("76b", 10240, 60, 80, 1024, 8, 4, 32, 1792, 140),
    ("145b", 12288, 80, 96, 1536, 8, 8, 24, 2304, 148),
    ("310b", 16384, 96, 128, 1920, 8, 16, 15, 2160, 155),
    ("530b", 20480, 105, 128, 2520, 8, 35, 9, 2520, 163),
    ("1t", 25600, 128, 160, 3072, 8, 64, 6, 3072, 163),
]
SEQ, VOCAB = 2048, 51200


def paper_flops(batch, layers, hidden):
    s, l, h, v = SEQ, layers, hidden, VOCAB
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


def score(cleave, name, gpus, tp, pp, dp, batch, mbs):
    knobs = (f"tp={tp},pp={pp},dp={dp},cp=1,sp=off,zero=0,microbatch={mbs},"
             "recompute=full,recompute-scope=layer,precision=fp16,"
             "grad-reduce=half,schedule=1f1b,overlap-grad=off,"
             "overlap-p2p=off,stages=even,attention=unfused")
    cmd = [cleave, "compile", f"zoo:megatron-{name}", "--cluster",
           f"dgx-a100-80g,nodes={gpus // 8}", "--global-batch", str(batch),
           "--fix", knobs, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)["predicted"]


def a100_table(cleave):
    print(f"{'model':>7} {'GPUs':>5} {'t':>2} {'p':>3} {'d':>3} {'batch':>5} "
          f"{'measured':>8} | {'mbs=1':>6} {'err':>7} | {'best mbs':>8} "
          f"{'TFLOP/s':>7} {'err':>7} | {'step s':>7} {'bubble':>6} {'mem GB':>6}")
    errors, best_errors = [], []
    for name, h, l, a, gpus, tp, pp, dp, batch, measured in ROWS:
        results = {}
        for mbs in (1, 2, 4, 8):
            if batch % (dp * mbs):
                continue
            p = score(cleave, name, gpus, tp, pp, dp, batch, mbs)
            if p:
                results[mbs] = paper_flops(batch, l, h) / p["step_time_s"] / gpus / 1e12, p
        if 1 not in results:
            print(f"{name:>7}: mbs=1 infeasible")
            continue
        tf1, p1 = results[1]
        err1 = (tf1 - measured) / measured * 100
        best = max(results, key=lambda m: results[m][0])
        tfb = results[best][0]
        errb = (tfb - measured) / measured * 100
        errors.append(err1)
        best_errors.append(errb)
        print(f"{name:>7} {gpus:>5} {tp:>2} {pp:>3} {dp:>3} {batch:>5} "
              f"{measured:>8} | {tf1:>6.1f} {err1:>+6.1f}% | {best:>8} "
              f"{tfb:>7.1f} {errb:>+6.1f}% | {p1['step_time_s']:>7.2f} "
              f"{p1['bubble_fraction']:>6.3f} {p1['peak_memory_bytes'] / 1e9:>6.1f}")
    for label, errs in (("mbs=1", errors), ("best mbs", best_errors)):
        mean_abs = sum(abs(e) for e in errs) / len(errs)
        worst = max(errs, key=abs)
        within = sum(abs(e) <= 10 for e in errs)
        print(f"{label}: mean |error| {mean_abs:.1f}%, mean error "
              f"{sum(errs) / len(errs):+.1f}%, worst {worst:+.1f}%, "
              f"{within}/{len(errs)} rows within 10%")


# Megatron-Core r0.8's published weak scaling on H100 (DGX H100, bf16,
# sequence 4096, vocabulary 131072, data parallelism 48 in every row):
# params, heads, hidden, layers, TP, PP, GPUs, global batch, TFLOP/s/GPU.
H100_ROWS = [
    ("1.7b", 16, 2048, 24, 1, 1, 48, 192, 408.8),
    ("7.1b", 32, 4096, 30, 2, 1, 96, 192, 465.9),
    ("16b", 48, 6144, 32, 4, 1, 192, 192, 489.1),
    ("32b", 56, 7168, 48, 8, 1, 384, 192, 459.6),
    ("70b", 64, 8192, 84, 8, 2, 768, 384, 419.7),
    ("119b", 80, 10240, 92, 8, 4, 1536, 768, 420.5),
    ("177b", 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
    ("314b", 128, 16384, 96, 8, 8, 3072, 1536, 474.4),
    ("462b", 144, 18432, 112, 8, 16, 6144, 3072, 459.9),
]
H100_SEQ, H100_VOCAB = 4096, 131072


def megatron_core_flops(batch, layers, hidden):
    """Megatron's count without recomputation (its TFLOP/s report)."""
    s, l, h, v = H100_SEQ, layers, hidden, H100_VOCAB
    return 72 * batch * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h))


def score_h100(cleave, heads, hidden, layers, tp, pp, gpus, batch,
               attention, free=False, profile=None):
    """Megatron-Core's settings: bf16, the distributed optimizer (ZeRO-1,
    40 M-element buckets), gradient reduction, parameter gathers, pipeline
    transfers and tensor-parallel collectives overlapped, sequence
    parallelism with tp, no recomputation. `free`: the schedule, vpp and
    microbatch are the search's (Megatron-Core's scripts do not say)."""
    knobs = (f"tp={tp},pp={pp},dp={gpus // (tp * pp)},cp=1,"
             f"sp={'on' if tp > 1 else 'off'},zero=1,recompute=none,"
             f"precision=bf16,overlap-grad=on,overlap-p2p=on,"
             f"attention={attention},zero-bucket=40,"
             f"overlap-tp={'on' if tp > 1 else 'off'}")
    if not free:
        knobs += ",microbatch=1,schedule=1f1b"
    # Untied: the names count separate input and output embeddings (1.7B
    # = 12 l h^2 + 2 V h at h 2048, l 24; tied it would be 1.5B).
    model = (f"zoo:gpt,layers={layers},hidden={hidden},heads={heads},"
             f"seq={H100_SEQ},vocab={H100_VOCAB},tied=false")
    cmd = [cleave, "compile", model, "--cluster",
           f"dgx-h100,nodes={gpus // 8}", "--global-batch", str(batch),
           "--fix", knobs, "--json"]
    if profile:
        cmd += ["--profile", profile]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def h100_table(cleave, profile=None):
    print()
    print("Megatron-Core r0.8, H100 weak scaling (TFLOP/s per GPU by "
          "Megatron's count)" + (f", priced on {profile}" if profile else ""))
    print(f"{'model':>6} {'GPUs':>5} {'t':>2} {'p':>3} {'measured':>8} | "
          f"{'unfused':>7} {'err':>7} | {'fused':>7} {'err':>7} | "
          f"{'searched':>8} {'err':>7} | searched schedule")
    errs = {"unfused": [], "fused": [], "searched": []}
    for name, a, h, l, tp, pp, gpus, batch, measured in H100_ROWS:
        flops = megatron_core_flops(batch, l, h)
        cells = []
        schedule = ""
        for label, attention, free in (("unfused", "unfused", False),
                                       ("fused", "fused", False),
                                       ("searched", "fused", True)):
            found = score_h100(cleave, a, h, l, tp, pp, gpus, batch,
                               attention, free, profile)
            if not found:
                cells.append(f"{'-':>7} {'':>7}")
                continue
            tf = flops / found["predicted"]["step_time_s"] / gpus / 1e12
            err = (tf - measured) / measured * 100
            errs[label].append(err)
            cells.append(f"{tf:>7.1f} {err:>+6.1f}%")
            if free:
                p = found["plan"]
                schedule = (f"{p['schedule']}"
                            f"{'/' + str(p['vpp']) if p['vpp'] > 1 else ''}"
                            f" mb={p['microbatch_size']}")
        print(f"{name:>6} {gpus:>5} {tp:>2} {pp:>3} {measured:>8} | "
              f"{cells[0]} | {cells[1]} | {cells[2]:>16} | {schedule}")
    for label, e in errs.items():
        if not e:
            continue
        mean_abs = sum(abs(x) for x in e) / len(e)
        print(f"{label}: mean |error| {mean_abs:.1f}%, mean error "
              f"{sum(e) / len(e):+.1f}%, worst {max(e, key=abs):+.1f}% "
              f"({len(e)} rows; aim: mean 5%, worst 10%)")


if __name__ == "__main__":
    args = sys.argv[1:]
    profile = None
    if "--profile" in args:
        i = args.index("--profile")
        if i + 1 >= len(args):
            sys.exit("--profile needs a FILE")
        profile = args[i + 1]
        del args[i:i + 2]
    cleave = args[0] if args else DEFAULT_CLEAVE
    a100_table(cleave)
    h100_table(cleave, profile)
