"""bench.gguf_int4 on the bundled GGUF (every projection Q4_1): nothing is finer than four bits,
so the int4 format as served and all four-bit are the same kernels and the same figures; the
memory after each load is reported, int4 holding a fraction of float32's weight bytes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import MODEL_CACHE

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_the_bundled_gguf_has_no_finer_projection_and_one_int4_gap() -> None:
    cmd = [sys.executable, "-m", "bench.gguf_int4", "--prompts", "1", "--cache", str(MODEL_CACHE)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["finer_projections"] == 0 and report["q4_projections"] == 30 * 7
    served, four_bit = report["int4_served"], report["int4_all_four_bit"]
    assert served == four_bit
    assert 0.0 <= served["kl_vs_float32"] < 0.05 and served["top1_agreement"] >= 0.5
    memory = report["memory_after_load"]
    assert memory["float32"]["weights"] == "float32" and memory["int4"]["weights"] == "int4"
    for figures in memory.values():
        assert 0 < figures["weights_mb"] < figures["rss_mb"] <= figures["peak_rss_mb"]
    # four-bit projections and an int8 head: under a third of the float32 weights
    assert memory["int4"]["weights_mb"] < memory["float32"]["weights_mb"] / 3
