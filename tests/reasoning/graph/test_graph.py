"""Overrides, conflicts and domain edges of the built constraint graph."""

from __future__ import annotations

import pytest

from reasoning.constraints.model import Constraint, Hardness, Kind, Origin, Span
from reasoning.errors import InvalidInput
from reasoning.graph import EdgeKind, build_graph, ontology_edge


def spanned(
    prompt: str,
    text: str,
    cid: str,
    kind: Kind,
    hardness: Hardness = Hardness.HARD,
    **params: object,
) -> Constraint:
    start = prompt.index(text)
    return Constraint(
        id=cid,
        kind=kind,
        params=dict(params),
        hardness=hardness,
        source=Span(start=start, end=start + len(text), text=text),
    )


def overrides(graph) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {(e.source, e.target) for e in graph.edges_of(EdgeKind.OVERRIDES)}


def test_english_and_chinese_hard_instructions_conflict_with_both_spans() -> None:
    prompt = "Answer in English. 必须用中文回答"
    en = spanned(prompt, "Answer in English", "c1", Kind.RESPONSE_LANGUAGE, language="en")
    zh = spanned(prompt, "必须用中文回答", "c2", Kind.RESPONSE_LANGUAGE, language="zh")
    graph = build_graph([en, zh], prompt=prompt)
    assert len(graph.conflicts) == 1
    conflict = graph.conflicts[0]
    assert (conflict.a, conflict.b) == ("c1", "c2")
    assert [s.text for s in conflict.spans if s] == ["Answer in English", "必须用中文回答"]
    assert [prompt[s.start : s.end] for s in conflict.spans if s] == [
        "Answer in English",
        "必须用中文回答",
    ]
    assert graph.inactive == ()


def test_hard_overrides_soft_and_resolves_the_exclusion() -> None:
    prompt = "Answer in English if possible. 必须用中文回答"
    en = spanned(
        prompt,
        "Answer in English if possible",
        "c1",
        Kind.RESPONSE_LANGUAGE,
        Hardness.SOFT,
        language="en",
    )
    zh = spanned(prompt, "必须用中文回答", "c2", Kind.RESPONSE_LANGUAGE, language="zh")
    graph = build_graph([en, zh], prompt=prompt)
    assert graph.conflicts == ()
    assert overrides(graph) == {("c2", "c1")}
    assert graph.inactive == ("c1",)
    assert [x.id for x in graph.active()] == ["c2"]


def test_user_instruction_overrides_profile_default_even_when_the_default_is_hard() -> None:
    prompt = "必须用中文回答"
    default = Constraint(
        id="d1", kind=Kind.RESPONSE_LANGUAGE, params={"language": "en"}, origin=Origin.PROFILE
    )
    zh = spanned(prompt, "必须用中文回答", "c1", Kind.RESPONSE_LANGUAGE, language="zh")
    graph = build_graph([zh, default], prompt=prompt)
    assert graph.conflicts == ()
    assert overrides(graph) == {("c1", "d1")}
    assert graph.inactive == ("d1",)


@pytest.mark.parametrize(
    "prompt",
    [
        "Answer in at most 50 words. Actually, use at least 200 words.",
        "Answer in at most 50 words. Use at least 200 words instead.",
        "回答不超过50个词。其实，改为至少200个词。",
    ],
)
def test_later_correction_overrides_earlier_hard_instruction(prompt: str) -> None:
    first_end = prompt.index(".") if "." in prompt else prompt.index("。")
    second = prompt[first_end + 1 :].strip(" 。.")
    a = Constraint(
        id="c1",
        kind=Kind.WORD_COUNT,
        params={"relation": "at most", "n": 50},
        source=Span(start=0, end=first_end, text=prompt[:first_end]),
    )
    start = prompt.index(second)
    b = Constraint(
        id="c2",
        kind=Kind.WORD_COUNT,
        params={"relation": "at least", "n": 200},
        source=Span(start=start, end=start + len(second), text=second),
    )
    graph = build_graph([a, b], prompt=prompt)
    assert overrides(graph) == {("c2", "c1")}
    assert graph.conflicts == ()


