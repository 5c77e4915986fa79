#!/usr/bin/env bash
# Sets up, builds and runs cleave on a Debian bookworm machine (as root, or
# with sudo available).
#
#   scripts/setup.sh run    install what is missing, build, run the main job
#   scripts/setup.sh test   install what is missing, build, run every test
#   scripts/setup.sh build  install what is missing and build
#
# Idempotent: packages already present are not reinstalled, and an existing
# build directory is reused (Ninja and ccache make a rebuild quick).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${CLEAVE_BUILD_DIR:-$ROOT/build}
MODE=${1:-run}

# Every Debian package the project builds, tests or runs with; docs/
# dependencies.md says why each is there.
PACKAGES=(
  cmake ninja-build ccache g++ python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler libabsl-dev
  libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin libopenblas-dev libopenblas-openmp-dev libdnnl2
  libonnx-dev libonnx-testdata coinor-libcbc-dev
  libxxhash-dev nlohmann-json3-dev python3-venv
)
# The tests also load the HTML report in a real browser, headless.
if [ "$MODE" = test ]; then PACKAGES+=(chromium); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Hash paths relative to the checkout, so that a fresh clone elsewhere (as CI
# makes) still hits the compiler cache.
export CCACHE_BASEDIR="$ROOT"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
fi

# The main job on the embedded default: plan GPT-3 175B for 1024 A100s
# (the search), then compile a small zoo GPT for 4 local CPU ranks into a
# plan artifact, inspect it, and train it a few steps checked against one
# rank.
main_job() {
  local cleave="$BUILD_DIR/tools/cleave/cleave"
  local plan="$BUILD_DIR/main-job.cleave"
  "$cleave" compile zoo:gpt3-175b --cluster dgx-a100-80g,nodes=128 --global-batch 1536
  "$cleave" compile zoo:gpt,layers=4,hidden=128,heads=4,seq=64,vocab=512 \
    --cluster cpu-local,devices=4 --global-batch 16 --optimizer sgd --lr 0.05 -o "$plan"
  "$cleave" inspect "$plan"
  "$cleave" run "$plan" --steps 3 --check
}

case "$MODE" in
  build)
    ninja -C "$BUILD_DIR"
    ;;
  run)
    ninja -C "$BUILD_DIR" cleave
    main_job
    ;;
  test)
    ninja -C "$BUILD_DIR"
    # Test-only Python packages from PyPI (the safetensors export is read
    # back with Hugging Face's own reader); cleave itself never uses them.
    if [ ! -x "$BUILD_DIR/pyenv/bin/python" ]; then
      python3 -m venv --system-site-packages "$BUILD_DIR/pyenv"
    fi
    "$BUILD_DIR/pyenv/bin/python" -c "import safetensors, numpy" 2>/dev/null ||
      "$BUILD_DIR/pyenv/bin/python" -m pip install --quiet safetensors numpy
    main_job
    ninja -C "$BUILD_DIR" check-cleave
    ;;
  *)
    echo "usage: scripts/setup.sh [run|test|build]" >&2
    exit 2
    ;;
esac
