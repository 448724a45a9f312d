#!/usr/bin/env bash
# GPU check for the steered decoder, for a lent CUDA machine. Installs nothing.
#
#   bash bench/gpu_check.sh            # uses .venv/bin/python (or $PYTHON)
#
# Runs, within 10 minutes in all: the decoder tests (model-marked, short
# generations), bench.throughput on CUDA with our tokens/s at widths 1, 4
# and 16, and bench.steering --quick. The last stdout line is one JSON object:
# {"throughput": {...}, "steering": {...}, "gpu_tokens_per_s": {"1": .., "4": .., "16": ..},
#  "tests_rc": N, "gpu": "<name>"}. Needs a CUDA build of torch in that Python.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
CACHE="${TENET_MODEL_CACHE:-var/models}"
OUT="$(mktemp -d)"
export TENET_TEST_MODEL_CACHE="$CACHE" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo '{"error": "no CUDA device visible to torch in '"$PY"' (a CPU-only torch build?)"}'
    exit 2
fi
GPU="$("$PY" -c 'import torch; print(torch.cuda.get_device_name(0))')"
"$PY" -c "from pathlib import Path; from inference.loader import prepare_cache; prepare_cache('bundled', Path('$CACHE'))" \
    >&2 || { echo '{"error": "could not prepare the model cache"}'; exit 3; }

timeout 150 "$PY" -m pytest -q -m model tests/inference/decoder tests/inference/test_kv_cache.py \
    tests/inference/test_prompting.py >&2
TESTS_RC=$?

timeout 170 "$PY" -m bench.throughput --device cuda --widths 1,4,16 --threads 4 --cache "$CACHE" \
    >"$OUT/throughput.log"
timeout 240 "$PY" -m bench.steering --quick >"$OUT/steering.log"

"$PY" - "$OUT" "$TESTS_RC" "$GPU" <<'PYEOF'
import json, sys
from pathlib import Path

out, rc, gpu = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def last_json(name):
    lines = [l for l in (out / name).read_text().splitlines() if l.strip().startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": f"{name}: no JSON (timed out or failed)"}

throughput = last_json("throughput.log")
print(json.dumps({
    "gpu": gpu,
    "tests_rc": rc,
    "throughput": throughput,
    "steering": last_json("steering.log"),
    "gpu_tokens_per_s": throughput.get("tokens_per_s_by_width", {}),
}))
PYEOF
