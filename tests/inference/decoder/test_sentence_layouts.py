"""Sentence maxima with multi-part layouts (title, two responses, paragraphs, P.S.).

A small maximum used to leave later parts no room (every later part kept one
sentence in hand, "P.S." counted too): the first response or the title came
out empty, silently. Here: the least sentences a layout needs
(``sentence_floor``), the conflict below it, the decode at it (random-logits
model over the real tokenizer), judged by our verifiers and by IFEval's own
checkers, and ``unmet`` naming an empty part.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from bench.steering import _prepare_judge, ifeval_constraints, judge
from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.sentences import sentence_floor
from inference.decoder.token_controllers.template import Body, Layout, Literal, build_layout
from reasoning.constraints.form import Count, Filter, Unit, check
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.constraints.textstats import count_sentences
from reasoning.constraints.verifiers import verify_all
from reasoning.errors import ConflictError

END = "Is there anything else I can help with?"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def evaluate() -> Any:
    return _prepare_judge()


# (layout, least sentences, an answer with that many for both judges)
FLOORS = [
    (Layout(), 1, "Rivers flow to the sea."),
    (Layout(title=True), 1, "<<Rivers>>\n\nRivers flow to the sea."),
    (Layout(postscript="P.S."), 2, "Rivers flow to the sea\n\nP.S. They are old."),
    (Layout(postscript="P.P.S"), 2, "Rivers flow to the sea.\n\nP.P.S They are old."),
    (Layout(body=Body(kind="two"), postscript="P.S."), 3,
     "Rivers are long.\n\n******\n\nRivers flow to the sea\n\nP.S. They are old."),
    (Layout(title=True, body=Body(kind="paragraphs", n=3)), 3,
     "<<Rivers>>\n\nRivers are long.\n\n***\n\nThey flow.\n\n***\n\nThey are old."),
    (Layout(body=Body(kind="bullets", n=3)), 1, "* rivers\n* lakes\n* seas."),
    (Layout(end_phrase=END), 1, f"Rivers flow {END}"),
    (Layout(prefix="Describe a river."), 2, "Describe a river.\n\nRivers flow to the sea."),
    (Layout(highlights=2), 2, "*Length*\nRivers are long.\n\n*Age*\nThey are old."),
]


@pytest.mark.parametrize(("layout", "floor", "answer"), FLOORS)
def test_floor_is_what_both_judges_count_on_a_tightest_answer(layout: Layout, floor: int, answer: str) -> None:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    assert sentence_floor(build_layout(layout)) == floor
    assert count_sentences(answer) == floor
    assert len(PunktSentenceTokenizer().tokenize(answer)) == floor


def c(i: int, kind: Kind, **params: Any) -> Constraint:
    return Constraint(id=f"c{i}", kind=kind, params=params)


def at_most(n: int) -> Constraint:
    return c(0, Kind.SENTENCE_COUNT, relation="at most", n=n)


@pytest.mark.parametrize(
    ("constraints", "named"),
    [
        ([at_most(2), c(1, Kind.TWO_RESPONSES), c(2, Kind.POSTSCRIPT, marker="P.S.")], {"c0", "c1", "c2"}),
        ([at_most(1), c(1, Kind.TITLE), c(2, Kind.PARAGRAPH_COUNT, n=3)], {"c0", "c2"}),
        ([at_most(1), c(1, Kind.POSTSCRIPT, marker="P.S.")], {"c0", "c1"}),
        ([at_most(1), c(1, Kind.REPEAT_PROMPT, prompt_to_repeat="Describe a river.")], {"c0", "c1"}),
        ([at_most(2), c(1, Kind.NTH_PARAGRAPH_FIRST_WORD, n=3, nth=2, first_word="then")], {"c0", "c1"}),
    ],
)
def test_a_maximum_below_the_layout_floor_is_a_conflict(
    tokenizer: Any, constraints: list[Constraint], named: set[str]
) -> None:
    with pytest.raises(ConflictError) as refused:
        compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=96)
    assert set(refused.value.extra["constraint_ids"]) == named


def row(instructions: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "prompt": "Describe a river.",
        "instruction_id_list": [i for i, _ in instructions],
        "kwargs": [k for _, k in instructions],
    }


def fewer_than(n: int) -> tuple[str, dict[str, Any]]:
    return ("length_constraints:number_sentences", {"relation": "less than", "num_sentences": n})


# Maxima at (or one above) the floor of their layout: they used to empty a part.
TIGHT = [
    [fewer_than(4), ("combination:two_responses", {}), ("detectable_content:postscript", {"postscript_marker": "P.S."})],
    [fewer_than(3), ("detectable_content:postscript", {"postscript_marker": "P.S."})],
    [fewer_than(4), ("detectable_format:title", {}), ("length_constraints:number_paragraphs", {"num_paragraphs": 3})],
    [fewer_than(3), ("detectable_format:title", {}), ("detectable_format:number_highlighted_sections", {"num_highlights": 2})],
    [fewer_than(3), ("detectable_format:number_bullet_lists", {"num_bullets": 3})],
    [fewer_than(2), ("startend:end_checker", {"end_phrase": END})],
    [fewer_than(2), ("detectable_format:title", {}), ("startend:quotation", {})],
]


def empty_parts(text: str, constraints: list[Constraint]) -> list[str]:
    """Parts without a word (the checkers below pass some of them)."""
    kinds = {k.kind for k in constraints}
    pieces: list[str] = []
    if Kind.TWO_RESPONSES in kinds:
        pieces += text.split("******")
    if Kind.PARAGRAPH_COUNT in kinds:
        pieces += re.split(r"\s?\*\*\*\s?", text)
    if Kind.POSTSCRIPT in kinds:
        pieces += [text.rsplit("P.S.", 1)[-1], text.rsplit("P.S.", 1)[0]]
    if Kind.BULLET_COUNT in kinds:
        pieces += re.findall(r"^\* (.*)$", text, flags=re.MULTILINE)
    if Kind.TITLE in kinds:
        pieces += re.findall(r"<<(.*?)>>", text)
    if Kind.HIGHLIGHTED_SECTIONS in kinds:
        pieces += re.findall(r"\*([^*\n]*)\*", text)
    return [p for p in pieces if not re.search(r"\w", p)]


@pytest.mark.parametrize("instructions", TIGHT)
def test_tight_maxima_keep_every_part_and_pass_both_judges(
    tokenizer: Any, evaluate: Any, instructions: list[tuple[str, dict[str, Any]]]
) -> None:
    from test_controllers import drive

    ifeval = row(instructions)
    constraints = ifeval_constraints(ifeval)
    assert constraints is not None
    steering = compile_steering(constraints, tokenizer, prompt=ifeval["prompt"], max_new_tokens=80)
    assert steering.controlled == {k.id for k in constraints}
    for seed in range(2):
        state = drive(steering, 80, seed)
        text = state.text
        assert steering.unmet(state) == (), text
        assert empty_parts(text, constraints) == [], text
        assert [v.detail for v in verify_all(constraints, text) if not v.satisfied] == [], text
        assert all(judge(evaluate, ifeval, text)), text


def test_an_empty_part_is_reported(tokenizer: Any) -> None:
    """A search that leaves the first response at once (say, forced by its
    budget) gets "empty_part" from ``unmet``, not a silent pass."""
    constraints = [c(1, Kind.TWO_RESPONSES)]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=40)
    separator = tokenizer.encode("\n\n******\n\n", add_special_tokens=False)
    state = steering.initial_state()
    for token in separator + tokenizer.encode(" Rivers flow.", add_special_tokens=False):
        state = steering.advance(state, token)
    assert state.text.startswith("\n\n******\n\n"), state.text
    assert "empty_part" in steering.unmet(state)


def test_a_part_may_stop_only_once_it_holds_a_word(tokenizer: Any) -> None:
    """However strongly the model wants to stop, every part gets a word first."""
    from test_controllers import drive_with_bias

    constraints = [c(1, Kind.TWO_RESPONSES), c(2, Kind.TITLE), c(3, Kind.POSTSCRIPT, marker="P.S.")]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=60)
    stops = {tokenizer.eos_token_id: 12.0, tokenizer.encode(">", add_special_tokens=False)[0]: 12.0}
    for seed in range(3):
        state = drive_with_bias(steering, 60, seed, stops)
        assert empty_parts(state.text, constraints) == [], state.text
        assert steering.unmet(state) == (), state.text


def test_a_section_marker_holding_its_number_is_written_as_the_verifier_counts_it() -> None:
    labels = [s.text for s in build_layout(Layout(body=Body(kind="sections", n=3, splitter="第{n}部分")))
              if isinstance(s, Literal)]
    assert [label.strip() for label in labels] == ["第1部分:", "第2部分:", "第3部分:"]
    form = Count(unit=Unit.SECTIONS, filter=Filter(marker="第{n}部分"), relation=Relation.EXACTLY, n=3)
    assert check(form, "".join(label + "山水" for label in labels)).satisfied
