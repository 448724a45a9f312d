"""Pruning enforced on structured answers never cuts the structure the hard constraints require.

The bundled model decodes IFEval-style structured constraint sets (JSON,
bullets with an end phrase, sections with a postscript) with pruning
enforced, once at the product's entropy bound and once at a bound low enough
that most steps are pruned and repaired. The answers are judged by IFEval's
own rules (``if-verifiable``, as ``bench.steering`` does), not by our verifiers.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.steering import _prepare_judge, ifeval_constraints, judge
from inference.decoder.compile import compile_steering
from inference.decoder.decode import decode
from inference.decoder.options import DecodeOptions
from inference.loader import LoadedModel
from inference.prompting import plan_prompt

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

END = "Is there anything else I can help with?"
CASES: list[dict[str, Any]] = [
    {
        "key": "json",
        "prompt": "List three rivers of Europe with their lengths. Wrap the whole answer in JSON.",
        "instruction_id_list": ["detectable_format:json_format"],
        "kwargs": [{}],
    },
    {
        "key": "bullets_end",
        "prompt": f"Give three tips for a picnic as exactly 3 bullet points. End with '{END}'",
        "instruction_id_list": ["detectable_format:number_bullet_lists", "startend:end_checker"],
        "kwargs": [{"num_bullets": 3}, {"end_phrase": END}],
    },
    {
        "key": "sections_ps",
        "prompt": "Describe a river in 2 sections marked Section X, then add a postscript starting with P.S.",
        "instruction_id_list": [
            "detectable_format:multiple_sections",
            "detectable_content:postscript",
        ],
        "kwargs": [{"section_spliter": "Section", "num_sections": 2}, {"postscript_marker": "P.S."}],
    },
]
BUDGET = 120


@pytest.fixture(scope="module")
def evaluate() -> Any:
    return _prepare_judge()


@pytest.mark.parametrize("entropy_bound", [0.85, 0.1], ids=["product-bound", "prune-most-steps"])
@pytest.mark.parametrize("row", CASES, ids=[c["key"] for c in CASES])
def test_enforced_pruning_keeps_every_controlled_constraint(
    loaded_model: LoadedModel, evaluate: Any, row: dict[str, Any], entropy_bound: float
) -> None:
    tokenizer = loaded_model.tokenizer
    constraints = ifeval_constraints(row)
    assert constraints is not None
    steering = compile_steering(
        constraints, tokenizer, prompt=row["prompt"], max_new_tokens=BUDGET
    )
    assert steering.controlled == {c.id for c in constraints}
    result = decode(
        loaded_model.model,
        tokenizer,
        plan_prompt(tokenizer, row["prompt"], constraints),
        steering=steering,
        options=DecodeOptions(
            width=2, max_new_tokens=BUDGET, prune=True, entropy_bound=entropy_bound
        ),
        constraints=constraints,
        request_text=row["prompt"],
    )
    assert result.pruning.steps_checked > 0
    if entropy_bound < 0.5:
        assert sum(result.pruning.pruned.values()) > 0  # the stress case really prunes
    verdicts = judge(evaluate, row, result.answer)
    assert all(verdicts), (verdicts, result.answer, result.pruning)
    assert not any(v.startswith("steering:") for v in result.violations), result.violations
