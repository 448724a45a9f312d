"""Forced runs fed in one pass decode exactly what the one-token loop decodes (bundled model).

A request whose steering writes text of its own (a copied request, a
table's layout, the rules' decision stated with its citations) is decoded
twice, with ``forced_runs`` on and off: the tokens, steps, verdicts and
violations are the same, and with it on the forced text took fewer forward
passes than positions.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference.decisions import statement_of
from inference.decoder.compile import compile_steering
from inference.decoder.decode import DecodeResult, decode
from inference.decoder.options import DecodeOptions
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.constraints.extraction import extract
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

COPY_REQUEST = (
    "First repeat the request word for word but replace 'cat' with 'dog', then answer it. "
    "Tell me why a cat makes a good pet."
)
PEP_CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"


def _both(model: LoadedModel, prompt: str, budget: int, **compile_args: Any) -> tuple[DecodeResult, DecodeResult]:
    constraints = list(extract(prompt).constraints)
    steering = compile_steering(
        constraints, model.tokenizer, prompt=prompt, device=model.device,
        vocab_size=int(model.model.config.vocab_size), max_new_tokens=budget, **compile_args,
    )
    plan = plan_prompt(model.tokenizer, prompt, constraints)
    one, fast = (
        decode(model.model, model.tokenizer, plan, steering=steering, constraints=constraints, request_text=prompt,
               options=DecodeOptions(width=2, max_new_tokens=budget, forced_runs=on))
        for on in (False, True)
    )
    return one, fast


def _same(one: DecodeResult, fast: DecodeResult) -> None:
    assert fast.answer == one.answer
    assert [b.text for b in fast.branches] == [b.text for b in one.branches]
    assert [(s.text, s.token_start, s.token_end, s.verdicts, s.violation) for s in fast.steps] == [
        (s.text, s.token_start, s.token_end, s.verdicts, s.violation) for s in one.steps
    ]
    assert fast.violations == one.violations and fast.end == one.end
    assert fast.decode_steps == one.decode_steps and one.decode_forwards == one.decode_steps
    assert [b.score for b in fast.branches] == pytest.approx([b.score for b in one.branches], abs=1e-3)
    assert fast.forced_tokens > 0
    assert fast.decode_forwards == fast.decode_steps - fast.forced_tokens - fast.draft_tokens


@pytest.mark.parametrize(
    ("prompt", "budget"),
    [
        (COPY_REQUEST, 24),
        # the header row at the start (one live beam), then the rows' separators with both beams live
        ("Suggest three houseplants for beginners in a table with the columns Plant and Care.", 40),
    ],
)
def test_text_the_steering_writes_decodes_the_same_in_one_pass(
    loaded_model: LoadedModel, prompt: str, budget: int
) -> None:
    _same(*_both(loaded_model, prompt, budget))


def test_a_stated_decision_decodes_the_same_in_one_pass(loaded_model: LoadedModel) -> None:
    index = ingest_ontology(dict(bundled_domains())["aml"].read_bytes(), "text/turtle").index
    decision = DecisionEngine(index.with_version("aml-test")).decide(PEP_CASE)
    assert decision.status == "decided"
    statement = statement_of(decision, index, "en", ())
    one, fast = _both(loaded_model, PEP_CASE, 40, statement=statement)
    assert one.answer.startswith(statement.text)
    _same(one, fast)
