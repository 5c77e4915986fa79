#!/usr/bin/env bash
# Packs what the GPU device check needs into one archive that travels to a
# machine with none of cleave's build dependencies (the project's device
# machine has CUDA, Python and PyTorch, but no MLIR, protobuf, Abseil,
# OpenMPI or OpenBLAS, and reaches no package registry):
#   - the runtime binaries, built here with the CUDA backend (sm_80 and
#     sm_90): cleave-worker, cleave-cuda-tests, cleave-profile-cuda; they
#     link no MLIR;
#   - every shared library they need that is not the C/C++ runtime or
#     CUDA's own (cuBLASLt and NCCL are on the device, in /usr/local/cuda
#     or PyTorch's nvidia-* packages);
#   - the plans, compiled here (the compiler stays behind): the small zoo
#     models for one GPU (LLaMA also with fused attention, and with bf16
#     storage), and the 1.3B GPT that fills an H200 with fp32, tf32 and
#     bf16 (bf16 storage; also with fused attention);
#   - scripts/cuda-device-check.sh and scripts/compare_params.py.
# The worker runs without MPI there (CLEAVE_NO_MPI=1: one rank, no mpirun
# or orted). Usage: scripts/cuda-device-bundle.sh [BUILD_DIR] [OUT_DIR]
# writes OUT_DIR/cleave-device.tar.xz (default OUT_DIR: .device, which this
# script adds to .git/info/exclude), and prints its size: it must stay
# under the device tool's 64 MiB with the working tree.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
outdir="${2:-$root/.device}"
cleave="$build/tools/cleave/cleave"
ninja -C "$build" cleave cleave-worker cleave-cuda-tests cleave-profile-cuda
bins=("$build/tools/cleave-worker/cleave-worker"
      "$build/test/unit/cuda/cleave-cuda-tests"
      "$build/tools/cleave-profile-cuda/cleave-profile-cuda")

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/plans" "$outdir"
for b in "${bins[@]}"; do
  cp "$b" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$(basename "$b")" || true
done
# Shared libraries beyond the C/C++ runtime and CUDA's own.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libcuda\.so|libcublas|libcublasLt|libnccl|libcudart)'
for b in "${bins[@]}"; do
  ldd "$b" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $skip ]]; then continue; fi
  cp -L "$path" "$stage/lib/$name"
done

# Plans (the model zoo's small models on one H200, and the big GPT).
compile() { "$cleave" compile "$@" > /dev/null; }
declare -A models=(
  [gpt]="zoo:gpt,layers=2,hidden=256,heads=4,seq=128,vocab=1024"
  [llama]="zoo:llama,layers=2,hidden=256,heads=4,kv_heads=2,seq=128,vocab=1024"
  [moe]="zoo:moe,layers=2,hidden=256,heads=4,kv_heads=2,seq=128,vocab=1024,experts=4"
  [bert]="zoo:bert,layers=2,hidden=256,heads=4,seq=128,vocab=1024"
  [vit]="zoo:vit,layers=2,hidden=256,heads=4,image=64,patch=16,classes=10"
)
for name in gpt llama moe bert vit; do
  compile "${models[$name]}" --cluster hgx-h200,devices=1 --global-batch 8 \
    --optimizer sgd -o "$stage/plans/$name.cleave"
done
# Fused attention (graph.attention, grouped-query heads), and bf16 storage
# (with fused attention).
compile "${models[llama]}" --cluster hgx-h200,devices=1 --global-batch 8 \
  --optimizer sgd --fix attention=fused -o "$stage/plans/llama-fused.cleave"
compile "${models[llama]}" --cluster hgx-h200,devices=1 --global-batch 8 \
  --optimizer sgd --fix attention=fused,precision=bf16 \
  -o "$stage/plans/llama-bf16.cleave"
# A generation step over paged key/value caches (cleave generate), fp32,
# one rank: the paged-attention, cache-write and per-token rope kernels.
compile "${models[llama]}" --cluster cpu-local,devices=1 --serve \
  --prompt-len 16 --output-len 16 --max-batch 4 \
  -o "$stage/plans/llama-serve.cleave"
