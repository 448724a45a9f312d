"""bench.weight_formats: the paired worker, the figure issue 20's ratio is read from (bundled model)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from bench.datasets import IFEVAL_PROMPTS
from tests.conftest import MODEL_CACHE

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_the_paired_worker_reports_the_round_of_median_ratio_and_every_rounds() -> None:
    """One process times our int4 width-4 decode and float32 generate(num_beams=4) prompt by
    prompt, three rounds; the reported ratio is the median round's, and its speeds are that
    round's (so the ratio is theirs)."""
    cmd = [sys.executable, "-m", "bench.weight_formats", "--worker", "int4", "--paired"]
    cmd += ["--new", "3", "--threads", "1", "--prompts", "1"]
    cmd += ["--cache", str(MODEL_CACHE), "--data", str(IFEVAL_PROMPTS)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads([ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1])
    assert report["weights"] == "int4" and report["prompts"] == 1
    rounds = report["ratios_by_round"]
    assert len(rounds) == 3 and all(r > 0 for r in rounds)
    assert report["ratio_w4_vs_generate"] == statistics.median(rounds)
    speeds = report["tokens_per_s_w4"] / report["tokens_per_s_generate_beam4"]
    assert abs(speeds - report["ratio_w4_vs_generate"]) <= 0.01 * report["ratio_w4_vs_generate"]
