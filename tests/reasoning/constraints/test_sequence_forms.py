"""The form's positions inside a piece, echoes of the answer's own words, containments and a spread's step:
verified on complete and partial texts, restated, related without false conflicts, and left to the
verifier by the decoder's position controllers (which read only edges)."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.form import Position, Spread, Unit, check
from reasoning.constraints.form.describe import describe
from reasoning.constraints.form.kinds import canonical
from reasoning.constraints.model import Constraint, Kind

_TEXT = "Dogs are loyal. They love people. The ocean is big. Cats sleep all day."


@pytest.mark.parametrize(
    ("form", "text", "satisfied"),
    [
        (Position(unit=Unit.SENTENCES, k=3, op="contains", text="ocean"), _TEXT, True),
        (Position(unit=Unit.SENTENCES, k=2, op="contains", text="ocean"), _TEXT, False),
        (Position(unit=Unit.SENTENCES, k=3, op="contains", text="ocea"), _TEXT, False),  # a whole word only
        (Position(unit=Unit.SENTENCES, k=-1, op="contains", text="all day"), _TEXT, True),
        (Position(unit=Unit.SENTENCES, k=2, op="contains", text="风险"), "第一句。这里有风险。", True),
        (Position(unit=Unit.SENTENCES, k=4, op="is", text="sleep", word=2), _TEXT, True),
        (Position(unit=Unit.SENTENCES, k=4, op="is", text="cats", word=2), _TEXT, False),
        (Position(unit=Unit.SENTENCES, k=1, op="is", text="loyal", word=-1), _TEXT, True),
        (Position(unit=Unit.WORDS, k=-2, op="is", text="all"), _TEXT, True),
        (Position(unit=Unit.WORDS, k=-2, op="is", text="day"), _TEXT, False),
        (Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="", same_as="first_word"),
         "Love is all you need, love.\n\nTime flies when you have time.", True),
        (Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="", same_as="first_word"),
         "Love is all you need, love.\n\nTime flies fast.", False),
        (Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="", same_as="first_word"), "Love.", False),
        (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="", same_as="previous_last_word"),
         "I like dogs. Dogs like bones. Bones are white.", True),
        (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="", same_as="previous_last_word"),
         "I like dogs. Cats like bones.", False),
        (Spread(unit=Unit.WORDS, per=Unit.SENTENCES, step=2), "I run. I run very. I run very fast now.", False),
        (Spread(unit=Unit.WORDS, per=Unit.SENTENCES, step=2), "I run. I run so fast. I run so very fast today.", True),
        (Spread(unit=Unit.WORDS, per=Unit.SENTENCES, step=-1), "We run so fast. We run fast. We run.", True),
    ],
)
def test_verdicts(form: Any, text: str, satisfied: bool) -> None:
    assert check(form, text).satisfied is satisfied


def test_partial_texts() -> None:
    contains = Position(unit=Unit.SENTENCES, k=2, op="contains", text="ocean")
    assert not check(contains, "Dogs are loyal. The oc", partial=True).certain
    assert check(contains, "Dogs are loyal. The sea is big. More", partial=True).certain
    chain = Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="", same_as="previous_last_word")
    assert not check(chain, "I like dogs. Cats", partial=True).certain  # the open piece's first word may grow
    wrong = check(chain, "I like dogs. Cats like bones. Bones", partial=True)
    assert not wrong.satisfied and wrong.certain
    step = Spread(unit=Unit.WORDS, per=Unit.SENTENCES, step=2)
    assert not check(step, "I run. I run so fast. I run", partial=True).certain  # the open sentence may still grow
    assert check(step, "I run. I run fast. I", partial=True).certain


def test_restatements_name_the_inside_position() -> None:
    assert describe(Position(unit=Unit.SENTENCES, k=4, op="is", text="river", word=2)) == \
        'In the sentence number 4, word number 2 is "river".'
    assert describe(Position(unit=Unit.SENTENCES, k=2, op="contains", text="风险"), "zh") == "第2句子必须包含“风险”。"
    assert "longer than the one before" in describe(Spread(unit=Unit.WORDS, per=Unit.SENTENCES, step=2))
    assert "same word it begins with" in describe(
        Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="", same_as="first_word"))


def test_an_answer_that_contains_a_text_is_no_end_phrase() -> None:
    kind, _ = canonical(Position(unit=Unit.ANSWER, op="contains", text="river"))
    assert kind is Kind.POSITION


def test_the_position_controllers_leave_inside_positions_to_the_verifier() -> None:
    from inference.decoder.compile.forms import form_of_constraint

    inside = Constraint(id="p", kind=Kind.POSITION, params={"unit": "sentences", "k": 4, "op": "is", "text": "river",
                                                         "word": 2})
    edge = Constraint(id="q", kind=Kind.POSITION, params={"unit": "sentences", "k": 4, "op": "starts_with",
                                                       "text": "river"})
    assert form_of_constraint(inside) is None
    assert form_of_constraint(edge) == Position(unit=Unit.SENTENCES, k=4, op="starts_with", text="river")


def test_a_word_inside_a_piece_does_not_conflict_with_an_opening() -> None:
    from reasoning.graph import build_graph

    constraints = [
        Constraint(id="a", kind=Kind.POSITION, params={"unit": "sentences", "k": 2, "op": "is", "text": "river",
                                                       "word": 2}),
        Constraint(id="b", kind=Kind.POSITION, params={"unit": "sentences", "k": 2, "op": "starts_with",
                                                       "text": "The"}),
    ]
    graph = build_graph(constraints)
    assert not any(getattr(e, "relation", None) == "excludes" or "exclu" in str(e) for e in graph.edges)
