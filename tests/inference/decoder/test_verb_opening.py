"""The answer opening with a verb (issue 19): the listed verbs are verbs to the verifier, a random-logits
model biased towards nouns and marks still opens with one (judged by the form's verifier), the compile
step controls it only where nothing else writes the answer's first word; one short run on the model."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.verb_opening import OPENING_VERBS, opens_with_listed_verb
from reasoning.constraints.form.classes import in_class
from reasoning.constraints.model import Constraint, Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 40
SEEDS = (3, 17, 101)
_CONTINUATIONS = ("the ocean at night.", "a new way to learn.", "your friends and family.", "it.",
                  "how people live.", "this: the sky is blue.")


def _verb_opening(unit: str = "answer", k: int = 1) -> Constraint:
    return gen(Kind.POSITION, unit=unit, k=k, op="starts_with", text="", word_class="verb")


@pytest.mark.parametrize("verb", sorted(OPENING_VERBS))
def test_every_listed_verb_is_a_verb_to_the_verifier(verb: str) -> None:
    for written in (verb.capitalize(), verb):
        for rest in _CONTINUATIONS:
            assert in_class(f"{written} {rest}", "starts_with", "verb"), f"{written} {rest}"


def test_the_opening_rule_on_texts() -> None:
    assert opens_with_listed_verb("", complete=False)
    assert opens_with_listed_verb(" Imag", complete=False)
    assert opens_with_listed_verb("Imagine the", complete=True)
    assert not opens_with_listed_verb("Imagine", complete=True)  # the word may still grow ("Imagined")
    assert not opens_with_listed_verb("The", complete=False)
    assert not opens_with_listed_verb("Imaginary friends", complete=True)
    assert not opens_with_listed_verb("* Imagine", complete=False)


def test_the_first_token_spells_the_start_of_a_listed_verb(tokenizer: Any) -> None:
    import torch

    steering = compile_steering([_verb_opening()], tokenizer, prompt="Describe the sea.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    size = steering.tables.size
    logits = torch.full((1, size), -20.0)
    nouns = [tokenizer.encode(w, add_special_tokens=False)[0] for w in (" The", "The", " Ocean", "\n")]
    verbs = [tokenizer.encode(w, add_special_tokens=False)[0] for w in (" Make", "Take")]
    for token in nouns:
        logits[0, token] = 10.0
    for token in verbs:
        logits[0, token] = 5.0
    adjusted = steering.apply([steering.initial_state()], torch.log_softmax(logits, dim=-1))
    assert not any(torch.isfinite(adjusted[0, t]) for t in nouns)
    assert all(torch.isfinite(adjusted[0, t]) for t in verbs)


@pytest.mark.parametrize(("unit", "k"), [("answer", 1), ("sentences", 1), ("lines", 1)])
def test_an_answer_opens_with_a_verb_against_a_noun_loving_model(tokenizer: Any, unit: str, k: int) -> None:
    constraints = [_verb_opening(unit, k)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe the sea.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^ ?(?:The|Dogs|Ocean|Sea|Waves|[.!?,])$", 8.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        first = state.text.split()[0].strip(".,;:!?\"'").lower()
        assert first in OPENING_VERBS, state.text
        assert judged(constraints, state.text) == [], state.text


def test_a_verb_opening_beside_another_opening_or_inserted_words_is_left_to_the_prompt(tokenizer: Any) -> None:
    for other in (Constraint(id="s", kind=Kind.START_PHRASE, params={"phrase": "Dear reader"}),
                  Constraint(id="k", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["tide"]}),
                  Constraint(id="u", kind=Kind.ALL_CAPITALS, params={})):
        steering = compile_steering([_verb_opening(), other], tokenizer, prompt="Describe the sea.",
                                    max_new_tokens=BUDGET)
        assert "f" in steering.uncontrolled, other.kind
    listed = [_verb_opening(), Constraint(id="b", kind=Kind.BULLET_COUNT, params={"n": 3})]
    assert "f" in compile_steering(listed, tokenizer, prompt="List tips.", max_new_tokens=BUDGET).uncontrolled


@pytest.mark.model
def test_bundled_model_opens_its_answer_with_a_verb(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    constraints = [_verb_opening()]
    tokenizer = loaded_model.tokenizer
    prompt = "Give one tip for sleeping well."
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=16)
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(loaded_model.model, tokenizer, plan, steering=steering,
                    options=DecodeOptions(width=2, max_new_tokens=16, prune=False), constraints=constraints)
    assert steering.controlled == {"f"}
    assert result.answer.split()[0].strip(".,;:!?").lower() in OPENING_VERBS, result.answer
    assert judged(constraints, result.answer) == [], result.answer
