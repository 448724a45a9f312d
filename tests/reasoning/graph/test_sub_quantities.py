"""Bounds on different quantities that contain one another: the order of measures and the
``excludes`` edges it draws (a lower bound on a part above an upper bound on the whole)."""

from __future__ import annotations

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Filter, Measure, Unit, units
from reasoning.constraints.form.order import within
from reasoning.constraints.model import Constraint, Kind
from reasoning.graph import build_graph
from reasoning.graph.relations import EdgeKind, compute_relations


def m(unit: Unit, **fields: object) -> Measure:
    return Measure(unit=unit, filter=Filter(**fields))  # type: ignore[arg-type]


WITHIN = [
    (m(Unit.LETTERS, text="!"), m(Unit.PUNCTUATION, chars="!！")),
    (m(Unit.LETTERS, text="a"), m(Unit.LETTERS)),
    (m(Unit.LETTERS, text="a"), m(Unit.CHARACTERS)),
    (m(Unit.PUNCTUATION, chars=","), m(Unit.CHARACTERS, chars=",，")),
    (m(Unit.CHARACTERS, chars="!?"), m(Unit.PUNCTUATION)),
    (m(Unit.CHARACTERS, chars="7"), m(Unit.DIGITS)),
    (m(Unit.WORDS, starts_with="b"), m(Unit.WORDS)),
    (m(Unit.WORDS, starts_with="b", case="upper"), m(Unit.WORDS, case="upper")),
    (m(Unit.UNIQUE_WORDS), m(Unit.WORDS)),
    (m(Unit.UNIQUE_WORDS, stop_words=False), m(Unit.WORDS)),
    (m(Unit.KEYWORDS, text="risk", whole_word=True), m(Unit.KEYWORDS, text="risk")),
    (m(Unit.SENTENCES, ends_with="?"), m(Unit.SENTENCES)),
]
NOT_WITHIN = [
    (m(Unit.PUNCTUATION, chars="!！"), m(Unit.LETTERS, text="!")),  # the whole is not within a part
    (m(Unit.LETTERS), m(Unit.LETTERS, text="a")),
    (m(Unit.CHARACTERS, chars="a!"), m(Unit.PUNCTUATION)),
    (m(Unit.WORDS), m(Unit.WORDS, starts_with="b")),
    (m(Unit.WORDS, starts_with="b"), m(Unit.WORDS, starts_with="c")),
    (m(Unit.WORDS), m(Unit.UNIQUE_WORDS)),
    (m(Unit.KEYWORDS, text="risk"), m(Unit.KEYWORDS, text="risk", whole_word=True)),
    (m(Unit.KEYWORDS, text="risk"), m(Unit.KEYWORDS, text="risks")),
    (m(Unit.PARAGRAPHS, separator="***"), m(Unit.PARAGRAPHS)),
    (m(Unit.SENTENCES), m(Unit.WORDS)),
]
TEXTS = ["Hi! Wow!! Be bold, BE brave: 7 bees buzz?", "risky risk, RISK-averse!", "", "一二！三?"]


@pytest.mark.parametrize(("a", "b"), WITHIN)
def test_a_part_is_within_its_whole_and_never_outnumbers_it(a: Measure, b: Measure) -> None:
    assert within(a, b)
    for text in TEXTS:
        assert units.count(a, text) <= units.count(b, text)


@pytest.mark.parametrize(("a", "b"), NOT_WITHIN)
def test_no_order_is_claimed_where_a_text_can_break_it(a: Measure, b: Measure) -> None:
    assert not within(a, b)


def _count(cid: str, unit: str, relation: str, n: int, **fields: object) -> Constraint:
    params: dict[str, object] = {"unit": unit, "relation": relation, "n": n}
    if fields:
        params["filter"] = fields
    return Constraint(id=cid, kind=Kind.COUNT, params=params)


