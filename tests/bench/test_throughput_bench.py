"""bench.throughput (the GPU check's width figures) runs and reports consistent figures."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from bench.throughput import main

pytestmark = pytest.mark.slow


@pytest.mark.model
def test_a_tiny_run_prints_its_figures(capsys: Any) -> None:
    threads = str(torch.get_num_threads())  # main sets it for the process: keep the session's
    assert main(["--limit", "1", "--new-tokens", "4", "--widths", "1,2", "--threads", threads]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["n_prompts"] == 1 and report["new_tokens"] == 4
    assert report["tokens_per_s_ours"] > 0 and report["tokens_per_s_generate"] > 0
    # The ratio is of the unrounded speeds; the report rounds speeds to 0.01, the ratio to 0.001.
    ours, gen = report["tokens_per_s_ours"], report["tokens_per_s_generate"]
    rounding = (ours / gen) * (0.005 / ours + 0.005 / gen) + 0.0005
    assert abs(report["throughput_ratio"] - ours / gen) <= rounding * 1.01
    assert 0.0 < report["forward_share"] < 1.0
    assert 0.0 <= report["constraint_check_share"] < 1.0
    assert set(report["tokens_per_s_by_width"]) == {"1", "2"}
    # The bundled model in float32 on the CPU decodes through the packed forward.
    assert report["forward"] == ("packed" if report["device"] == "cpu" else "library")
    # The lean forward against the library's at width 1, same run (only with a lean forward).
    forwards = report["forwards_width1"]
    if report["forward"] == "packed":
        assert forwards["lean"] > 0 and forwards["library"] > 0
        assert abs(forwards["ratio"] - forwards["lean"] / forwards["library"]) < 0.02 * forwards["ratio"]
    else:
        assert forwards == {}


@pytest.mark.model
def test_the_library_forward_option_runs_ours_as_generate_does(capsys: Any) -> None:
    threads = str(torch.get_num_threads())
    args = ["--limit", "1", "--new-tokens", "3", "--threads", threads, "--library-forward"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["forward"] == "library" and report["tokens_per_s_ours"] > 0


@pytest.mark.model
def test_the_lean_forward_of_another_format_is_timed_against_the_library_forward(capsys: Any) -> None:
    threads = str(torch.get_num_threads())
    args = ["--limit", "1", "--new-tokens", "3", "--threads", threads, "--lean-weights", "int4"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    forwards = report["forwards_width1"]
    if report["forward"] != "packed":
        pytest.skip("no lean forward on this device")
    assert forwards["lean_int4"] > 0
    ratio = forwards["ratio_lean_int4_vs_library"]
    assert abs(ratio - forwards["lean_int4"] / forwards["library"]) < 0.02 * ratio
