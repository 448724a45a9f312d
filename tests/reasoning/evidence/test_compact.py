"""Compact evidence: the facts a branch shows under a token budget, the cited ones always kept."""

from __future__ import annotations

from reasoning.evidence.compact import compact_facts, fact_tokens
from reasoning.evidence.model import EvidenceFact


def _fact(fid: str, subject: str, predicate: str, obj: str, text: str, score: float) -> EvidenceFact:
    return EvidenceFact(id=fid, subject=subject, predicate=predicate, object=obj, text=text, view="v",
                        score=score, hops=1, ontology_version="1")


RULE = _fact("E1", "R7", "states", '"Transfers to a PEP are escalated."', "R7 states Transfers to a PEP are escalated.", 0.1)
FIRED = _fact("E2", "JonDoe", "listedOn", "PEPList", "Jon Doe listed on PEP list.", 0.2)
FACTS = (
    RULE,
    _fact("E3", "Acme", "relatedTo", "Harbour", "Acme Ltd related to Harbour Trading Ltd.", 0.9),
    _fact("E4", "Harbour", "relatedTo", "Acme", "Harbour Trading Ltd related to Acme Ltd.", 0.8),
    FIRED,
    _fact("E5", "Acme", "registeredIn", "CY", "Acme Ltd registered in Cyprus.", 0.7),
    _fact("E6", "Acme2", "registeredIn", "CY", "acme ltd  registered in Cyprus", 0.6),
    _fact("E7", "Malta", "memberOf", "EU", "Malta member of European Union.", 0.3),
    _fact("E8", "Germany", "memberOf", "EU", "Germany member of European Union.", 0.2),
)


def _cited(fact: EvidenceFact) -> bool:
    return fact.id in {"E1", "E2"}


def test_cited_facts_stay_whatever_the_budget() -> None:
    kept = compact_facts(FACTS, keep=_cited, token_budget=0)
    assert kept == (RULE, FIRED)


def test_duplicates_go_and_the_rest_fit_the_budget_by_score_in_their_order() -> None:
    kept = compact_facts(FACTS, keep=_cited, token_budget=20)
    ids = [f.id for f in kept]
    assert ids == ["E1", "E3", "E2", "E5"]  # E4 reads E3 backwards, E6 says E5 again; E7, E8 do not fit
    assert fact_tokens([f for f in kept if not _cited(f)]) <= 20
    everything = compact_facts(FACTS, keep=_cited, token_budget=10_000)
    assert [f.id for f in everything] == ["E1", "E3", "E2", "E5", "E7", "E8"]


def test_a_literal_object_is_no_relation_to_read_backwards() -> None:
    a = _fact("E1", "X", "p", '"Y"', "X p Y.", 0.5)
    b = _fact("E2", '"Y"', "p", "X", "Y p X.", 0.4)
    assert compact_facts((a, b), keep=lambda f: False, token_budget=100) == (a, b)
