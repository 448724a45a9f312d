"""bench/gpu_check.sh on a machine without CUDA: one JSON error line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.sh"


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a CUDA machine the script runs the whole check")
def test_without_cuda_it_says_so_and_runs_nothing() -> None:
    done = subprocess.run(
        ["bash", str(SCRIPT)],
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "no CUDA device" in report["error"]
