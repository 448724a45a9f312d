"""Relations of the case graph read from an ontology's own labels, in a domain no code mentions.

Inflected label words, ``owl:inverseOf``, locative appositions ("X in Y",
"Y的X"), a new name with a parenthetical in a label's gap, and a passive
"by" that turns a relation round.
"""

from __future__ import annotations

from datetime import date

import pytest

from reasoning.case.build import build_case
from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseGraph
from reasoning.evidence.ingest import ingest_ontology

_SP = "https://example.org/shipping#"
_TTL = """
@prefix sp: <https://example.org/shipping#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
sp:Vessel a owl:Class ; rdfs:label "vessel"@en , "船舶"@zh ; owl:disjointWith sp:Operator .
sp:Operator a owl:Class ; rdfs:label "operator"@en , "运营商"@zh ; skos:altLabel "公司"@zh .
sp:Port a owl:Class ; rdfs:label "port"@en , "港口"@zh .
sp:Shipment a owl:Class ; rdfs:label "shipment"@en ; owl:disjointWith sp:Operator .
sp:shipper a owl:ObjectProperty ; rdfs:label "shipper"@en ; skos:altLabel "from"@en ;
    rdfs:domain sp:Shipment ; rdfs:range sp:Operator .
sp:consignee a owl:ObjectProperty ; rdfs:label "consignee"@en ; skos:altLabel "to"@en ;
    rdfs:domain sp:Shipment ; rdfs:range sp:Operator .
sp:registeredAt a owl:ObjectProperty ; rdfs:label "registers at"@en , "登记于"@zh ;
    rdfs:domain sp:Vessel ; rdfs:range sp:Port .
sp:basedAt a owl:ObjectProperty ; rdfs:label "based at"@en , "总部位于"@zh ;
    rdfs:domain sp:Operator ; rdfs:range sp:Port .
sp:purchasesFrom a owl:ObjectProperty ; rdfs:label "purchases ... from"@en , "从…购买"@zh ;
    skos:altLabel "收到…的货物"@zh ;
    rdfs:domain sp:Operator ; rdfs:range sp:Operator .
sp:sellsTo a owl:ObjectProperty ; owl:inverseOf sp:purchasesFrom ;
    rdfs:label "sells to"@en , "向…出售"@zh .
sp:supplies a owl:ObjectProperty ; rdfs:label "supplies"@en ;
    rdfs:domain sp:Operator ; rdfs:range sp:Operator .
sp:Rotterdam a sp:Port ; rdfs:label "Rotterdam"@en , "鹿特丹"@zh .
sp:Piraeus a sp:Port ; rdfs:label "Piraeus"@en , "比雷埃夫斯"@zh .
sp:SeaStar a sp:Vessel ; rdfs:label "Sea Star"@en , "海星号"@zh .
sp:NordicLines a sp:Operator ; rdfs:label "Nordic Lines"@en , "北欧航运"@zh .
sp:BlueOcean a sp:Operator ; rdfs:label "Blue Ocean"@en , "蓝洋"@zh .
"""


@pytest.fixture(scope="module")
def lexicon() -> CaseLexicon:
    return CaseLexicon(ingest_ontology(_TTL.encode(), "text/turtle").index.with_version("sp-v1"))


def _relations(case: CaseGraph) -> set[tuple[str, str, str]]:
    def short(term: str) -> str:
        return term.strip("<>").removeprefix(_SP)

    return {
        (short(f.subject), short(f.predicate), short(f.object))
        for f in case.facts
        if f.origin in ("relation", "apposition", "inverse")
    }


def _case(lexicon: CaseLexicon, text: str) -> set[tuple[str, str, str]]:
    return _relations(build_case(lexicon, text, evaluation_date=date(2026, 12, 1)))


@pytest.mark.parametrize("verb", ["registered at", "is registering at", "registers at"])
def test_label_words_match_in_any_inflection(lexicon: CaseLexicon, verb: str) -> None:
    assert ("SeaStar", "registeredAt", "Rotterdam") in _case(lexicon, f"Sea Star {verb} Rotterdam.")


