"""A no-rule answer of the real pipeline names the rule that came nearest, in English and Chinese.

Real model, the food-imports test domain (tests/data/imports.ttl, a domain no
code mentions, ingested here), short decodes with steering: after the decision
sentence the answer states why nothing applies (``reasoning.rules.nearest``),
in full when the budget leaves room, else its brief form.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.loader import LoadedModel
from inference.pipeline import Reasoner, ReasonOptions
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology

IMPORTS_TTL = Path(__file__).resolve().parents[1] / "data" / "imports.ttl"
REQUESTS = {
    "en": "Nord Foods imports from Freedonia a consignment declared at EUR 50,000. Which checks are needed?",
    "zh": "诺德食品从自由尼亚进口一批货物，申报价值5万欧元。需要哪些检查？",
}


@pytest.fixture(scope="module")
def imports() -> OntologyIndex:
    return ingest_ontology(IMPORTS_TTL.read_bytes(), "text/turtle").index.with_version("imports-whynot")


def _answer(model: LoadedModel, index: OntologyIndex, lang: str, max_new_tokens: int) -> tuple[str, str, str]:
    """(answer, the nearest rule's id, its full why-not) of the language's request."""
    options = ReasonOptions(max_new_tokens=max_new_tokens, num_beams=1, counterfactual=False,
                            evidence_token_budget=96)
    reasoner = Reasoner(model=model)
    plan = reasoner.plan(REQUESTS[lang], options=options, domain_index=index)
    result = reasoner.run(plan)
    decision = result.decision
    assert decision is not None and decision.status == "no_rule_applies" and decision.nearest is not None
    return result.answer, decision.nearest.rule_id, decision.nearest.statement(lang)


@pytest.mark.model
@pytest.mark.parametrize(("lang", "budget"), [("en", 64), ("zh", 96)])
def test_a_no_rule_answer_says_why_not(loaded_model: LoadedModel, imports: OntologyIndex, lang: str,
                                       budget: int) -> None:
    answer, rule, why_not = _answer(loaded_model, imports, lang, budget)
    decision = "No rule requires an action for this case." if lang == "en" else "规则未要求本案采取任何措施。"
    assert answer.startswith(decision), answer
    # The whole why-not, cited, right after the decision sentence.
    assert rule == "FI-9" and why_not[:-1] in answer, answer


@pytest.mark.model
def test_a_tight_budget_still_names_the_nearest_rule(loaded_model: LoadedModel, imports: OntologyIndex) -> None:
    answer, rule, why_not = _answer(loaded_model, imports, "en", 28)
    assert why_not[:-1] not in answer and f"The nearest rule is {rule}." in answer, answer
