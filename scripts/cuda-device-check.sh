#!/usr/bin/env bash
# The CUDA backend on a machine with a GPU (the project's device machine:
# one H200), in under 8 minutes:
#   1. build cleave for sm_90 only (Release, all cores);
#   2. every CUDA kernel against the CPU kernel (cleave-cuda-tests);
#   3. one-rank plans of the small zoo models trained with --backend cuda
#      and --check against the CPU backend (fp32 both; the tolerance allows
#      for cuBLASLt's and the CPU's different summation orders);
#   4. a GEMM sweep through cuBLASLt (cleave profile --backend cuda);
#   5. training steps of a GPT that fills the GPU, with fp32, tf32 and bf16
#      GEMMs (fp32 activations and master weights), with the
#      achieved TFLOP/s, MFU and the share of time in GEMMs, other kernels
#      and gaps (from the worker's trace), and bf16 again with --no-fuse
#      (what the fused GEMM epilogues gain);
# and prints one table. Usage: scripts/cuda-device-check.sh [BUILD_DIR]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-cuda}"
out="${OUT:-$build/device-check}"
mkdir -p "$out"
log="$out/log.txt"
: > "$log"
say() { echo "$@" | tee -a "$log"; }
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

say "== build (sm_90) =="
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCLEAVE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >> "$log" 2>&1 || {
  say "configure failed"; tail -30 "$log"; exit 1; }
ninja -C "$build" cleave cleave-worker cleave-cuda-tests >> "$log" 2>&1 || {
  say "build failed"; tail -40 "$log"; exit 1; }
say "built in $(elapsed) s"
cleave="$build/tools/cleave/cleave"
nvidia-smi -L | tee -a "$log"

say "== kernels against the CPU =="
"$build/test/unit/cuda/cleave-cuda-tests" --gtest_brief=1 > "$out/kernels.txt" 2>&1
kernels_rc=$?
tail -5 "$out/kernels.txt" | tee -a "$log"
grep -E "^\[  FAILED  \]" "$out/kernels.txt" | head -20 | tee -a "$log"

say "== one-rank plans, cuda against cpu =="
declare -A models=(
  [gpt]="zoo:gpt,layers=2,hidden=256,heads=4,seq=128,vocab=1024"
  [llama]="zoo:llama,layers=2,hidden=256,heads=4,kv_heads=2,seq=128,vocab=1024"
  [moe]="zoo:moe,layers=2,hidden=256,heads=4,kv_heads=2,seq=128,vocab=1024,experts=4"
  [bert]="zoo:bert,layers=2,hidden=256,heads=4,seq=128,vocab=1024"
  [vit]="zoo:vit,layers=2,hidden=256,heads=4,image=64,patch=16,classes=10"
)
declare -A checks
for name in gpt llama moe bert vit; do
  plan="$out/$name.cleave"
  if ! "$cleave" compile "${models[$name]}" --cluster hgx-h200,devices=1 \
      --global-batch 8 --optimizer sgd -o "$plan" >> "$log" 2>&1; then
    checks[$name]="compile failed"; continue
  fi
  if "$cleave" run "$plan" --backend cuda --steps 3 --check --tolerance 1e-4 \
      > "$out/$name.check.txt" 2>&1; then
    checks[$name]="passed"
  else
    checks[$name]="FAILED: $(grep -m1 -E 'error' "$out/$name.check.txt")"
  fi
  say "$name: ${checks[$name]}"
done

say "== GEMM sweep (cuBLASLt) =="
"$cleave" profile --backend cuda -o "$out/h200.profile" > "$out/profile.txt" 2>&1
grep -E "gemm .*: (1024x1024x1024|4096x4096x4096|16384x16384x16384) " \
  "$out/profile.txt" | sed 's/^profile: //' | tee -a "$log"
grep -E "memory:" "$out/profile.txt" | sed 's/^profile: //' | tee -a "$log"

say "== a GPT that fills the GPU =="
# 1.3B parameters, 32 sequences of 1024 in 2 microbatches: a 65 GiB arena.
big="zoo:gpt,layers=24,hidden=2048,heads=16,seq=1024,vocab=50304"
declare -A steps
for precision in fp32 tf32 bf16; do
  plan="$out/big-$precision.cleave"
  "$cleave" compile "$big" --cluster hgx-h200,devices=1 --global-batch 32 \
    --fix "precision=$precision,microbatch=16" --optimizer adamw \
    -o "$plan" >> "$log" 2>&1 || { steps[$precision]="compile failed"; continue; }
  "$cleave" run "$plan" --backend cuda --steps 4 > "$out/big-$precision.txt" 2>&1
  steps[$precision]="$(grep -E '^step 4' "$out/big-$precision.txt")"
  say "$precision: ${steps[$precision]:-run failed: $(tail -2 "$out/big-$precision.txt")}"
done
# The same bf16 plan op by op: what fusing GEMMs with their epilogues and
# batch sums gains.
"$cleave" run "$out/big-bf16.cleave" --backend cuda --steps 4 --no-fuse \
  > "$out/big-bf16-unfused.txt" 2>&1
say "bf16 --no-fuse: $(grep -E '^step 4' "$out/big-bf16-unfused.txt")"
# One traced bf16 run (each instruction waited for: the shares are of
# instruction time; gaps are the step's time outside instructions).
"$cleave" run "$out/big-bf16.cleave" --backend cuda --steps 2 \
  --trace "$out/big-bf16.trace.json" > "$out/big-trace.txt" 2>&1

say "== table =="
python3 - "$out" <<'PY' | tee -a "$log"
import json, os, re, sys
out = sys.argv[1]
# H200 SXM dense peaks, NVIDIA datasheet (bf16 989.5 TFLOP/s).
peak = {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.5e12}
print(f"{'run':<28}{'step ms':>10}{'TFLOP/s':>10}{'MFU':>8}")
for p in ("fp32", "tf32", "bf16", "bf16-unfused"):
    try:
        text = open(os.path.join(out, f"big-{p}.txt")).read()
    except OSError:
        continue
    m = re.findall(r"step (\d+)\s+loss \S+\s+time ([\d.]+) ms.*TFLOP/s ([\d.e+]+)", text)
    if not m:
        print(f"gpt-1.3b {p:<19}{'failed':>10}")
        continue
    _, ms, tf = m[-1]
    print(f"gpt-1.3b {p:<19}{float(ms):>10.1f}{float(tf):>10.1f}"
          f"{100*float(tf)*1e12/peak[p.split('-')[0]]:>7.1f}%")
try:
    events = json.load(open(os.path.join(out, "big-bf16.trace.json")))
    events = events.get("traceEvents", events)
    gemm = other = segments = 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "compute":
            # Fused groups (matmul+bias, ...) are GEMMs with epilogues.
            if e.get("name", "").startswith(("graph.matmul", "matmul+")):
                gemm += e["dur"]
            else:
                other += e["dur"]
        elif e.get("cat") in ("FORWARD", "BACKWARD", "OPTIMIZER", "WEIGHT_GRAD"):
            segments += e["dur"]
    total = max(segments, gemm + other)
    if total > 0:
        print(f"bf16 traced time: GEMMs {100*gemm/total:.1f}%, other kernels "
              f"{100*other/total:.1f}%, gaps {100*(total-gemm-other)/total:.1f}%")
except (OSError, ValueError) as err:
    print(f"no trace: {err}")
PY
say "kernel tests: $([ $kernels_rc -eq 0 ] && echo passed || echo FAILED)"
say "total $(elapsed) s"
