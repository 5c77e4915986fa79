#!/usr/bin/env bash
# The CUDA backend on a machine with a GPU (the project's device machine:
# one H200), in under 8 minutes, run from the bundle that
# scripts/cuda-device-bundle.sh packs here (the device has CUDA and
# PyTorch but none of cleave's build dependencies, so nothing is built
# there: the binaries were built here for sm_80 and sm_90, the plans
# compiled here):
#   1. every CUDA kernel and fused GEMM group against the CPU kernels
#      (cleave-cuda-tests);
#   2. one-rank plans of the small zoo models (GPT, LLaMA with and without
#      fused attention and with bf16 and fp16 storage, MoE, BERT, ViT)
#      trained 3 steps on the GPU and on the CPU backend, losses and final
#      parameters compared (compare_params.py, 1e-4: cuBLASLt and OpenBLAS
#      sum in other orders);
#   3. a GEMM sweep through cuBLASLt and the memory bandwidth
#      (cleave-profile-cuda, what `cleave profile --backend cuda` measures);
#   4. checkpoints through the CUDA backend: the GPT plan saved after 3
#      steps on the GPU and resumed on the CPU for 2 equals 5 CPU steps
#      (1e-4), and the 1.3B GPT's save (D2H copy, write) with the step
#      stall, async against sync, and its load back onto the GPU;
#   5. training steps of a 1.3B GPT that fills the GPU with fp32, tf32,
#      bf16 and fp16 (16-bit storage: activations in 2 bytes, fp32 master
#      weights, fp16 with dynamic loss scaling; the planned arenas printed
#      beside), and bf16 again
#      with --no-fuse (what the fused GEMM epilogues gain) and with fused
#      attention (graph.attention's kernels, and its smaller arena), with the
#      achieved TFLOP/s, MFU and the share of time in GEMMs, other kernels
#      and gaps (from the worker's trace);
#   6. a bf16 decode step of Llama 3 8B (64 sequences) against the time
#      its bytes take at the measured HBM bandwidth;
# and prints one table. The worker runs without MPI (CLEAVE_NO_MPI=1).
# Usage: bash cuda-device-check.sh   (from the unpacked bundle; OUT=dir)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here/out}"
mkdir -p "$out"
log="$out/log.txt"
: > "$log"
say() { echo "$@" | tee -a "$log"; }
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

# cuBLASLt and NCCL from the machine: PyTorch's nvidia-* packages or the
# CUDA toolkit.
pylib() {
  python3 -c "import os, $1 as m; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null
}
export LD_LIBRARY_PATH="$here/lib:$(pylib nvidia.cublas):$(pylib nvidia.nccl):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export CLEAVE_NO_MPI=1 OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-8}"
worker="$here/bin/cleave-worker"
plans="$here/plans"
nvidia-smi -L 2>&1 | tee -a "$log"

say "== kernels against the CPU =="
"$here/bin/cleave-cuda-tests" --gtest_brief=1 > "$out/kernels.txt" 2>&1
kernels_rc=$?
tail -5 "$out/kernels.txt" | tee -a "$log"
grep -E "^\[  FAILED  \]" "$out/kernels.txt" | head -20 | tee -a "$log"

say "== one-rank plans, cuda against cpu =="
declare -A checks
for name in gpt llama llama-fused llama-bf16 llama-fp16 moe bert vit; do
  # 16-bit storage: both backends round fp32 results that differ in their
  # last bits, a bf16 (fp16) step apart at most (the tolerances of
  # check-bf16.test and check-fp16.test).
  tolerance=1e-4; [ $name = llama-bf16 ] && tolerance=5e-2
  [ $name = llama-fp16 ] && tolerance=2e-2
  for backend in cuda cpu; do
    rm -rf "$out/$name.$backend"
    "$worker" "$plans/$name.cleave" --backend $backend --steps 3 \
      --dump-params "$out/$name.$backend" > "$out/$name.$backend.txt" 2>&1
  done
  losses="$(paste -d' ' <(grep -oE 'loss [0-9.]+' "$out/$name.cuda.txt") \
                        <(grep -oE 'loss [0-9.]+' "$out/$name.cpu.txt") | tr '\n' ';')"
  if python3 "$here/compare_params.py" "$out/$name.cuda" "$out/$name.cpu" \
      --tolerance $tolerance > "$out/$name.compare.txt" 2>&1; then
    checks[$name]="passed: $(cat "$out/$name.compare.txt"); $losses"
  else
    checks[$name]="FAILED: $(head -2 "$out/$name.compare.txt" "$out/$name.cuda.txt" | tr '\n' ' ')"
  fi
  say "$name: ${checks[$name]}"
