"""Counterfactual variants drawn from a domain's ontology: the lines its rules read, siblings.

The food-imports domain (tests/data/imports.ttl) is one no code mentions: the
thresholds come from its rules' FILTERs and the constants they read, the
siblings from its classes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoning.counterfactual import Threshold, cross_threshold, variants
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import LinkedEntity
from reasoning.evidence.siblings import sibling_lexicon
from reasoning.rules.engine import RuleBook
from reasoning.rules.thresholds import rule_thresholds

IMPORTS_TTL = Path(__file__).resolve().parents[1] / "data" / "imports.ttl"
FI = "https://example.org/food-imports#"


@pytest.fixture(scope="module")
def index() -> OntologyIndex:
    return ingest_ontology(IMPORTS_TTL.read_bytes(), "text/turtle").index.with_version("imports-cf")


@pytest.fixture(scope="module")
def lines(index: OntologyIndex) -> tuple[Threshold, ...]:
    return rule_thresholds(RuleBook(index))


def _linked(name: str) -> LinkedEntity:
    return LinkedEntity(iri=FI + name, label=name, mention=name, start=0, end=len(name), score=1.0)


def test_the_rules_thresholds_are_read_from_the_ontology(lines: tuple[Threshold, ...]) -> None:
    # FI-9 and FI-2: a declared value above their limits; FI-4: below its floor. Each limit is a
    # constant the rule reads from its regulation ('fi:FI-9 fi:valueLimit ?limit'), said from the
    # case's side; no rule compares a date.
    assert {(t.op, t.value, t.dated) for t in lines} == {
        (">", "100000", False),
        (">", "10000", False),
        ("<", "1000", False),
    }


def test_a_stated_value_moves_to_the_other_side_of_the_nearest_line(
    lines: tuple[Threshold, ...],
) -> None:
    above = cross_threshold("The consignment was declared at EUR 150,000.", lines)
    assert above is not None and above.kind == "threshold"
    assert above.text == "The consignment was declared at EUR 90,000."
    below = cross_threshold("The consignment was declared at EUR 80,000.", lines)
    assert below is not None and below.replacement == "110,000"
    floor = cross_threshold("It was declared at EUR 500.", lines)
    assert floor is not None and floor.replacement == "1100"  # no longer under the floor
    # A number far from every line (a count), a list marker, a year: no threshold reads them.
    assert cross_threshold("1. Nord Foods shipped 3 crates in 2024.", lines) is None


def test_a_date_moves_across_a_dated_line() -> None:
    since = Threshold(op=">=", value="2020-01-01", dated=True)
    moved = cross_threshold("The rule is in force since 2021-03-04.", [since])
    assert moved is not None and moved.replacement == "2019-01-01"
    before = cross_threshold("It was filed on 2018-06-30.", [since])
    assert before is not None and before.replacement == "2021-01-01"


def test_threshold_variants_come_before_the_plain_number_shift(lines: tuple[Threshold, ...]) -> None:
    found = variants("Nord Foods declared EUR 150,000.", {}, limit=5, thresholds=lines)
    assert [v.kind for v in found] == ["threshold", "number"]
    assert variants("Nord Foods declared EUR 150,000.", {}, limit=5) == found[1:]


def test_siblings_are_the_other_members_of_an_individuals_class(index: OntologyIndex) -> None:
    lexicon = sibling_lexicon(index, [_linked("Ruritania"), _linked("NordFoods")])
    # Ruritania alone is a country under outbreak alert; it and Freedonia are countries.
    assert lexicon["Ruritania"] == lexicon["Freedonia"] == FI + "Country"
    found = variants("Nord Foods imports from Ruritania.", lexicon)
    assert any(v.kind == "entity" and v.replacement == "Freedonia" for v in found)
    # The one importer has no sibling: it keeps its own IRI, so no swap is made for it.
    assert lexicon["NordFoods"] == FI + "NordFoods"