printf '1 2 3 4 5\n7 8 9\n10 11 12 13 14 15 16 17\n3\n4 4 4 4\n' \
  > "$stage/plans/prompts.txt"
# A decode step of Llama 3 8B in bf16 on one GPU (random weights): 64
# sequences of 16 prompt and 256 generated tokens, the step's bytes read
# written beside it for the check's HBM bound: the weights once a step,
# and every row's keys and values so far (a row's context averages
# (16 + 256) / 2 positions over the run).
compile zoo:llama3-8b --cluster hgx-h200,devices=1 --serve --prompt-len 16 \
  --output-len 256 --max-batch 64 --fix tp=1,pp=1 \
  -o "$stage/plans/llama8b-decode.cleave"
python3 - "$stage/plans" <<'PY'
import random, sys
rows, prompt, output = 64, 16, 256
r = random.Random(0)
with open(sys.argv[1] + "/decode-prompts.txt", "w") as f:
    for _ in range(rows):
        f.write(" ".join(str(r.randrange(128000)) for _ in range(prompt)) + "\n")
# Llama 3 8B: 8.03 B parameters, 32 layers x 8 key/value heads x 128.
weights = 8.030e9 * 2
kv_per_token = 32 * 2 * 8 * 128 * 2
with open(sys.argv[1] + "/decode-bytes.txt", "w") as f:
    f.write("%d %d\n" % (weights, rows * (prompt + output) / 2 * kv_per_token))
PY
# fp16 storage with dynamic loss scaling (runtime.unscale on the GPU).
compile "${models[llama]}" --cluster hgx-h200,devices=1 --global-batch 8 \
  --optimizer sgd --fix attention=fused,precision=fp16 \
  -o "$stage/plans/llama-fp16.cleave"
# 1.3B parameters, 32 sequences of 1024 in 2 microbatches: a 65 GiB arena.
big="zoo:gpt,layers=24,hidden=2048,heads=16,seq=1024,vocab=50304"
for precision in fp32 tf32 bf16 fp16; do
  compile "$big" --cluster hgx-h200,devices=1 --global-batch 32 \
    --fix "precision=$precision,microbatch=16" --optimizer adamw \
    -o "$stage/plans/big-$precision.cleave"
done
# The same with fused attention: the step time and the arena without the
# score-sized stash.
compile "$big" --cluster hgx-h200,devices=1 --global-batch 32 \
  --fix "precision=bf16,microbatch=16,attention=fused" --optimizer adamw \
  -o "$stage/plans/big-bf16-fused.cleave"
# Each big plan's planned arena (GiB), printed by the check beside its
# step time.
for p in big-fp32 big-bf16 big-fp16 big-bf16-fused; do
  "$cleave" inspect "$stage/plans/$p.cleave" --json | python3 -c '
import json, sys
print(sys.argv[1], "%.2f GiB" % (max(m["arena_bytes"] for m in json.load(sys.stdin)["memory"]) / 2**30))' "$p"
done > "$stage/plans/arenas.txt"
cp "$root/scripts/cuda-device-check.sh" "$root/scripts/compare_params.py" \
  "$stage/"

archive="$outdir/cleave-device.tar.xz"
tar -C "$stage" -cJf "$archive" .
if [ "$outdir" = "$root/.device" ] && [ -d "$root/.git" ] &&
   ! grep -qx '/.device/' "$root/.git/info/exclude" 2>/dev/null; then
  echo '/.device/' >> "$root/.git/info/exclude"
fi
echo "bundle: $archive, $(du -h "$archive" | cut -f1) ($(du -sh "$stage" | cut -f1) unpacked)"
echo "on the device: run with carry=[\".device\"] the command"
echo "  mkdir -p /tmp/cleave && tar -C /tmp/cleave -xJf .device/cleave-device.tar.xz && bash /tmp/cleave/cuda-device-check.sh"