def _edges(a: Constraint, b: Constraint) -> set[tuple[str, str, str]]:
    return {(e.source, e.relation.value, e.target) for e in compute_relations([a, b])}


def test_a_minimum_of_a_part_above_a_maximum_of_its_whole_excludes() -> None:
    at_least = Constraint(
        id="a", kind=Kind.LETTER_FREQUENCY, params={"letter": "!", "relation": "at least", "n": 3}
    )
    none = _count("b", "punctuation", "at most", 0, chars="!！")
    assert _edges(at_least, none) == {("a", EdgeKind.EXCLUDES.value, "b")}
    assert _edges(none, at_least) == {("b", EdgeKind.EXCLUDES.value, "a")}


def test_a_minimum_within_the_maximum_of_its_whole_is_no_edge() -> None:
    some = _count("a", "words", "at least", 3, starts_with="b")
    few = Constraint(id="b", kind=Kind.WORD_COUNT, params={"relation": "at most", "n": 3})
    assert _edges(some, few) == set()
    more = _count("a", "words", "at least", 4, starts_with="b")
    assert _edges(more, few) == {("a", EdgeKind.EXCLUDES.value, "b")}


def test_a_maximum_of_a_part_and_a_minimum_of_its_whole_do_not_exclude() -> None:
    # At most 0 '!' and at least 3 punctuation marks: the marks can be others.
    assert (
        _edges(
            _count("a", "punctuation", "at least", 3),
            _count("b", "punctuation", "at most", 0, chars="!"),
        )
        == set()
    )


@pytest.mark.parametrize(
    "prompt",
    [
        "Write a poem. Include at least 3 '!' in your answer. Do not use '!' at all.",
        "Write a poem. Use at least 3 exclamation marks. Do not use any exclamation marks.",
        "Write a story with at least 40 unique words. Use at most 30 words.",
        "Use at least 5 words starting with b. Answer in at most 3 words.",
    ],
)
def test_a_prompt_asking_for_a_part_its_whole_forbids_needs_confirmation(prompt: str) -> None:
    result = extract(prompt)
    graph = build_graph(result.constraints, prompt=prompt)
    assert len(graph.conflicts) == 1
    conflict = graph.conflicts[0]
    assert {conflict.a, conflict.b} == {c.id for c in result.constraints}


def test_a_quoted_symbol_is_its_own_unit() -> None:
    got = [
        (c.kind.value, c.params, c.source and c.source.text)
        for c in extract("Use the symbol '#' exactly twice.").constraints
    ]
    assert got == [
        (
            "count",
            {"unit": "punctuation", "relation": "exactly", "n": 2, "filter": {"chars": "#"}},
            "'#' exactly twice",
        )
    ]
    forbidden = extract('Never use "&" in the reply.').constraints
    assert [(c.kind.value, c.params) for c in forbidden] == [
        ("count", {"unit": "punctuation", "relation": "at most", "n": 0, "filter": {"chars": "&"}})
    ]


@pytest.mark.parametrize("layout", ["list", "numbered_list", "nested_list"])
def test_a_list_to_write_and_no_list_exclude(layout: str) -> None:
    wanted = Constraint(id="a", kind=Kind.STRUCTURE, params={"layout": layout})
    banned = Constraint(id="b", kind=Kind.STRUCTURE, params={"layout": "no_list"})
    assert _edges(wanted, banned) == {("a", EdgeKind.EXCLUDES.value, "b")}


def test_a_word_at_a_position_and_the_same_word_forbidden_exclude() -> None:
    placed = Constraint(id="a", kind=Kind.POSITION, params={"unit": "words", "k": 3, "op": "is", "text": "light"})
    banned = Constraint(id="b", kind=Kind.FORBIDDEN_WORDS, params={"words": ["light"]})
    wanted = Constraint(id="c", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["light"]})
    assert _edges(placed, banned) == {("a", EdgeKind.EXCLUDES.value, "b")}
    assert _edges(placed, wanted) == set()
