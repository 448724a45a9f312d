"""The symbolic claim check against a decision, English and Chinese."""

from __future__ import annotations

from datetime import date

import pytest

from reasoning.rules.claims import ClaimChecker
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.model import Decision

PEP_CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list."
SANCTIONS_CASE = "Acme Ltd sent EUR 50,000 to Northwind GmbH."
QUIET_CASE = "Acme Ltd sent EUR 5,000 to Maria Ioannou."


@pytest.fixture(scope="module")
def decisions(aml_engine: DecisionEngine) -> dict[str, Decision]:
    return {text: aml_engine.decide(text, evaluation_date=date(2026, 12, 1))
            for text in (PEP_CASE, SANCTIONS_CASE, QUIET_CASE)}


@pytest.mark.parametrize(("case", "claim", "kind"), [
    (PEP_CASE, "The 2 million EUR transfer from Acme Ltd in Cyprus should not be escalated.", "negation"),
    (PEP_CASE, "No enhanced due diligence is needed here.", "negation"),
    (PEP_CASE, "该转账不需要上报。", "negation"),
    (PEP_CASE, "This transfer needs EDD and escalation to the MLRO under AML-R-017.", None),
    (PEP_CASE, "The analyst escalates it, but no SAR is filed.", None),
    (PEP_CASE, "A suspicious activity report must be filed.", "unrequired"),
    (SANCTIONS_CASE, "The payment goes ahead.", "conflict"),
    (SANCTIONS_CASE, "付款应被拦截，资产冻结。", None),
    (SANCTIONS_CASE, "The payment is blocked and the assets are frozen (AML-R-021).", None),
    (QUIET_CASE, "The transfer must be escalated to the MLRO.", "unrequired"),
    (QUIET_CASE, "No rule requires escalation for this transfer.", None),
    (QUIET_CASE, "Acme Ltd is registered in Cyprus.", None),
])
def test_claims(aml_engine: DecisionEngine, decisions: dict[str, Decision], case: str, claim: str,
                kind: str | None) -> None:
    verdict = aml_engine.check_claim(claim, decisions[case])
    assert (verdict.contradicts, verdict.kind) == (kind is not None, kind)
    if kind is not None:
        assert verdict.action and verdict.reason


def test_a_denial_names_the_rules_it_contradicts(aml_engine: DecisionEngine,
                                                decisions: dict[str, Decision]) -> None:
    verdict = aml_engine.check_claim("This should not be escalated.", decisions[PEP_CASE])
    assert set(verdict.rule_ids) == {"AML-R-017", "AML-R-024"}


def test_a_checker_that_kept_earlier_clauses_judges_as_a_fresh_one(
    aml_engine: DecisionEngine, decisions: dict[str, Decision]
) -> None:
    # The decoder asks about every prefix of a sentence; the checker keeps each clause's
    # actions, so a later prefix must still be judged on its own clauses.
    sentence = "The analyst escalates it, but no SAR is filed, and the case should not be escalated."
    warm = aml_engine.claims
    for case in (PEP_CASE, QUIET_CASE):
        for end in range(1, len(sentence) + 1):
            fresh = ClaimChecker(aml_engine.lexicon)
            assert warm.check(sentence[:end], decisions[case]) == fresh.check(sentence[:end], decisions[case])
    assert warm.check(sentence, decisions[PEP_CASE]).kind == "negation"
