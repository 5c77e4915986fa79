#!/usr/bin/env python3
"""Generation on local CPU ranks: measured against predicted, and against
PyTorch eager with a static key/value cache.

A LLaMA (the zoo's, grouped-query heads; --model) serves a batch of
requests of --prompt-len prompt tokens and --output-len generated tokens
under several plans of `cleave compile --serve -o` (tp=1 on one rank, tp=2
and pp=2 on two), each run by `cleave generate` --rounds times. Printed per
plan: the cost model's TPOT and output tokens/s (`compile --serve --json`)
beside the median measured over the rounds (TPOT: each request's mean time
per token after its first; throughput: generated tokens over the run's
wall time from the first step), and whether the plans rank the same by
TPOT predicted and measured. TTFT is printed both ways but not ranked:
both read prompts in the rows a step leaves (chunked prefill), but the
model prices the steady state (a request arriving among running ones,
its prompt read on the rows they leave) while here every request is
queued at once, so the batch's prompts share the first steps' rows.

With --python (an interpreter with torch and transformers), the same model
shape in Hugging Face `LlamaForCausalLM` runs `generate` greedily on the
same batch with `cache_implementation="static"` on --threads threads,
rounds alternating with cleave's one-rank run on the same threads: decode
tokens/s of both and their ratio (above 1: cleave is faster). The prompts
all have --prompt-len tokens, so neither side pads.

    python3 bench/serving.py
    python3 bench/serving.py --python /tmp/torchenv/bin/python --rounds 5
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import DEFAULT_CLEAVE  # noqa: E402

PEER = r'''
import sys, time, torch
from transformers import LlamaConfig, LlamaForCausalLM
layers, hidden, heads, kv, ffn, vocab, batch, prompt, out, threads = map(int, sys.argv[1:11])
torch.set_num_threads(threads)
torch.manual_seed(0)
config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, num_key_value_heads=kv,
                     intermediate_size=ffn, max_position_embeddings=prompt + out,
                     tie_word_embeddings=False)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, vocab, (batch, prompt))
def run(n):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                              cache_implementation="static", pad_token_id=0)
run(2)  # warm-up: the static cache and the kernels
start = time.perf_counter(); run(1); first = time.perf_counter() - start
start = time.perf_counter(); run(out); whole = time.perf_counter() - start
# Decode only: the whole run less the prefill and first token.
print("DECODE", batch * (out - 1) / max(whole - first, 1e-9))
'''


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cleave", default=DEFAULT_CLEAVE)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1376)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2,
                   help="threads of the one-rank runs (cleave's and PyTorch's)")
    p.add_argument("--python", help="interpreter with torch and transformers")
    return p.parse_args()


def model_spec(a):
    return (f"zoo:llama,layers={a.layers},hidden={a.hidden},heads={a.heads},"
            f"kv_heads={a.kv_heads},ffn={a.ffn},vocab={a.vocab},"
            f"seq={a.prompt_len + a.output_len}")


def compile_plan(a, devices, fix, path):
    cmd = [a.cleave, "compile", model_spec(a), "--cluster",
           f"cpu-local,devices={devices}", "--serve", "--prompt-len",
           str(a.prompt_len), "--output-len", str(a.output_len), "--max-batch",
           str(a.batch), "--json", "-o", path]
    if fix:
        cmd += ["--fix", fix]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["plan"]


def generate(a, plan, prompts, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([a.cleave, "generate", plan, "--prompt-file", prompts],
                         capture_output=True, text=True, env=env, check=True)
    tpots = [float(m) for m in re.findall(r"TPOT ([0-9.]+) ms", out.stdout)]
    ttfts = [float(m) for m in re.findall(r"TTFT ([0-9.]+) ms", out.stdout)]
    m = re.search(r"generated (\d+) tokens for \d+ requests in ([0-9.]+) s",
                  out.stdout)
    return (statistics.mean(tpots) / 1e3, int(m.group(1)) / float(m.group(2)),
            statistics.mean(ttfts) / 1e3)


def main():
    a = parse_args()
    tmp = tempfile.mkdtemp(prefix="cleave-serving-")
    prompts = os.path.join(tmp, "prompts.txt")
    with open(prompts, "w") as f:
        for r in range(a.batch):
            f.write(" ".join(str((r * 7 + i * 13) % a.vocab)
                             for i in range(a.prompt_len)) + "\n")
    shapes = [("tp=1", 1, "tp=1,pp=1", a.threads),
              ("tp=2", 2, "tp=2,pp=1", max(1, a.threads // 2)),
              ("pp=2", 2, "tp=1,pp=2", max(1, a.threads // 2))]
    rows = []
    for name, devices, fix, threads in shapes:
        path = os.path.join(tmp, name.replace("=", "") + ".cleave")
        predicted = compile_plan(a, devices, fix, path)
        rows.append({"name": name, "path": path, "threads": threads,
                     "predicted_tpot": predicted["tpot_s"],
                     "predicted_tps": predicted["output_tokens_per_s"],
                     "predicted_ttft": predicted["ttft_s"],
                     "tpot": [], "tps": [], "ttft": []})
    peer = []
    for r in range(a.rounds):
        order = rows[r % len(rows):] + rows[:r % len(rows)]
        for row in order:
            tpot, tps, ttft = generate(a, row["path"], prompts, row["threads"])
            row["tpot"].append(tpot)
            row["tps"].append(tps)
            row["ttft"].append(ttft)
        if a.python:
            out = subprocess.run(
                [a.python, "-c", PEER, str(a.layers), str(a.hidden),
                 str(a.heads), str(a.kv_heads), str(a.ffn), str(a.vocab),
                 str(a.batch), str(a.prompt_len), str(a.output_len),
                 str(a.threads)], capture_output=True, text=True, check=True)
            peer.append(float(re.search(r"DECODE ([0-9.e+]+)", out.stdout).group(1)))

    print(f"model {model_spec(a)}: {a.batch} requests of {a.prompt_len} prompt "
          f"+ {a.output_len} generated tokens, fp32, {a.rounds} rounds "
          f"(medians), cpu-local")
    print(f"{'plan':6} {'threads/rank':>12} {'TPOT pred ms':>13} "
          f"{'TPOT meas ms':>13} {'meas/pred':>10} {'tok/s pred':>11} "
          f"{'tok/s meas':>11} {'TTFT pred ms':>13} {'TTFT meas ms':>13}")
    for row in rows:
        tpot = statistics.median(row["tpot"])
        tps = statistics.median(row["tps"])
        print(f"{row['name']:6} {row['threads']:>12} "
              f"{row['predicted_tpot'] * 1e3:>13.2f} {tpot * 1e3:>13.2f} "
              f"{tpot / row['predicted_tpot']:>10.2f} "
              f"{row['predicted_tps']:>11.0f} {tps:>11.0f} "
              f"{row['predicted_ttft'] * 1e3:>13.2f} "
              f"{statistics.median(row['ttft']) * 1e3:>13.2f}")
    by_pred = [r["name"] for r in sorted(rows, key=lambda r: r["predicted_tpot"])]
    by_meas = [r["name"] for r in sorted(rows, key=lambda r: statistics.median(r["tpot"]))]
    print(f"ranking by TPOT: predicted {' < '.join(by_pred)}; measured "
          f"{' < '.join(by_meas)}: {'agree' if by_pred == by_meas else 'DISAGREE'}")
    if peer:
        one = rows[0]
        # cleave's decode tokens/s: the batch over its mean TPOT.
        cleave_decode = [a.batch / t for t in one["tpot"]]
        ratios = [c / p for c, p in zip(cleave_decode, peer)]
        print(f"decode tokens/s on {a.threads} threads: cleave tp=1 "
              f"{statistics.median(cleave_decode):.0f}, PyTorch eager + static "
              f"cache {statistics.median(peer):.0f}; cleave/PyTorch per round "
              f"{' '.join(f'{x:.2f}' for x in ratios)} (median "
              f"{statistics.median(ratios):.2f}; above 1: cleave faster)")


if __name__ == "__main__":
    main()
