"""The answer-rule readings steer the bundled model end to end: a request read by
``reasoning.constraints.extraction`` (a template of slots, a CSV of named columns, a choice among
options) compiles to controlled steering, and the short answer the decoder writes passes the
verifiers of every constraint read."""

from __future__ import annotations

import pytest

from inference.decoder.compile import compile_steering
from inference.decoder.decode import decode
from inference.decoder.options import DecodeOptions
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.constraints.extraction import extract
from reasoning.constraints.verifiers import verify_all

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]


@pytest.mark.parametrize(
    ("prompt", "kind", "budget"),
    [
        ("Describe your favourite pet.\nUse the following format exactly:\nName: [name]\nAge: [age]", "regex_format", 32),
        ("List two fruits. Answer in CSV with the columns name and colour and 2 rows.", "regex_format", 32),
        ("Is the sky blue? Answer with exactly one of the following options: yes, no, or maybe.",
         "constrained_response", 8),
    ],
)
def test_an_answer_rule_read_from_the_request_is_controlled_and_met(
    loaded_model: LoadedModel, prompt: str, kind: str, budget: int
) -> None:
    constraints = list(extract(prompt).constraints)
    assert [c.kind.value for c in constraints] == [kind]
    steering = compile_steering(constraints, loaded_model.tokenizer, prompt=prompt, device=loaded_model.device,
                                vocab_size=int(loaded_model.model.config.vocab_size), max_new_tokens=budget)
    assert {c.id for c in constraints} <= set(steering.controlled)
    result = decode(loaded_model.model, loaded_model.tokenizer, plan_prompt(loaded_model.tokenizer, prompt, constraints),
                    steering=steering, options=DecodeOptions(width=2, max_new_tokens=budget),
                    constraints=constraints, request_text=prompt)
    verdicts = verify_all(constraints, result.answer)
    assert verdicts and all(v.satisfied for v in verdicts), (result.answer, verdicts)
