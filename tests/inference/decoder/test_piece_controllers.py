"""Controllers of rules on every piece and of shares (issue 19): every sentence / line /
paragraph opening with a text. A random-logits model biased towards ending pieces
everywhere and writing other words never leaves a piece that opens otherwise, judged by
the form's verifier and by an independent split; impossible combinations are refused;
one short run on the bundled model."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _sentences(text: str) -> list[str]:
    """Sentences as an independent restatement splits them: after . ! ? and whitespace."""
    return [p.strip() for p in re.split(r"(?<=[.!?])[\"'”’)\]]*\s+", text.strip()) if p.strip()]


def _first_word(piece: str) -> str:
    return re.split(r"[\s.,?!'\"]", piece.strip().lstrip("'\""), maxsplit=1)[0].lower()


EVERY_OPENING = [
    ("sentences, one word", {"unit": "sentences", "text": "Note"},
     lambda t: all(_first_word(p) == "note" for p in _sentences(t))),
    ("sentences, a phrase", {"unit": "sentences", "text": "In short"},
     lambda t: all(p.lower().startswith("in short") for p in _sentences(t))),
    ("lines", {"unit": "lines", "text": "And"},
     lambda t: all(_first_word(ln) == "and" for ln in t.splitlines() if ln.strip())),
    ("paragraphs", {"unit": "paragraphs", "text": "Indeed"},
     lambda t: all(_first_word(p) == "indeed" for p in re.split(r"\n\s*\n", t) if p.strip())),
]


@pytest.mark.parametrize(("name", "params", "ok"), EVERY_OPENING, ids=[row[0] for row in EVERY_OPENING])
def test_every_piece_opening_holds_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any],
                                                    ok: Any) -> None:
    constraints = [gen(Kind.POSITION, k=0, op="starts_with", **params),
                   gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "digits"}
    bias = bias_towards(tokenizer, r"^[.!?]$|^\n\n?$", 10.0)  # pieces end everywhere, with any next word
    bias.update(bias_towards(tokenizer, r"^ ?[A-Za-z]+$", 3.0))
    pieces = 0
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "opening" not in steering.unmet(state)
        pieces += len(_sentences(state.text)) if params["unit"] == "sentences" else state.text.count("\n")
    assert pieces >= 2 * len(SEEDS)  # the adversary did end pieces, and each new one was opened


def test_every_opening_that_another_text_cannot_begin_is_a_conflict(tokenizer: Any) -> None:
    every = gen(Kind.POSITION, "a", unit="sentences", k=0, op="starts_with", text="Note")
    cases = [
        [every, Constraint(id="b", kind=Kind.START_PHRASE, params={"phrase": "Hello there."})],
        [every, gen(Kind.POSITION, "b", unit="sentences", k=3, op="starts_with", text="However")],
        [every, gen(Kind.POSITION, "b", unit="sentences", k=0, op="starts_with", text="Also")],
    ]
    for constraints in cases:
        with pytest.raises(ConflictError) as refused:
            compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert set(refused.value.extra["constraint_ids"]) == {"a", "b"}
    agreeing = [every, Constraint(id="b", kind=Kind.START_PHRASE, params={"phrase": "Note that rivers flow."})]
    steering = compile_steering(agreeing, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "a" in steering.uncontrolled  # the start phrase is fixed text: left to the prompt


def _items(text: str) -> list[tuple[str, str]]:
    """(indent, text) of every list item line, bulleted or numbered, after its marker."""
    return re.findall(r"^([ \t]*)(?:[*+-]|\d+[.)])[ \t]+(.*)$", text, flags=re.MULTILINE)


LISTS = [
    ("every item opens with a mark", [gen(Kind.POSITION, unit="bullets", k=0, op="starts_with", text="✅")],
     lambda items: len(items) == 3 and all(t.startswith("✅") for _, t in items)),
    ("every item of a nested list opens with a word",
     [gen(Kind.POSITION, unit="bullets", k=0, op="starts_with", text="Note"),
      gen(Kind.STRUCTURE, "outline", layout="nested_list", n=2, sub_items=2)],
     lambda items: len(items) == 6 and all(_first_word(t) == "note" for _, t in items)),
    ("a two-level outline", [gen(Kind.STRUCTURE, layout="numbered_list", n=3),
                             gen(Kind.STRUCTURE, "outline", layout="nested_list", n=3, sub_items=2)], None),
    ("three items, two sub-items each", [gen(Kind.STRUCTURE, layout="nested_list", n=3, sub_items=2)],
     lambda items: [bool(indent) for indent, _ in items] == [False, True, True] * 3),
]


@pytest.mark.parametrize(("name", "constraints", "ok"), LISTS, ids=[row[0] for row in LISTS])
def test_list_items_hold_on_random_logits(tokenizer: Any, name: str, constraints: list[Constraint], ok: Any) -> None:
    if ok is None:  # two list structures: the layout writes one, the other is left to the prompt
        steering = compile_steering(constraints, tokenizer, prompt="Plan a trip.", max_new_tokens=BUDGET)
        assert steering.controlled == frozenset()
        return
    steering = compile_steering(constraints, tokenizer, prompt="Plan a trip.", max_new_tokens=BUDGET)
    assert steering.controlled == {c.id for c in constraints}
    bias = bias_towards(tokenizer, r"^\n|^ ?[A-Za-z]+$", 4.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(_items(state.text)), state.text
        assert judged(constraints, state.text) == [], state.text


def test_list_items_opening_with_two_texts_are_a_conflict(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, "a", unit="bullets", k=0, op="starts_with", text="✅"),
                   gen(Kind.POSITION, "b", unit="bullets", k=0, op="starts_with", text="Note")]
    with pytest.raises(ConflictError) as refused:
        compile_steering(constraints, tokenizer, prompt="Plan a trip.", max_new_tokens=BUDGET)
    assert set(refused.value.extra["constraint_ids"]) == {"a", "b"}


def _decode(loaded_model: Any, prompt: str, constraints: list[Constraint], budget: int) -> tuple[Any, str]:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    return steering, result.answer


@pytest.mark.model
def test_bundled_model_opens_every_sentence_with_the_word(loaded_model: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=0, op="starts_with", text="Note")]
    steering, answer = _decode(loaded_model, "Give two tips for a first marathon.", constraints, 32)
    assert steering.controlled == {"f"}
    assert all(_first_word(p) == "note" for p in _sentences(answer)), answer
    assert judged(constraints, answer) == [], answer


@pytest.mark.model
def test_bundled_model_writes_a_two_level_outline_with_marked_items(loaded_model: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, "outline", layout="nested_list", n=2, sub_items=1),
                   gen(Kind.POSITION, unit="bullets", k=0, op="starts_with", text="✅")]
    steering, answer = _decode(loaded_model, "Outline a plan for a picnic.", constraints, 40)
    assert steering.controlled == {"outline", "f"}
    items = _items(answer)
    assert [bool(indent) for indent, _ in items] == [False, True, False, True], answer
    assert all(t.startswith("✅") for _, t in items), answer
    assert judged(constraints, answer) == [], answer
