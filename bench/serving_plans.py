#!/usr/bin/env python3
"""Serving plans for Llama 3 70B and 405B on DGX H100 nodes
(`cleave compile --serve`), at a few workloads: the plan chosen, its
predicted TTFT and TPOT against the targets, throughput, the memory a
device uses and what bounds the batch. Planning only (the figures are the
cost model's; nothing is run).

Usage: bench/serving_plans.py [path/to/cleave]
"""
import json
import subprocess
import sys

from benchlib import DEFAULT_CLEAVE

# model, nodes, prompt, output, TTFT target s, TPOT target s
CASES = [
    ("llama3-70b", 1, 2048, 256, 2.0, 0.05),   # chat
    ("llama3-70b", 1, 512, 512, 0.5, 0.025),   # interactive, tight TPOT
    ("llama3-70b", 1, 8192, 256, 5.0, 0.1),    # long prompts (RAG)
    ("llama3-70b", 4, 2048, 256, 2.0, 0.05),   # the chat load on 4 nodes
    ("llama3-405b", 2, 2048, 256, 4.0, 0.1),
    ("llama3-405b", 4, 8192, 512, 10.0, 0.1),
]


def main():
    cleave = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_CLEAVE
    print(f"{'model':>11} {'GPUs':>4} {'prompt':>6} {'out':>4} | "
          f"{'plan':>24} | {'TTFT s':>7} {'target':>6} {'TPOT ms':>7} "
          f"{'target':>6} | {'req/s':>7} {'tok/s':>7} | {'GB/dev':>6} "
          f"{'max batch':>9}")
    for model, nodes, prompt, out, ttft, tpot in CASES:
        cmd = [cleave, "compile", f"zoo:{model}", "--cluster",
               f"dgx-h100,nodes={nodes}", "--serve", "--prompt-len",
               str(prompt), "--output-len", str(out), "--ttft", str(ttft),
               "--tpot", str(tpot), "--json"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{model:>11} {nodes * 8:>4} {prompt:>6} {out:>4} | "
                  f"{run.stderr.strip().splitlines()[-1]}")
            continue
        p = json.loads(run.stdout)["plan"]
        shape = (f"tp{p['tp']} pp{p['pp']} x{p['replicas']} b{p['batch']}"
                 + (f" r{p['step_rows']}" if p['step_rows'] > p['batch']
                    else ""))
        print(f"{model:>11} {nodes * 8:>4} {prompt:>6} {out:>4} | "
              f"{shape:>24} | {p['ttft_s']:>7.3f} {ttft:>6.2f} "
              f"{1e3 * p['tpot_s']:>7.2f} {1e3 * tpot:>6.0f} | "
              f"{p['requests_per_s']:>7.2f} {p['output_tokens_per_s']:>7.0f} | "
              f"{p['memory_bytes'] / 1e9:>6.1f} {p['max_batch']:>9}")


if __name__ == "__main__":
    main()
