"""Upload checks of decision rules, and the time limit on running ones."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date

import pytest

from reasoning.case.model import CaseGraph
from reasoning.errors import InvalidInput, TenetError, UnsafeContent
from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.engine import RuleLoop, RuleTimeout, _Limit
from reasoning.rules.model import Decision

_HEAD = """
@prefix ex: <https://example.org/t#> .
@prefix tv: <https://tenet.dev/ns/views#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Thing a owl:Class ; rdfs:label "gadget"@en .
ex:needs a owl:ObjectProperty , tv:DecisionProperty ; rdfs:label "needs"@en .
ex:a1 ex:x ex:a2 . ex:a2 ex:x ex:a3 . ex:a3 ex:x ex:a4 . ex:a4 ex:x ex:a1 .
ex:p sh:declare [ sh:prefix "ex" ; sh:namespace "https://example.org/t#"^^xsd:anyURI ] ,
    [ sh:prefix "tv" ; sh:namespace "https://tenet.dev/ns/views#"^^xsd:anyURI ] .
ex:shape a sh:NodeShape ; sh:targetClass tv:Case ; sh:rule ex:r .
"""


def _ontology(rule: str) -> bytes:
    return (_HEAD + rule).encode()


def _sparql(query: str) -> bytes:
    return _ontology(f'ex:r a sh:SPARQLRule ; sh:prefixes ex:p ; sh:construct """{query}""" .\n')


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (
            "CONSTRUCT { $this ex:needs ?o } WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }",
            "SERVICE",
        ),
        (
            (
                "CONSTRUCT { $this ex:needs ?o } WHERE { $this ?p ?o . FILTER EXISTS { "
                "SERVICE <http://127.0.0.1:9/> { ?o ?q ?z } } }"
            ),
            "SERVICE",
        ),
        ("CONSTRUCT { $this ex:needs ?o } FROM <http://127.0.0.1:9/g> WHERE { ?s ?p ?o }", "FROM"),
        ("LOAD <http://127.0.0.1:9/data.ttl>", "updates"),
        ("INSERT DATA { ex:a ex:b ex:c }", "updates"),
        ("DELETE WHERE { ?s ?p ?o }", "updates"),
    ],
)
def test_hostile_rules_are_refused(query: str, words: str) -> None:
    with pytest.raises(UnsafeContent) as caught:
        ingest_ontology(_sparql(query), "text/turtle")
    assert words in caught.value.detail
    rules = caught.value.extra["rules"]
    assert isinstance(rules, list) and rules[0]["ok"] is False and rules[0]["hostile"] is True


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (
            'ex:r a sh:SPARQLRule ; sh:prefixes ex:p ; sh:construct "CONSTRUCT { $this ex:needs ?o WHERE" .',
            "does not parse",
        ),
        (
            'ex:r a sh:SPARQLRule ; sh:construct "CONSTRUCT { $this nope:needs ?o } WHERE { ?s ?p ?o }" .',
            "does not parse",
        ),
        (
            'ex:r a sh:SPARQLRule ; sh:prefixes ex:p ; sh:construct "SELECT * WHERE { ?s ?p ?o }" .',
            "CONSTRUCT",
        ),
        ("ex:r a sh:SPARQLRule .", "no sh:construct"),
        ("ex:r a sh:TripleRule ; sh:subject sh:this ; sh:predicate ex:needs .", "sh:object"),
        ('ex:r rdfs:comment "a rule of no kind" .', "neither"),
    ],
)
def test_broken_rules_are_refused_with_a_clear_report(rule: str, words: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        ingest_ontology(_ontology(rule), "text/turtle")
    assert not isinstance(caught.value, UnsafeContent)
    assert words in caught.value.detail and "https://example.org/t#r" in caught.value.detail
    report = caught.value.extra["rules"]
    assert isinstance(report, list) and report[0]["error"] and report[0]["ok"] is False


def test_accepted_rules_are_in_the_validation_report() -> None:
    result = ingest_ontology(
        _sparql("CONSTRUCT { $this ex:needs ex:a1 } WHERE { $this a tv:Case }"), "text/turtle"
    )
    (rule,) = result.report.rules
    assert (rule.ok, rule.kind, rule.decides) == (True, "sparql", ("https://example.org/t#needs",))
    assert result.report.undeclared_properties == ("https://example.org/t#x",)


def _engine(query: str) -> DecisionEngine:
    index = ingest_ontology(_sparql(query), "text/turtle").index.with_version("t-v1")
    return DecisionEngine(index)


def test_a_long_running_rule_is_stopped_by_the_time_limit() -> None:
    engine = _engine(
        "CONSTRUCT { $this ex:needs ?a } WHERE { $this a tv:Case . ?a ?b ?c . ?d ?e ?f . "
        "?g ?h ?i . ?j ?k ?l . ?m ?n ?o . ?p ?q ?r . ?s ?t ?u . "
        "FILTER (STR(?a) = STR(?u) && STR(?a) = 'never') }"
    )
    with pytest.raises(RuleTimeout) as caught:
        engine.decide("A gadget.", evaluation_date=date(2026, 12, 1), timeout_s=0.3)
    assert "0.3 s limit" in caught.value.detail
    assert caught.value.extra["rule"] in ("https://example.org/t#r", "the rules")
    assert isinstance(caught.value, TenetError)


def test_a_rule_that_never_reaches_a_fixpoint_is_stopped() -> None:
    engine = _engine("CONSTRUCT { $this ex:step [ ex:of ?o ] } WHERE { $this ?p ?o }")
    with pytest.raises((RuleLoop, RuleTimeout)) as caught:
        engine.decide("A gadget.", evaluation_date=date(2026, 12, 1), timeout_s=5.0)
    assert "https://example.org/t#r" in caught.value.detail or "limit" in caught.value.detail


def test_the_limit_counts_the_rules_cpu_time_not_the_wall_clock() -> None:
    # Time the evaluating thread does not run (a loaded machine, a wait for the engine's
    # lock; sleeping stands for both) does not count; its own work does, and stops it.
    limit = _Limit(0.2)
    time.sleep(0.4)
    assert not limit.expired()
    started = time.thread_time()
    while not limit.expired():
        sum(range(1000))
    assert 0.15 <= time.thread_time() - started <= 0.5


def test_a_sound_rule_decides_within_a_small_limit_after_a_long_wait() -> None:
    engine = _engine("CONSTRUCT { $this ex:needs ex:a1 } WHERE { $this a tv:Case }")
    decision = engine.decide("A gadget.", evaluation_date=date(2026, 12, 1), timeout_s=0.5)
    with engine.rules._lock:  # another evaluation holding the engine
        waiting = _evaluate_later(engine, decision.case)
        time.sleep(0.8)
    assert waiting.result(timeout=30).status == decision.status == "decided"


def _evaluate_later(engine: DecisionEngine, case: CaseGraph) -> Future[Decision]:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(engine.evaluate, case, timeout_s=0.5)
    pool.shutdown(wait=False)
    return future
