#!/usr/bin/env bash
# GPU check for the steered decoder, for a lent CUDA machine. Installs nothing.
#
#   bash bench/gpu_check.sh
#
# Python: $PYTHON, else .venv/bin/python, else python3 (a machine whose python3
# holds a CUDA torch, with the project's other packages on PYTHONPATH: see
# bench/gpu_bundle.sh). IFEval prompts: $TENET_IFEVAL_DATA, else
# bench/data/ifeval/input_data.jsonl (vendored). Model cache: $TENET_MODEL_CACHE_DIR,
# else var/models (the bundled GGUF is dequantised there once).
#
# Runs, within about 9.5 minutes in all: bench.throughput on CUDA with our
# tokens/s at widths 1, 4 and 16, the weight formats compared on CUDA
# (bench.throughput --weights all --quick: float32, bfloat16, int8, int4 and
# what auto picks; each low-precision format loaded straight into its CUDA
# kernels (inference.weights.direct: int4 from the GGUF's Q4_1 blocks in
# CUDA's int4 layout, the int8 head, bfloat16 KV slabs); steered tokens/s per
# width, KL from float32, top-1 agreement, peak memory), bench.steering
# --quick on CUDA in int4 (the steered accuracy of the low-precision forward on
# the GPU), and the decoder's and the weight formats' model tests on the GPU
# (TENET_TEST_DEVICE=cuda). Each stage has a time limit in seconds:
# GPU_CHECK_THROUGHPUT_S (100), GPU_CHECK_WEIGHTS_S (200),
# GPU_CHECK_STEERING_S (150), GPU_CHECK_TESTS_S (120); tests_rc 124 means the
# tests ran out of time. The last stdout line is one JSON object:
# {"gpu": "<name>", "tests_rc": N, "throughput": {...}, "weights": {...},
# "steering": {...}, "gpu_tokens_per_s": {"1": .., "4": .., "16": ..}}.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
PY="$PYTHON"
CACHE="${TENET_MODEL_CACHE_DIR:-var/models}"
DATA="${TENET_IFEVAL_DATA:-bench/data/ifeval/input_data.jsonl}"
LOGS="$(mktemp -d)"
export TENET_MODEL_CACHE_DIR="$CACHE" TENET_TEST_MODEL_CACHE="$CACHE" TENET_TEST_DEVICE=cuda
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo '{"error": "no CUDA device visible to torch in '"$PY"' (a CPU-only torch build?)"}'
    exit 2
fi
GPU="$("$PY" -c 'import torch; print(torch.cuda.get_device_name(0))')"
"$PY" -c "from pathlib import Path; from inference.loader import prepare_cache; prepare_cache('bundled', Path('$CACHE'))" \
    >&2 || { echo '{"error": "could not prepare the model cache"}'; exit 3; }

timeout "${GPU_CHECK_THROUGHPUT_S:-100}" "$PY" -m bench.throughput --device cuda --widths 1,4,16 \
    --limit 6 --threads 4 --cache "$CACHE" --data "$DATA" >"$LOGS/throughput.log"
tail -n 1 "$LOGS/throughput.log" >&2  # each stage's figures survive a run cut short
timeout "${GPU_CHECK_WEIGHTS_S:-200}" "$PY" -m bench.throughput --device cuda --weights all --quick \
    --threads 4 --cache "$CACHE" --data "$DATA" >"$LOGS/weights.log"
tail -n 1 "$LOGS/weights.log" >&2
timeout "${GPU_CHECK_STEERING_S:-150}" "$PY" -m bench.steering --quick --weights int4 --threads 4 \
    --cache "$CACHE" --data "$DATA" >"$LOGS/steering.log"
tail -n 1 "$LOGS/steering.log" >&2

# Only our pytest plugin: a machine image's own plugins (xdist, cov, benchmark...)
# may not match the pytest this project pins.
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 timeout "${GPU_CHECK_TESTS_S:-120}" "$PY" -m pytest -q \
    -p no:cacheprovider -p pytest_asyncio.plugin -m model --durations=10 \
    tests/inference/weights tests/inference/decoder tests/inference/test_prefix_cache.py \
    tests/inference/test_prompting.py >&2
TESTS_RC=$?

"$PY" - "$LOGS" "$TESTS_RC" "$GPU" <<'PYEOF'
import json, sys
from pathlib import Path

logs, rc, gpu = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def last_json(name):
    lines = [l for l in (logs / name).read_text().splitlines() if l.strip().startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": f"{name}: no JSON (timed out or failed)"}

throughput = last_json("throughput.log")
print(json.dumps({
    "gpu": gpu,
    "tests_rc": rc,
    "throughput": throughput,
    "weights": last_json("weights.log"),
    "steering": last_json("steering.log"),
    "gpu_tokens_per_s": throughput.get("tokens_per_s_by_width", {}),
}))
PYEOF
