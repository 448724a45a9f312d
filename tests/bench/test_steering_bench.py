"""bench.steering: IFEval rows to constraints, the selection rule, the judge, the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.steering import (
    DATA,
    _prepare_judge,
    ifeval_constraints,
    judge,
    main,
    select,
    token_budget,
)
from reasoning.constraints.model import Kind

ROWS = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def _row(key: int) -> dict[str, Any]:
    return next(r for r in ROWS if r["key"] == key)


def test_ifeval_kwargs_become_constraint_params() -> None:
    constraints = ifeval_constraints(_row(1000))
    assert constraints is not None
    by_kind = {c.kind: c for c in constraints}
    assert by_kind[Kind.WORD_COUNT].params == {"relation": "at least", "n": 300}
    assert by_kind[Kind.HIGHLIGHTED_SECTIONS].params == {"n": 3}
    assert Kind.NO_COMMA in by_kind


def test_constrained_response_gets_ifeval_options() -> None:
    row = next(
        r for r in ROWS if r["instruction_id_list"] == ["detectable_format:constrained_response"]
    )
    constraints = ifeval_constraints(row)
    assert constraints is not None
    assert "My answer is yes." in constraints[0].params["options"]


def test_budget_covers_minimum_lengths() -> None:
    constraints = ifeval_constraints(_row(1000))
    assert constraints is not None
    assert token_budget(constraints) >= 300 * 1.5


def test_selection_reports_why_rows_are_left_out(tokenizer: Any) -> None:
    rows = ROWS[:60]
    chosen, excluded = select(rows, tokenizer, cap=10_000)
    assert len(chosen) + sum(excluded.values()) == len(rows)
    assert excluded["not_all_controlled"] > 0  # e.g. capital-word counts have no controller
    for row in chosen:
        assert row["budget"] >= 160


def test_judge_runs_without_punkt_data_or_downloads() -> None:
    evaluate = _prepare_judge()
    commas = next(r for r in ROWS if r["instruction_id_list"] == ["punctuation:no_comma"])
    assert judge(evaluate, commas, "A plain answer without any of them.") == [True]
    assert judge(evaluate, commas, "Yes, it has one.") == [False]
    sentences = next(
        r
        for r in ROWS
        if r["instruction_id_list"] == ["length_constraints:number_sentences"]
        and r["kwargs"][0]["relation"] == "less than"
    )
    limit = sentences["kwargs"][0]["num_sentences"]
    assert judge(evaluate, sentences, "One sentence only.") == [limit > 1]
    assert judge(evaluate, sentences, " ".join(["A sentence."] * (limit + 1))) == [False]
    assert judge(evaluate, commas, "") == [False]


@pytest.mark.model
@pytest.mark.slow
def test_quick_run_prints_one_json_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tokenizer: Any
) -> None:
    progress = tmp_path / "progress.json"
    # A 24-token cap keeps the smoke run short (48 cost about 9 s more CPU here: the unsteered and
    # timed generate calls run to the cap); the full budgets are the benchmark's business.
    args = ["--quick", "--skip", "1", "--limit", "1", "--width", "1", "--max-new-tokens", "24"]
    args += ["--progress", str(progress)]
    assert main(args) == 0
    out, err = capsys.readouterr()
    report = json.loads(out.strip().splitlines()[-1])
    chosen, _ = select(ROWS, tokenizer, cap=200)
    sample = chosen[:: max(1, len(chosen) // 10)][:10]
    assert f"[1/1] key={sample[1]['key']} " in err  # --skip 1: the sample's second prompt
    assert report["pruning_enforced"] is True  # as POST /v1/reason decodes
    assert report["max_new_tokens"] == 24
    assert json.loads(progress.read_text()) == report
    for key in ("steered", "unsteered"):
        assert set(report[key]) >= {"instruction_strict", "prompt_strict", "n_prompts"}
        assert report[key]["n_prompts"] == 1
    for key in (
        "hard_violations",
        "tokens_per_s_ours",
        "tokens_per_s_generate",
        "throughput_ratio",
        "constraint_check_share",
        "counterfactual_flops_share",
        "judge_notes",
        "selection_rule",
    ):
        assert key in report
    assert 0.0 < report["forward_share"] < 1.0
    assert set(report["complete_share"]) == {"steered", "unsteered"}
    assert all(0.0 <= share <= 1.0 for share in report["complete_share"].values())
    assert sum(report["steered_ends"].values()) == 1 and set(report["steered_ends"]) <= {"model", "landed", "budget_cut"}
    # On the packed forward the search alone is also timed, on the library forward as generate.
    if report["forward"] == "packed":
        assert report["tokens_per_s_ours_library_forward"] > 0
        assert report["throughput_ratio_library_forward"] == pytest.approx(
            report["tokens_per_s_ours_library_forward"] / report["tokens_per_s_generate"], rel=2e-2
        )
    else:
        assert report["throughput_ratio_library_forward"] is None
