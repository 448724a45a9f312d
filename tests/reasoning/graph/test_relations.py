"""Relation rules: entails / excludes computed from kinds and parameters."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.model import Constraint, Kind
from reasoning.graph.facets import Interval, interval_for
from reasoning.graph.relations import EdgeKind, compute_relations


def c(cid: str, kind: Kind, **params: Any) -> Constraint:
    return Constraint(id=cid, kind=kind, params=params)


def relations(a: Constraint, b: Constraint) -> set[tuple[str, str, str]]:
    return {(e.source, e.relation.value, e.target) for e in compute_relations([a, b])}


@pytest.mark.parametrize(
    ("relation", "n", "expected"),
    [
        ("less than", 50, Interval(0, 49)),
        ("at most", 50, Interval(0, 50)),
        ("at least", 3, Interval(3, None)),
        ("more than", 3, Interval(4, None)),
        ("exactly", 7, Interval(7, 7)),
    ],
)
def test_relation_becomes_interval(relation: str, n: int, expected: Interval) -> None:
    assert interval_for(relation, n) == expected


WORDS = Kind.WORD_COUNT

ENTAILS = [
    (c("a", WORDS, relation="less than", n=50), c("b", WORDS, relation="at most", n=100)),
    (c("a", WORDS, relation="exactly", n=80), c("b", WORDS, relation="at least", n=50)),
    (
        c("a", Kind.SENTENCE_COUNT, relation="more than", n=10),
        c("b", Kind.SENTENCE_COUNT, relation="at least", n=5),
    ),
    (c("a", Kind.ALL_LOWERCASE), c("b", Kind.CAPITAL_WORD_FREQUENCY, relation="less than", n=3)),
    (c("a", Kind.ALL_LOWERCASE), c("b", Kind.CAPITAL_WORD_FREQUENCY, relation="at most", n=0)),
    (
        c("a", Kind.KEYWORD_FREQUENCY, keyword="Risk", relation="at least", n=2),
        c("b", Kind.KEYWORDS_PRESENT, keywords=["risk"]),
    ),
    (
        c("a", Kind.CITATION_TIME_WINDOW, not_before="2021-06-01"),
        c("b", Kind.CITATION_TIME_WINDOW, not_before="2020-01-01"),
    ),
    (c("a", Kind.CITE_SOURCES, min=3), c("b", Kind.CITE_SOURCES, min=1)),
    (
        c("a", Kind.START_PHRASE, phrase="Dear Sir, hello"),
        c("b", Kind.START_PHRASE, phrase="dear sir"),
    ),
    (c("a", Kind.HIGHLIGHTED_SECTIONS, n=4), c("b", Kind.HIGHLIGHTED_SECTIONS, n=2)),
]


@pytest.mark.parametrize(("a", "b"), ENTAILS)
def test_entails(a: Constraint, b: Constraint) -> None:
    found = relations(a, b)
    assert ("a", "entails", "b") in found
    assert ("b", "entails", "a") not in found
    assert not any(r == "excludes" for _, r, _ in found)


EXCLUDES = [
    (c("a", WORDS, relation="at least", n=300), c("b", WORDS, relation="less than", n=100)),
    (c("a", WORDS, relation="less than", n=50), c("b", WORDS, relation="at least", n=50)),
    (c("a", Kind.RESPONSE_LANGUAGE, language="zh"), c("b", Kind.RESPONSE_LANGUAGE, language="en")),
    (c("a", Kind.ALL_LOWERCASE), c("b", Kind.ALL_CAPITALS)),
    (c("a", Kind.ALL_LOWERCASE), c("b", Kind.CAPITAL_WORD_FREQUENCY, relation="at least", n=1)),
    (
        c("a", Kind.FORBIDDEN_WORDS, words=["risk"]),
        c("b", Kind.KEYWORDS_PRESENT, keywords=["Risk", "bank"]),
    ),
    (
        c("a", Kind.FORBIDDEN_WORDS, words=["risk"]),
        c("b", Kind.KEYWORD_FREQUENCY, keyword="risk", relation="at least", n=1),
    ),
    (
        c("a", Kind.FORBIDDEN_WORDS, words=["risk"]),
        c("b", Kind.START_PHRASE, phrase="Risk assessment:"),
    ),
    (c("a", Kind.NO_COMMA), c("b", Kind.KEYWORDS_PRESENT, keywords=["Hello, world"])),
    (c("a", Kind.NO_COMMA), c("b", Kind.END_PHRASE, phrase="Thanks, bye")),
    (
        c("a", Kind.CITATION_TIME_WINDOW, not_before="2020-01-01"),
        c("b", Kind.CITATION_TIME_WINDOW, not_after="2015-12-31"),
    ),
    (
        c("a", Kind.START_PHRASE, phrase="Hello"),
        c("b", Kind.REPEAT_PROMPT, prompt_to_repeat="Write a poem"),
    ),
    (c("a", Kind.END_PHRASE, phrase="Bye."), c("b", Kind.END_PHRASE, phrase="Any questions?")),
    (c("a", Kind.JSON_FORMAT), c("b", Kind.BULLET_COUNT, n=3)),
    (c("a", Kind.JSON_FORMAT), c("b", Kind.START_PHRASE, phrase="My answer is")),
    (c("a", Kind.JSON_FORMAT), c("b", Kind.END_PHRASE, phrase="Is there anything else?")),
    (c("a", Kind.QUOTATION), c("b", Kind.END_PHRASE, phrase="Any other questions?")),
    (c("a", Kind.NUMERIC_PRECISION, decimals=2), c("b", Kind.NUMERIC_PRECISION, decimals=0)),
    (c("a", Kind.BULLET_COUNT, n=3), c("b", Kind.BULLET_COUNT, n=5)),
    (
        c("a", Kind.SECTIONS, splitter="Section", n=2),
        c("b", Kind.SECTIONS, splitter="SECTION", n=4),
    ),
    (
        c("a", Kind.NTH_PARAGRAPH_FIRST_WORD, n=3, nth=2, first_word="so"),
        c("b", Kind.NTH_PARAGRAPH_FIRST_WORD, n=3, nth=2, first_word="then"),
    ),
    (c("a", Kind.CONSTRAINED_RESPONSE, options=["Yes, sir", "No, sir"]), c("b", Kind.NO_COMMA)),
]


@pytest.mark.parametrize(("a", "b"), EXCLUDES)
def test_excludes(a: Constraint, b: Constraint) -> None:
    edges = compute_relations([a, b])
    assert [(e.source, e.relation, e.target) for e in edges] == [("a", EdgeKind.EXCLUDES, "b")]
    assert edges[0].reason


COMPATIBLE = [
    # A postscript may end with the end phrase.
    (
        c("a", Kind.POSTSCRIPT, marker="P.S."),
        c("b", Kind.END_PHRASE, phrase="Any other questions?"),
    ),
    # Titles, highlights and sections can sit inside JSON strings.
    (c("a", Kind.JSON_FORMAT), c("b", Kind.TITLE)),
    (c("a", Kind.JSON_FORMAT), c("b", Kind.HIGHLIGHTED_SECTIONS, n=2)),
    # A quoted string is JSON.
    (c("a", Kind.JSON_FORMAT), c("b", Kind.QUOTATION)),
    # Literal matching is case-insensitive.
    (
        c("a", Kind.ALL_LOWERCASE),
        c("b", Kind.END_PHRASE, phrase="Is there anything else I can help with?"),
    ),
    (c("a", Kind.ALL_CAPITALS), c("b", Kind.KEYWORDS_PRESENT, keywords=["risk"])),
    # Different counted quantities never interact.
    (
        c("a", WORDS, relation="less than", n=10),
        c("b", Kind.SENTENCE_COUNT, relation="at least", n=3),
    ),
    (
        c("a", Kind.FORBIDDEN_WORDS, words=["risk"]),
        c("b", Kind.KEYWORDS_PRESENT, keywords=["bank"]),
    ),
    # A forbidden word inside a longer word of a required phrase is not that word.
    (
        c("a", Kind.FORBIDDEN_WORDS, words=["risk"]),
        c("b", Kind.START_PHRASE, phrase="Risky business"),
    ),
    (c("a", Kind.NO_COMMA), c("b", Kind.KEYWORDS_PRESENT, keywords=["hello world"])),
    # Overlapping windows and a JSON answer that can start with "true".
    (
        c("a", Kind.CITATION_TIME_WINDOW, not_before="2018-01-01"),
        c("b", Kind.CITATION_TIME_WINDOW, not_after="2022-12-31"),
    ),
    (c("a", Kind.JSON_FORMAT), c("b", Kind.START_PHRASE, phrase="true")),
    (c("a", Kind.RESPONSE_LANGUAGE, language="en"), c("b", Kind.JURISDICTION, code="EU")),
]


@pytest.mark.parametrize(("a", "b"), COMPATIBLE)
def test_compatible_pairs_are_not_excluded(a: Constraint, b: Constraint) -> None:
    assert not any(r == "excludes" for _, r, _ in relations(a, b))


def test_equivalent_constraints_entail_each_other() -> None:
    a = c("a", Kind.RESPONSE_LANGUAGE, language="zh")
    b = c("b", Kind.RESPONSE_LANGUAGE, language="zh-Hans")
    assert relations(a, b) == {("a", "entails", "b"), ("b", "entails", "a")}


def test_incomplete_kind_is_never_entailed() -> None:
    # json_format's facets (no bullets, JSON first/last chars) are consequences, not its meaning.
    a = c("a", Kind.JSON_FORMAT)
    b = c("b", Kind.JSON_FORMAT)
    assert relations(a, b) == set()


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"n": "many"},
        {"relation": "roughly", "n": 5},
        {"words": 5},
        {"not_before": "soon"},
        {"n": None},
    ],
)
def test_malformed_params_give_no_edges_and_do_not_raise(params: dict[str, Any]) -> None:
    kinds = [Kind.WORD_COUNT, Kind.FORBIDDEN_WORDS, Kind.CITATION_TIME_WINDOW]
    constraints = [Constraint(id=f"x{i}", kind=k, params=params) for i, k in enumerate(kinds)]
    constraints.append(c("y", Kind.WORD_COUNT, relation="at most", n=10))
    assert all(e.relation is not EdgeKind.EXCLUDES for e in compute_relations(constraints))
