"""The case graph of a request over the bundled AML ontology (real spaCy, jieba and linking)."""

from __future__ import annotations

from datetime import date

from reasoning.case.build import build_case
from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseGraph
from reasoning.premises import extract_premises

AML = "https://tenet.dev/ontologies/aml#"
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
MENTIONS = "<https://tenet.dev/ns/views#mentions>"


def _case(lexicon: CaseLexicon, text: str) -> CaseGraph:
    return build_case(lexicon, text, premises=extract_premises(text), evaluation_date=date(2026, 12, 1))


def _relations(case: CaseGraph) -> set[tuple[str, str, str]]:
    def short(term: str) -> str:
        return term.strip("<>").rsplit("#", 1)[-1].rsplit(":", 1)[-1]

    return {(short(f.subject), short(f.predicate), short(f.object)) for f in case.facts
            if f.origin in ("relation", "apposition")}


def test_english_case_with_known_parties(aml_lexicon: CaseLexicon) -> None:
    text = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list."
    case = _case(aml_lexicon, text)
    assert _relations(case) == {("AcmeLtd", "sentFundsTo", "JonDoe"), ("JonDoe", "listedOn", "pepList"),
                                ("AcmeLtd", "registeredIn", "CY")}
    mentioned = {f.object for f in case.facts if f.predicate == MENTIONS}
    assert {f"<{AML}AcmeLtd>", f"<{AML}JonDoe>", f"<{AML}CY>"} <= mentioned
    inputs = {f.predicate: f.object for f in case.facts if f.origin == "input"}
    assert inputs[f"<{AML}amount>"].startswith('"2000000"') and inputs[f"<{AML}currency>"] == '"EUR"'
    assert any(f.origin == "default" and f.predicate == f"<{AML}valueDate>" for f in case.facts)
    assert all(text[f.start:f.end] == f.text for f in case.facts if f.start is not None)


def test_chinese_case(aml_lexicon: CaseLexicon) -> None:
    case = _case(aml_lexicon, "阿克米有限公司（塞浦路斯）向乔恩·多伊转账200万欧元，乔恩·多伊在我们的PEP名单上。")
    assert _relations(case) == {("AcmeLtd", "sentFundsTo", "JonDoe"), ("JonDoe", "listedOn", "pepList"),
                                ("AcmeLtd", "registeredIn", "CY")}
    assert not any(e.is_new for e in case.entities)


def test_new_individuals_classes_and_apposition(aml_lexicon: CaseLexicon) -> None:
    case = _case(aml_lexicon, "Foo Corp, a company registered in Panama, sent USD 3m to Bar Baz, "
                              "a politically exposed person.")
    new = {e.label: e.term for e in case.entities if e.is_new}
    assert set(new) == {"Foo Corp", "Bar Baz"}
    types = {(f.subject, f.object) for f in case.facts if f.predicate == TYPE}
    assert (new["Bar Baz"], f"<{AML}PoliticallyExposedPerson>") in types
    assert (new["Bar Baz"], f"<{AML}NaturalPerson>") in types  # superclass
    assert (new["Foo Corp"], f"<{AML}Organisation>") in types  # the domain of "registered in"
    assert _relations(case) >= {("e1", "registeredIn", "PA"), ("e1", "sentFundsTo", "e2")}


def test_negated_statements_are_not_facts(aml_lexicon: CaseLexicon) -> None:
    case = _case(aml_lexicon, "Bar Baz is not a politically exposed person. Foo Corp is not registered "
                              "in Panama.")
    assert not any(f.object == f"<{AML}PoliticallyExposedPerson>" for f in case.facts)
    assert not _relations(case)


def test_premise_facts_carry_the_premise_and_retract_alone(aml_lexicon: CaseLexicon) -> None:
    text = "Assume the tax rate is 20% and the customer is a politically exposed person. Acme Ltd paid."
    case = _case(aml_lexicon, text)
    pep_facts = [f for f in case.facts if f.object == f"<{AML}PoliticallyExposedPerson>"]
    assert pep_facts and {f.premise_id for f in pep_facts} == {"p2"}
    kept = case.without_premises(["p1"])
    assert kept.triples() == case.triples()
    dropped = case.without_premises(["p2"])
    assert not any(f.premise_id == "p2" for f in dropped.facts)
    assert any(f.object == f"<{AML}AcmeLtd>" for f in dropped.facts)
