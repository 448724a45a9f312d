"""IRIs of the decision vocabulary (``ontologies/decisions.ttl``) and of SHACL.

The decision vocabulary shares the ``tv:`` namespace of the view vocabulary,
so an ontology that declares views and rules needs one prefix. Terms are the
N-Triples strings of :mod:`reasoning.evidence.terms`.
"""

from __future__ import annotations

from typing import Final

from reasoning.evidence.terms import TV, iri

__all__ = [
    "INPUT_KINDS",
    "SH",
    "SH_CONSTRUCT",
    "SH_DECLARE",
    "SH_NAMESPACE",
    "SH_OBJECT",
    "SH_PREDICATE",
    "SH_PREFIX",
    "SH_PREFIXES",
    "SH_RULE",
    "SH_SPARQL_RULE",
    "SH_SUBJECT",
    "SH_TARGET_CLASS",
    "SH_TRIPLE_RULE",
    "TV_CASE",
    "TV_CASE_INPUT",
    "TV_CONFLICTS_WITH",
    "TV_DECISION_PROPERTY",
    "TV_DEFAULTS_TO_EVALUATION_DATE",
    "TV_IMPLEMENTS",
    "TV_INPUT_KIND",
    "TV_MENTIONS",
    "TV_REQUIRES_INPUT",
    "TV_UNIT",
]

SH: Final = "http://www.w3.org/ns/shacl#"
SH_RULE: Final = iri(SH + "rule")
SH_SPARQL_RULE: Final = iri(SH + "SPARQLRule")
SH_TRIPLE_RULE: Final = iri(SH + "TripleRule")
SH_CONSTRUCT: Final = iri(SH + "construct")
SH_PREFIXES: Final = iri(SH + "prefixes")
SH_DECLARE: Final = iri(SH + "declare")
SH_PREFIX: Final = iri(SH + "prefix")
SH_NAMESPACE: Final = iri(SH + "namespace")
SH_SUBJECT: Final = iri(SH + "subject")
SH_PREDICATE: Final = iri(SH + "predicate")
SH_OBJECT: Final = iri(SH + "object")
SH_TARGET_CLASS: Final = iri(SH + "targetClass")

TV_CASE: Final = iri(TV + "Case")
TV_MENTIONS: Final = iri(TV + "mentions")
TV_DECISION_PROPERTY: Final = iri(TV + "DecisionProperty")
TV_CASE_INPUT: Final = iri(TV + "CaseInput")
TV_INPUT_KIND: Final = iri(TV + "inputKind")
TV_UNIT: Final = iri(TV + "unit")
TV_DEFAULTS_TO_EVALUATION_DATE: Final = iri(TV + "defaultsToEvaluationDate")
TV_IMPLEMENTS: Final = iri(TV + "implements")
TV_REQUIRES_INPUT: Final = iri(TV + "requiresInput")
TV_CONFLICTS_WITH: Final = iri(TV + "conflictsWith")

INPUT_KINDS: Final = {
    iri(TV + name): name
    for name in ("MoneyAmount", "Currency", "Date", "Percentage", "Count", "Length")
}
"""Input kind term -> its name, as :mod:`reasoning.case.quantities` reports it."""