def test_two_hard_instructions_without_correction_marker_conflict() -> None:
    prompt = "Answer in at most 50 words. I actually like cats. Use at least 200 words."
    a = spanned(
        prompt, "Answer in at most 50 words", "c1", Kind.WORD_COUNT, relation="at most", n=50
    )
    b = spanned(prompt, "Use at least 200 words", "c2", Kind.WORD_COUNT, relation="at least", n=200)
    graph = build_graph([a, b], prompt=prompt)
    assert overrides(graph) == set()
    assert [(x.a, x.b) for x in graph.conflicts] == [("c1", "c2")]


def test_later_soft_preference_overrides_earlier_soft_one() -> None:
    prompt = "Preferably answer in English. Ideally answer in French."
    a = spanned(
        prompt,
        "Preferably answer in English",
        "c1",
        Kind.RESPONSE_LANGUAGE,
        Hardness.SOFT,
        language="en",
    )
    b = spanned(
        prompt,
        "Ideally answer in French",
        "c2",
        Kind.RESPONSE_LANGUAGE,
        Hardness.SOFT,
        language="fr",
    )
    graph = build_graph([a, b], prompt=prompt)
    assert overrides(graph) == {("c2", "c1")}
    assert graph.conflicts == ()


def test_compatible_constraints_get_no_overrides_and_stay_active() -> None:
    prompt = "Use under 50 words and at most 100 words."
    a = spanned(prompt, "under 50 words", "c1", Kind.WORD_COUNT, relation="less than", n=50)
    b = spanned(prompt, "at most 100 words", "c2", Kind.WORD_COUNT, relation="at most", n=100)
    graph = build_graph([a, b], prompt=prompt)
    assert [(e.source, e.relation) for e in graph.edges] == [("c1", EdgeKind.ENTAILS)]
    assert graph.inactive == () and graph.conflicts == ()


def test_ontology_edges_join_the_graph_and_can_conflict() -> None:
    a = Constraint(id="c1", kind=Kind.JURISDICTION, params={"code": "US"})
    b = Constraint(id="c2", kind=Kind.JURISDICTION, params={"code": "EU"})
    assert build_graph([a, b]).conflicts == ()
    extra = [ontology_edge("c1", "c2", "excludes", "owl:disjointWith between US and EU regimes")]
    graph = build_graph([a, b], extra_edges=extra)
    assert [(e.origin, e.relation) for e in graph.edges] == [("ontology", EdgeKind.EXCLUDES)]
    assert graph.conflicts[0].reason == "owl:disjointWith between US and EU regimes"


def test_duplicate_ontology_exclusion_is_dropped() -> None:
    a = Constraint(id="c1", kind=Kind.RESPONSE_LANGUAGE, params={"language": "en"})
    b = Constraint(id="c2", kind=Kind.RESPONSE_LANGUAGE, params={"language": "zh"})
    graph = build_graph([a, b], extra_edges=[ontology_edge("c2", "c1", EdgeKind.EXCLUDES, "dup")])
    assert [e.origin for e in graph.edges] == ["rule"]


@pytest.mark.parametrize(
    ("constraints", "extra"),
    [
        ([Constraint(id="c1", kind=Kind.NO_COMMA), Constraint(id="c1", kind=Kind.TITLE)], []),
        ([Constraint(id="c1", kind=Kind.NO_COMMA)], [("c1", "c9", "excludes")]),
        ([Constraint(id="c1", kind=Kind.NO_COMMA)], [("c1", "c1", "excludes")]),
    ],
)
def test_invalid_graph_input_raises_invalid_input(
    constraints: list[Constraint], extra: list[tuple[str, str, str]]
) -> None:
    with pytest.raises(InvalidInput):
        build_graph(constraints, extra_edges=[ontology_edge(a, b, r, "x") for a, b, r in extra])


def test_unknown_ontology_relation_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        ontology_edge("c1", "c2", "contradicts", "x")


def test_two_hard_profile_defaults_that_exclude_each_other_conflict_without_spans() -> None:
    default = Constraint(id="d1", kind=Kind.ALL_CAPITALS, origin=Origin.PROFILE)
    other = Constraint(id="d2", kind=Kind.ALL_LOWERCASE, origin=Origin.PROFILE)
    graph = build_graph([default, other])
    # Two hard profile defaults that exclude each other: a real conflict, spans unknown.
    assert [(x.a, x.b, x.spans) for x in graph.conflicts] == [("d1", "d2", (None, None))]
