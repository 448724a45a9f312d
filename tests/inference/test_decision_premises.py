"""Premises in the rules stage: amended premises are re-read, retracted ones drop exactly their facts.

Real premise extraction, real case graph, the bundled AML domain's real rules
(``inference.decisions.decide``, the rules stage of the pipeline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date

import pytest

from inference.decisions import decide
from reasoning.case.amend import amend_request
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.linking import link_mentions
from reasoning.premises import extract_premises
from reasoning.rules.model import Decision

TODAY = date(2026, 12, 1)
PEP = "https://tenet.dev/ontologies/aml#PoliticallyExposedPerson"
TWO = (
    "Assume the tax rate is 20% and the customer is a politically exposed person. "
    "Acme Ltd paid EUR 10,000 to the customer. Should the payment be escalated?"
)
COMPANY = (
    "Assume the customer is a company. "
    "Acme Ltd paid EUR 10,000 to the customer. Should the payment be escalated?"
)


@pytest.fixture(scope="module")
def index() -> OntologyIndex:
    data = dict(bundled_domains())["aml"].read_bytes()
    return ingest_ontology(data, "text/turtle").index.with_version("aml-premises-test")


def _decide(
    index: OntologyIndex,
    text: str,
    *,
    retracted: Sequence[str] = (),
    amended: Mapping[str, str] | None = None,
) -> Decision:
    decision = decide(
        index,
        text,
        premises=extract_premises(text),
        retracted=retracted,
        linked=link_mentions(index, text),
        today=TODAY,
        amended=amended,
    )
    assert decision is not None
    return decision


def _actions(decision: Decision) -> set[str]:
    return {a.rsplit("#", 1)[1] for a in decision.actions()}


def _spans_hold(decision: Decision, text: str) -> bool:
    facts = [f for c in decision.conclusions for f in c.case_facts] + list(decision.case.facts)
    return all(
        text[f.start : f.end] == f.text for f in facts if f.start is not None and f.end is not None
    )


def test_one_sentence_two_premises_retracting_one_keeps_the_other(index: OntologyIndex) -> None:
    tax, pep = extract_premises(TWO)
    assert (tax.topic, pep.topic) == ("tax rate", "customer")
    before = _decide(index, TWO)
    assert _actions(before) == {"act-edd", "act-escalate"}
    assert {p for c in before.conclusions for p in c.premise_ids} == {pep.id}
    after = _decide(index, TWO, retracted=[tax.id])
    assert _actions(after) == _actions(before)
    assert {p for c in after.conclusions for p in c.premise_ids} == {pep.id}
    assert after.case.triples() == before.case.triples()
    dropped = _decide(index, TWO, retracted=[pep.id])
    assert dropped.status == "no_rule_applies"
    assert not any(f.premise_id == pep.id for f in dropped.case.facts)
    assert dropped.case.triples() < before.case.triples()


def test_an_amended_premise_is_read_again(index: OntologyIndex) -> None:
    _, pep = extract_premises(TWO)
    amended = _decide(index, TWO, amended={pep.id: "the customer is a company"})
    assert amended.status == "no_rule_applies", amended
    assert not any(f.object == f"<{PEP}>" for f in amended.case.facts)
    assert _spans_hold(amended, TWO)
    # The other way round: an amendment that now states a PEP decides escalation, its facts
    # carry the premise id and have no offsets in the request (their words are not in it).
    (company,) = extract_premises(COMPANY)
    assert _decide(index, COMPANY).status == "no_rule_applies"
    now_pep = _decide(
        index, COMPANY, amended={company.id: "the customer is a politically exposed person"}
    )
    assert _actions(now_pep) == {"act-edd", "act-escalate"}
    assert {p for c in now_pep.conclusions for p in c.premise_ids} == {company.id}
    read = [f for f in now_pep.case.facts if f.object == f"<{PEP}>"]
    assert read and all(f.premise_id == company.id and f.start is None for f in read)
    assert all("politically exposed person" in f.text for f in read)
    assert _spans_hold(now_pep, COMPANY)


def test_an_amended_value_shifts_nothing_else(index: OntologyIndex) -> None:
    tax, pep = extract_premises(TWO)
    before = _decide(index, TWO)
    longer = _decide(index, TWO, amended={tax.id: "Assume the tax rate is 17.25 percent"})
    assert _actions(longer) == _actions(before)
    assert _spans_hold(longer, TWO)
    # The same facts at the same offsets of the request (the case node's IRI names its text).
    assert _premise_facts(before, pep.id) == _premise_facts(longer, pep.id)


def _premise_facts(decision: Decision, premise_id: str) -> set[tuple[str, ...]]:
    node = decision.case.case[:-1]
    return {
        (*(t.replace(node, "<case") for t in f.triple), str(f.start), str(f.end))
        for f in decision.case.facts
        if f.premise_id == premise_id
    }


def test_amend_request_places_the_new_text_and_moves_later_spans() -> None:
    tax, pep = extract_premises(TWO)
    request = amend_request(TWO, [tax, pep], {tax.id: "Assume the tax rate is 7.5%"})
    assert request.text.startswith("Assume the tax rate is 7.5% and the customer is a")
    moved = {p.id: p for p in request.premises}
    for p in moved.values():
        assert p.source is not None and request.text[p.source.start : p.source.end] == p.source.text
    assert moved[tax.id].text == "Assume the tax rate is 7.5%"
    pep_source = moved[pep.id].source
    assert pep_source is not None and pep_source.text == pep.text
    unchanged = amend_request(TWO, [tax, pep], {tax.id: tax.text})
    assert not unchanged.changed and unchanged.text == TWO