done

say "== generation over a paged cache, cuda against cpu =="
for backend in cuda cpu; do
  "$worker" "$plans/llama-serve.cleave" --backend $backend \
    --generate "$plans/prompts.txt" > "$out/generate.$backend.txt" 2>&1
  grep -E "^request" "$out/generate.$backend.txt" | sed 's/  TTFT.*//' \
    > "$out/generate.$backend.tokens"
done
if [ -s "$out/generate.cuda.tokens" ] &&
    diff -q "$out/generate.cuda.tokens" "$out/generate.cpu.tokens" > /dev/null; then
  checks[generate]="passed: the same greedy tokens; $(tail -1 "$out/generate.cuda.txt")"
else
  checks[generate]="FAILED: $(diff "$out/generate.cuda.tokens" "$out/generate.cpu.tokens" | head -3 | tr '\n' ' ') $(tail -2 "$out/generate.cuda.txt" | tr '\n' ' ')"
fi
say "generate: ${checks[generate]}"

say "== checkpoints: saved on the GPU, resumed on the CPU =="
rm -rf "$out/ck" "$out/ck.resumed" "$out/ck.whole"
"$worker" "$plans/gpt.cleave" --backend cuda --steps 3 --save "$out/ck" \
  > "$out/ck.save.txt" 2>&1
"$worker" "$plans/gpt.cleave" --backend cpu --steps 2 --resume "$out/ck" \
  --dump-params "$out/ck.resumed" > "$out/ck.resume.txt" 2>&1
"$worker" "$plans/gpt.cleave" --backend cpu --steps 5 \
  --dump-params "$out/ck.whole" > "$out/ck.whole.txt" 2>&1
if python3 "$here/compare_params.py" "$out/ck.resumed" "$out/ck.whole" \
    --tolerance 1e-4 > "$out/ck.compare.txt" 2>&1; then
  checks[checkpoint]="passed: $(cat "$out/ck.compare.txt")"
else
  checks[checkpoint]="FAILED: $(head -3 "$out/ck.compare.txt" "$out/ck.save.txt" "$out/ck.resume.txt" | tr '\n' ' ')"
fi
say "checkpoint cuda->cpu: ${checks[checkpoint]}"
# The 1.3B GPT (AdamW: 15.6 GB of parameters and moments a save), one save
# each way, then loaded back onto the GPU.
for mode in async sync; do
  rm -rf "$out/bigck"
  flag=""; [ $mode = sync ] && flag="--save-sync"
  "$worker" "$plans/big-bf16.cleave" --backend cuda --steps 3 \
    --save "$out/bigck" --save-every 2 --keep 1 $flag \
    > "$out/bigck-$mode.txt" 2>&1
  grep -E "^checkpoint: step" "$out/bigck-$mode.txt" | tee -a "$log"
done
"$worker" "$plans/big-bf16.cleave" --backend cuda --steps 1 \
  --resume "$out/bigck" > "$out/bigck-load.txt" 2>&1
grep -E "^checkpoint: resumed" "$out/bigck-load.txt" | tee -a "$log"
rm -rf "$out/bigck"

say "== GEMM sweep (cuBLASLt) =="
"$here/bin/cleave-profile-cuda" -o "$out/h200.profile" > "$out/profile.txt" 2>&1
grep -E "gemm .*: (1024x1024x1024|4096x4096x4096|16384x16384x16384) " \
  "$out/profile.txt" | sed 's/^profile: //' | tee -a "$log"
