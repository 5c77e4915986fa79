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

A third table scores MosaicML's published H100 runs of its MPT models
(llm-foundry, scripts/train/benchmarking/README.md at commit 061f2c7,
"H100 80GB BF16": every 760M-70B row): GPT-style decoders (expansion 4,
vocabulary 50368, learned positions, no dropout) trained with PyTorch FSDP
FULL_SHARD (zero=3, one gather per transformer block: zero-bucket of one
layer's parameters), mixed precision PURE (bf16 parameters and gradient
reductions: grad-reduce=half), Triton flash attention (attention=fused),
activation checkpointing of whole blocks where the row says so
(recompute=full, recompute-scope=layer), on dp = the GPUs. Their TFLOP/s
count 2 N per token for the N parameters (embedding included) and the
whole S x S attention, times 3 (the README's formula); predictions are
counted the same way. MosaicML ran Triton flash attention, not the cuDNN
kernel the preset prices: a second column prices attention at the Triton
rows of the same FlashAttention-3 paper figure (forward, H100, head 64 and
128: 406 TFLOP/s for long sequences, half at 820 causal / 100 full; mean
error 3.3% over its 18 points; backward assumed at cuDNN's 0.82 of
forward, the paper giving no Triton backward).

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
    where = []  # the fused plan's breakdown, per row
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
            if label == "fused":
                where.append((name, found["predicted"],
                              flops / (measured * 1e12 * gpus)))
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
    where_the_error_sits(where)


def where_the_error_sits(rows):
    """The fused plans' predicted step split into the busiest stage's
    compute stream and the rest (exposed communication and bubble), a
    layer's forward split into GEMMs, element-wise kernels and
    tensor-parallel collectives, and what the measured step implies: the
    factor every compute kernel would have to be slower by for the
    prediction to match, the exposed communication and bubble kept."""
    if not rows:
        return
    print()
    print("Where the fused predictions' error sits (Megatron-Core H100 rows):")
    print(f"{'model':>6} | {'step s':>7} {'compute':>7} {'exposed':>7} | "
          f"{'layer fwd':>9} {'GEMM':>5} {'elem':>5} {'tp':>5} | "
          f"{'measured s':>10} {'compute x':>9}")
    factors = []
    for name, p, measured_step in rows:
        step, compute = p["step_time_s"], p["compute_stream_s"]
        layer = p["layer_forward_s"]
        total = layer["gemm"] + layer["elementwise"] + layer["tensor_comm"]
        exposed = max(step - compute, 0.0)
        factor = (measured_step - exposed) / compute if compute else 0
        factors.append(factor)
        share = (lambda x: f"{100 * x / total:>4.0f}%") if total else (
            lambda x: f"{'-':>5}")
        print(f"{name:>6} | {step:>7.2f} {100 * compute / step:>6.0f}% "
              f"{100 * exposed / step:>6.1f}% | {total * 1e3:>7.2f}ms "
              f"{share(layer['gemm'])} {share(layer['elementwise'])} "
              f"{share(layer['tensor_comm'])} | {measured_step:>10.2f} "
              f"{factor:>8.2f}x")
    print(f"every row's predicted step is at least "
          f"{100 * min(r[1]['compute_stream_s'] / r[1]['step_time_s'] for r in rows):.0f}% "
          f"compute stream; matching the measurements needs the compute "
          f"{min(factors):.2f}x to {max(factors):.2f}x slower (mean "
          f"{sum(factors) / len(factors):.2f}x), the communication and "
          f"bubble left as predicted")


# MosaicML llm-foundry, "H100 80GB BF16" (commit 061f2c7): model, sequence,
# GPUs, microbatch, gradient accumulation, global batch, activation
# checkpointing, measured model TFLOP/s per GPU.
FOUNDRY_MODELS = {  # d_model, n_heads, n_layers (scripts/train/yamls)
    "760m": (1536, 12, 24), "1b": (2048, 16, 24), "3b": (2560, 20, 32),
    "7b": (4096, 32, 32), "13b": (5120, 40, 40), "30b": (7168, 64, 48),
    "70b": (8192, 64, 80),
}
FOUNDRY_VOCAB = 50368
# Triton flash attention on the H100 (see the docstring), as overrides.
TRITON_ATTENTION = (",attention_forward=0.4103,attention_backward=0.3365,"
                    "attention_half_seq_causal=820,attention_half_seq=100,"
                    "attention_half_head_dim=0")
FOUNDRY_ROWS = [
    ("70b", 2048, 64, 8, 4, 2048, True, 421.3),
    ("70b", 2048, 32, 2, 16, 1024, True, 357.7),
    ("30b", 8192, 8, 1, 21, 168, True, 296.1),
    ("30b", 4096, 8, 1, 21, 168, True, 354.8),
    ("30b", 2048, 32, 14, 3, 1344, True, 434.6),
    ("30b", 2048, 16, 10, 3, 480, True, 426.2),
    ("30b", 2048, 8, 3, 21, 504, True, 377.1),
    ("30b", 1024, 8, 6, 21, 1008, True, 383.5),
    ("13b", 32768, 8, 1, 3, 24, True, 313.5),
    ("13b", 16384, 8, 3, 3, 72, True, 351.7),
    ("13b", 4096, 8, 10, 3, 240, True, 411.6),
    ("13b", 2048, 64, 2, 1, 128, False, 394.4),
    ("13b", 2048, 32, 2, 1, 64, False, 395.3),
    ("13b", 2048, 16, 2, 1, 32, False, 391.7),
    ("13b", 2048, 8, 2, 1, 16, False, 393.7),
    ("13b", 1024, 8, 40, 3, 960, True, 438.0),
    ("7b", 65536, 8, 1, 2, 16, True, 282.9),
    ("7b", 32768, 8, 2, 2, 32, True, 306.2),
    ("7b", 8192, 8, 8, 2, 128, True, 367.5),
    ("7b", 4096, 8, 16, 2, 256, True, 400.0),
    ("7b", 2048, 8, 6, 1, 48, False, 459.5),
    ("7b", 1024, 8, 64, 2, 1024, True, 423.8),
    ("3b", 65536, 8, 1, 2, 16, True, 265.3),
    ("3b", 32768, 8, 3, 6, 144, True, 285.4),
    ("3b", 16384, 8, 1, 6, 48, False, 359.5),
    ("3b", 8192, 8, 3, 6, 144, False, 398.8),
    ("3b", 4096, 8, 5, 6, 240, False, 418.6),
    ("3b", 2048, 64, 6, 3, 1152, False, 403.8),
    ("3b", 2048, 32, 6, 3, 576, False, 412.7),
    ("3b", 2048, 16, 10, 3, 480, False, 432.7),
    ("3b", 1024, 8, 20, 6, 960, False, 457.1),
    ("3b", 512, 8, 40, 6, 1920, False, 458.4),
    ("1b", 65536, 8, 1, 2, 16, True, 260.6),
    ("1b", 32768, 8, 1, 4, 32, False, 331.9),
    ("1b", 16384, 8, 2, 4, 64, False, 348.5),
    ("1b", 8192, 8, 3, 4, 96, False, 373.3),
    ("1b", 4096, 8, 7, 4, 224, False, 398.3),
    ("1b", 2048, 64, 20, 1, 1280, False, 404.2),
    ("1b", 2048, 32, 20, 1, 640, False, 410.9),
    ("1b", 2048, 16, 20, 1, 320, False, 419.1),
    ("1b", 2048, 8, 14, 1, 112, False, 413.8),
    ("1b", 1024, 8, 18, 4, 576, False, 415.1),
    ("1b", 512, 8, 56, 4, 1792, False, 427.5),
    ("760m", 32768, 8, 1, 2, 16, False, 315.1),
    ("760m", 16384, 8, 3, 2, 48, False, 332.2),
    ("760m", 8192, 8, 6, 2, 96, False, 344.8),
    ("760m", 4096, 8, 12, 2, 192, False, 354.6),
    ("760m", 2048, 32, 24, 1, 768, False, 371.7),
    ("760m", 2048, 16, 24, 1, 384, False, 374.9),
    ("760m", 2048, 8, 24, 2, 384, False, 345.3),
    ("760m", 1024, 8, 48, 2, 768, False, 393.4),
    ("760m", 512, 8, 96, 2, 1536, False, 399.9),
]


def foundry_flops(hidden, layers, seq, batch):
    """llm-foundry's count: 3 (2 N S + 4 l h S^2) per sequence, N with
    the embedding and the learned positions."""
    params = 12 * layers * hidden * hidden + (FOUNDRY_VOCAB + seq) * hidden
    return 3 * batch * (2 * params * seq + 4 * layers * hidden * seq * seq)


def foundry_table(cleave):
    print()
    print("MosaicML llm-foundry MPT, H100 80GB BF16, FSDP FULL_SHARD "
          "(model TFLOP/s per GPU by llm-foundry's count)")
    print(f"{'model':>5} {'seq':>6} {'GPUs':>4} {'mbs':>3} {'ga':>3} "
          f"{'ckpt':>4} {'measured':>8} | {'cuDNN':>7} {'err':>7} | "
          f"{'Triton':>7} {'err':>7}")
    errs = {"cuDNN": [], "Triton": []}
    refused = []
    for name, seq, gpus, mbs, ga, batch, ckpt, measured in FOUNDRY_ROWS:
        h, a, l = FOUNDRY_MODELS[name]
        # One FSDP unit per block: its parameters, in millions.
        bucket = max(1, round(12 * h * h / 1e6))
        knobs = (f"dp={gpus},tp=1,pp=1,cp=1,zero=3,microbatch={mbs},"
                 f"precision=bf16,attention=fused,grad-reduce=half,"
                 f"overlap-grad=on,zero-bucket={bucket},"
                 f"recompute={'full' if ckpt else 'none'}"
                 f"{',recompute-scope=layer' if ckpt else ''}")
        model = (f"zoo:gpt,layers={l},hidden={h},heads={a},seq={seq},"
                 f"vocab={FOUNDRY_VOCAB},dropout=0")
        cells = []
        for label, extra in (("cuDNN", ""), ("Triton", TRITON_ATTENTION)):
            out = subprocess.run(
                [cleave, "compile", model, "--cluster",
                 f"dgx-h100,nodes={gpus // 8}{extra}", "--global-batch",
                 str(batch), "--fix", knobs, "--json"],
                capture_output=True, text=True)
            if out.returncode != 0:
                cells.append(f"{'-':>7} {'':>7}")
                if label == "cuDNN":
                    refused.append(f"{name} seq {seq} mbs {mbs}")
                continue
            step = json.loads(out.stdout)["predicted"]["step_time_s"]
            tf = foundry_flops(h, l, seq, batch) / step / gpus / 1e12
            err = (tf - measured) / measured * 100
            errs[label].append(err)
            cells.append(f"{tf:>7.1f} {err:>+6.1f}%")
        print(f"{name:>5} {seq:>6} {gpus:>4} {mbs:>3} {ga:>3} "
              f"{'yes' if ckpt else 'no':>4} {measured:>8} | {cells[0]} | "
              f"{cells[1]}")
    for label, e in errs.items():
        if e:
            mean_abs = sum(abs(x) for x in e) / len(e)
            print(f"llm-foundry, {label} attention: mean |error| "
                  f"{mean_abs:.1f}%, mean error {sum(e) / len(e):+.1f}%, "
                  f"worst {max(e, key=abs):+.1f}% ({len(e)} of "
                  f"{len(FOUNDRY_ROWS)} rows)")
    if refused:
        print(f"{len(refused)} row(s) MosaicML ran do not fit in 80 GB by "
              f"cleave's memory model: {', '.join(refused)}")


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
    foundry_table(cleave)
