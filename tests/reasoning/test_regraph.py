"""Rebuilding a constraint graph keeps the edges only the analysis could draw (real extraction, real ontology)."""

from __future__ import annotations

import pytest

from reasoning.analysis import Analysis, Status, analyse
from reasoning.errors import ConflictError
from reasoning.evidence.ingest import ingest_ontology
from reasoning.graph import Edge, EdgeKind
from reasoning.regraph import carried_edges, rebuild_graph, settle_conflict
from tests.conftest import REGIMES_TTL

PROMPT = "Answer in English. 必须用中文回答。请依据欧盟的法律并根据美国的法规回答。"


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    index = ingest_ontology(REGIMES_TTL, "text/turtle").index.with_version("regimes-v1")
    return analyse(PROMPT, cache=None, domain_index=index)


def _ids(analysis: Analysis, value: str) -> str:
    return next(c.id for c in analysis.constraints if value in c.params.values())


def test_a_choice_settles_only_its_own_conflict(analysis: Analysis) -> None:
    english, chinese, eu, us = (_ids(analysis, v) for v in ("en", "zh", "EU", "US"))
    assert len(analysis.graph.conflicts) == 2
    choice = Edge(source=english, target=chinese, relation=EdgeKind.OVERRIDES, reason="chosen", origin="confirmation")
    settled = rebuild_graph(analysis, analysis.constraints, prompt=PROMPT, extra_edges=[choice])
    assert settled.graph.inactive == (chinese,)
    [conflict] = settled.graph.conflicts
    assert {conflict.a, conflict.b} == {eu, us} and "owl:disjointWith" in conflict.reason
    assert settled.status is Status.NEEDS_CONFIRMATION
    # A second rebuild (a second choice) keeps the first person's edge too.
    second = Edge(source=eu, target=us, relation=EdgeKind.OVERRIDES, reason="chosen", origin="confirmation")
    both = rebuild_graph(settled, settled.constraints, prompt=PROMPT, extra_edges=[second])
    assert set(both.graph.inactive) == {chinese, us} and both.graph.conflicts == ()
    assert both.status is Status.OK


def test_edges_of_a_dropped_constraint_are_not_carried(analysis: Analysis) -> None:
    us = _ids(analysis, "US")
    kept = tuple(c for c in analysis.constraints if c.id != us)
    assert [e.origin for e in carried_edges(analysis, analysis.constraints)] == ["ontology"]
    assert carried_edges(analysis, kept) == ()
    rebuilt = rebuild_graph(analysis, kept, prompt=PROMPT)
    assert [c.id for c in rebuilt.constraints] == [c.id for c in kept]
    assert len(rebuilt.graph.conflicts) == 1  # the language pair only


def test_settling_a_conflict_overrides_the_losers_and_keeps_the_rest(analysis: Analysis) -> None:
    english, chinese, eu, us = (_ids(analysis, v) for v in ("en", "zh", "EU", "US"))
    settled = settle_conflict(analysis, english, [chinese], prompt=PROMPT)
    assert settled.graph.inactive == (chinese,)
    assert [{c.a, c.b} for c in settled.graph.conflicts] == [{eu, us}]
    done = settle_conflict(settled, us, [eu], prompt=PROMPT)
    assert set(done.graph.inactive) == {chinese, eu} and done.status is Status.OK


def test_settling_constraints_the_prompt_no_longer_has_is_a_conflict(analysis: Analysis) -> None:
    english = _ids(analysis, "en")
    with pytest.raises(ConflictError, match="no longer reads"):
        settle_conflict(analysis, english, ["c99"], prompt=PROMPT)