grep -E "memory:" "$out/profile.txt" | sed 's/^profile: //' | tee -a "$log"

say "== a decode step against the HBM bound =="
# Llama 3 8B, bf16, 64 sequences on one GPU: a step reads the weights once
# and each row's cache so far; the bound is those bytes at the copy
# bandwidth cleave-profile-cuda measured above.
"$worker" "$plans/llama8b-decode.cleave" --backend cuda \
  --generate "$plans/decode-prompts.txt" > "$out/decode.txt" 2>&1
python3 - "$out" "$plans/decode-bytes.txt" <<'PY' | tee -a "$log"
import re, sys
out, sizes = sys.argv[1], sys.argv[2]
weights, kv = map(float, open(sizes).read().split())
text = open(out + "/decode.txt").read()
run = re.search(r"generated (\d+) tokens for (\d+) requests in ([\d.]+) s "
                r"\(\d+ tokens/s, (\d+) steps of (\d+) rows", text)
bw = re.search(r"copy bandwidth ([\d.]+) GB/s", open(out + "/profile.txt").read())
if not run or not bw:
    print("decode: failed: " + " ".join(text.splitlines()[-2:]))
else:
    step = float(run.group(3)) / int(run.group(4))
    bound = (weights + kv) / (float(bw.group(1)) * 1e9)
    print(f"decode: llama3-8b bf16, {run.group(5)} rows a step: {step*1e3:.2f} ms "
          f"a step, HBM bound {bound*1e3:.2f} ms ({(weights+kv)/1e9:.1f} GB at "
          f"{bw.group(1)} GB/s), {bound/step*100:.0f}% of the bound; "
          f"{run.group(1)} tokens in {run.group(3)} s")
PY

say "== a GPT that fills the GPU =="
for precision in fp32 tf32 bf16 fp16; do
  "$worker" "$plans/big-$precision.cleave" --backend cuda --steps 4 \
    > "$out/big-$precision.txt" 2>&1
  say "$precision: $(grep -E '^step 4' "$out/big-$precision.txt" || tail -2 "$out/big-$precision.txt")"
done
"$worker" "$plans/big-bf16.cleave" --backend cuda --steps 4 --no-fuse \
  > "$out/big-bf16-unfused.txt" 2>&1
say "bf16 --no-fuse: $(grep -E '^step 4' "$out/big-bf16-unfused.txt")"
# Fused attention (graph.attention's CUDA kernels) against the unfused ops:
# step time, and the arena each plan allocates.
"$worker" "$plans/big-bf16-fused.cleave" --backend cuda --steps 4 \
  > "$out/big-bf16-fused.txt" 2>&1
say "bf16 attention=fused: $(grep -E '^step 4' "$out/big-bf16-fused.txt" || tail -2 "$out/big-bf16-fused.txt")"
say "planned arenas: $(tr '\n' ';' < "$plans/arenas.txt")"
# One traced bf16 run (each instruction waited for: the shares are of
# instruction time; gaps are the step's time outside instructions).
"$worker" "$plans/big-bf16.cleave" --backend cuda --steps 2 \
  --trace "$out/big-bf16.trace.json" > "$out/big-trace.txt" 2>&1

say "== table =="
python3 - "$out" <<'PY' | tee -a "$log"
import json, os, re, sys
out = sys.argv[1]
# H200 SXM dense peaks, NVIDIA datasheet (bf16 989.5 TFLOP/s).
peak = {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.5e12}
print(f"{'run':<28}{'step ms':>10}{'TFLOP/s':>10}{'MFU':>8}")
for p in ("fp32", "tf32", "bf16", "bf16-unfused", "bf16-fused"):
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
for name in gpt llama llama-fused llama-bf16 llama-fp16 moe bert vit generate checkpoint; do say "$name: ${checks[$name]%%;*}"; done
say "total $(elapsed) s"