def test_a_relation_states_its_declared_inverse(lexicon: CaseLexicon) -> None:
    facts = _case(lexicon, "Nordic Lines purchased fuel from Blue Ocean.")
    assert {
        ("NordicLines", "purchasesFrom", "BlueOcean"),
        ("BlueOcean", "sellsTo", "NordicLines"),
    } <= facts
    facts = _case(lexicon, "蓝洋向北欧航运出售燃料。")
    assert {
        ("BlueOcean", "sellsTo", "NordicLines"),
        ("NordicLines", "purchasesFrom", "BlueOcean"),
    } <= facts


def test_locative_appositions(lexicon: CaseLexicon) -> None:
    assert ("BlueOcean", "basedAt", "Piraeus") in _case(
        lexicon, "Blue Ocean in Piraeus sells to Nordic Lines."
    )
    assert ("BlueOcean", "basedAt", "Piraeus") in _case(
        lexicon, "比雷埃夫斯的蓝洋向北欧航运出售燃料。"
    )
    # The text's own relation wins over a locative reading.
    facts = _case(lexicon, "Sea Star, registered at Piraeus, in Rotterdam.")
    assert ("SeaStar", "registeredAt", "Piraeus") in facts
    assert ("SeaStar", "registeredAt", "Rotterdam") not in facts


def test_a_new_name_with_a_parenthetical_in_a_label_gap(lexicon: CaseLexicon) -> None:
    case = build_case(
        lexicon, "北欧航运从海风公司（鹿特丹）购买燃料。", evaluation_date=date(2026, 12, 1)
    )
    (new,) = [e for e in case.entities if e.is_new]
    assert new.label == "海风公司"
    facts = _relations(case)
    name = new.term.strip("<>")
    assert ("NordicLines", "purchasesFrom", name) in facts
    assert (name, "basedAt", "Rotterdam") in facts
    assert any(f.subject == new.term and f.object == f"<{_SP}Operator>" for f in case.facts)


def test_a_passive_by_turns_a_relation_round(lexicon: CaseLexicon) -> None:
    assert ("NordicLines", "supplies", "BlueOcean") in _case(
        lexicon, "Nordic Lines supplies Blue Ocean."
    )
    assert ("NordicLines", "supplies", "BlueOcean") not in _case(
        lexicon, "Nordic Lines is supplied by Blue Ocean."
    )


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        (
            "Blue Ocean is based at Piraeus. It sells to Nordic Lines.",
            ("BlueOcean", "sellsTo", "NordicLines"),
        ),
        (
            "Nordic Lines is based at Rotterdam. Blue Ocean sells to them.",
            ("BlueOcean", "sellsTo", "NordicLines"),
        ),
        ("蓝洋总部位于比雷埃夫斯。它向北欧航运出售燃料。", ("BlueOcean", "sellsTo", "NordicLines")),
        ("北欧航运总部位于鹿特丹。蓝洋向它出售燃料。", ("BlueOcean", "sellsTo", "NordicLines")),
    ],
)
def test_a_pronoun_refers_to_an_earlier_sentences_entity(
    lexicon: CaseLexicon, text: str, fact: tuple[str, str, str]
) -> None:
    facts = _case(lexicon, text)
    assert fact in facts
    assert not any(s == "Piraeus" or o == "Piraeus" for s, p, o in facts if p == "sellsTo")


@pytest.mark.parametrize("text", ["北欧航运收到蓝洋的货物。", "北欧航运收到蓝洋的一批货物。"])
def test_a_chinese_label_reads_through_a_numeral_and_measure_word(
    lexicon: CaseLexicon, text: str
) -> None:
    assert ("NordicLines", "purchasesFrom", "BlueOcean") in _case(lexicon, text)


def test_the_case_is_the_subject_of_a_relation_its_class_phrase_admits(
    lexicon: CaseLexicon,
) -> None:
    case = build_case(
        lexicon,
        "A shipment of fuel from Blue Ocean to Nordic Lines arrived.",
        evaluation_date=date(2026, 12, 1),
    )
    on_case = {(f.predicate, f.object) for f in case.facts if f.subject == case.case}
    assert {
        (f"<{_SP}shipper>", f"<{_SP}BlueOcean>"),
        (f"<{_SP}consignee>", f"<{_SP}NordicLines>"),
    } <= on_case
    # Without such a class phrase nothing is said of the case ("from" alone is no shipment).
    plain = build_case(
        lexicon, "Nordic Lines purchased fuel from Blue Ocean.", evaluation_date=date(2026, 12, 1)
    )
    assert not any(
        f.subject == plain.case and f.predicate == f"<{_SP}shipper>" for f in plain.facts
    )
