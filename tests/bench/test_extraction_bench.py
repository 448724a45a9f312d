"""The benchmarks run end to end and print one JSON object as their last line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import extraction, verifier_agreement

ROWS = [
    {"key": 1, "prompt": "Write a poem. Do not use any commas.", "instruction_id_list": ["punctuation:no_comma"],
     "kwargs": [{}]},
    {"key": 2, "prompt": "Describe Paris in at most 150 words and wrap your entire response in double quotation marks.",
     "instruction_id_list": ["length_constraints:number_words", "startend:quotation"],
     "kwargs": [{"relation": "less than", "num_words": 151}, {}]},
    {"key": 3, "prompt": "Write a haiku in all lowercase letters.", "instruction_id_list": ["detectable_format:title"],
     "kwargs": [{}]},
]


def _run(main: Callable[[list[str]], int], args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """The benchmark's ``main`` in this process (a subprocess would import torch and load spaCy
    again for each run); its exit status 0 and its last stdout line, one JSON object."""
    assert main(args) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    return dict(json.loads(lines[-1]))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "sample.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in ROWS) + "\n", encoding="utf-8")
    return path


def test_extraction_bench_scores_a_labelled_sample(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(extraction.main, ["--data", str(data), "--limit", "3"], capsys)
    for key in ("precision", "recall", "param_accuracy", "per_kind", "p50_ms", "p95_ms", "n_prompts", "matching_rule"):
        assert key in report
    assert report["n_prompts"] == 3
    per_kind = report["per_kind"]
    assert isinstance(per_kind, dict)
    assert per_kind["punctuation:no_comma"]["recall"] == 1.0
    assert per_kind["length_constraints:number_words"]["param_accuracy"] == 1.0
    assert per_kind["detectable_format:title"]["recall"] == 0.0
    assert per_kind["change_case:english_lowercase"]["false_positives"] == 1
    assert report["recall"] == 0.75
    # --limit bounds the paraphrase set too (its first 3 prompts), scored by the same rule.
    paraphrase = report["paraphrase"]
    assert isinstance(paraphrase, dict)
    assert paraphrase["n"] == 3
    assert 0.0 <= float(paraphrase["recall"]) <= 1.0


def test_extraction_bench_quick_sample_on_ifeval(capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(extraction.main, ["--quick", "--limit", "6"], capsys)
    assert report["n_prompts"] == 6
    assert 0.0 <= float(report["precision"]) <= 1.0
    assert report["paraphrase"]["n"] == 6  # type: ignore[index]


def test_verifier_agreement_bench(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(verifier_agreement.main, ["--data", str(data)], capsys)
    assert report["pairs"] > 0
    assert 0.0 <= float(report["agreement"]) <= 1.0
    assert "punkt" in str(report["judge_fallbacks"])
    assert isinstance(report["disagreements"], list)
