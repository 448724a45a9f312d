"""Upload-time checks of the decision rules an ontology declares.

Each SHACL rule (a node typed ``sh:SPARQLRule`` or ``sh:TripleRule``, or the
object of an ``sh:rule``) gets one :class:`~reasoning.evidence.report.RuleReport`.
A rule is refused (``ok`` False, with ``error`` saying why) when:

- it is the object of ``sh:rule`` but neither kind of rule;
- its ``sh:construct`` does not parse as a SPARQL query, once the prefixes it
  declares through ``sh:prefixes`` are applied;
- it is not a CONSTRUCT query, or it is a SPARQL Update (``INSERT``,
  ``DELETE``, ``LOAD``, ``CLEAR``, ...) - ``hostile`` is then True;
- it reaches outside the case: a ``SERVICE`` clause or a ``FROM`` /
  ``FROM NAMED`` dataset (rdflib would fetch them) - ``hostile`` is True;
- a ``sh:TripleRule`` lacks its ``sh:subject``, ``sh:predicate`` or ``sh:object``;
- pyshacl cannot load it on its shape.

The checks only parse: nothing is evaluated and nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from pyparsing import ParseException
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.parser import parseUpdate
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import Query

from reasoning.case.vocabulary import (
    SH_OBJECT,
    SH_PREDICATE,
    SH_SUBJECT,
    TV_DECISION_PROPERTY,
)
from reasoning.evidence.report import RuleReport
from reasoning.evidence.terms import RDF_TYPE, Triple, iri_value
from reasoning.rules.sources import RuleSource, prefix_block, read_rule_sources

__all__ = ["check_rules"]

_OUTSIDE: Final = frozenset({"ServiceGraphPattern"})
_ERROR_CHARS: Final = 300


def check_rules(triples: Sequence[Triple]) -> tuple[RuleReport, ...]:
    """One report per declared rule; ``ok`` False on any refusal (see the module doc)."""
    decision_properties = {s for s, p, o in triples if p == RDF_TYPE and o == TV_DECISION_PROPERTY}
    sources = read_rule_sources(triples)
    reports = [_check(source, decision_properties) for source in sources]
    if sources and all(r.ok for r in reports):
        failure = _pyshacl_failure(triples)
        if failure is not None:
            reports = [_refused(r, failure, hostile=False) for r in reports]
    return tuple(reports)


def _check(source: RuleSource, decision_properties: set[str]) -> RuleReport:
    base = RuleReport(
        id=iri_value(source.node),
        shape=iri_value(source.shape) if source.shape else None,
        kind=source.kind,
        implements=iri_value(source.implements) if source.implements else None,
        requires_inputs=tuple(iri_value(i) for i in source.inputs),
        ok=True,
    )
    if source.kind == "unknown":
        return _refused(base, "the object of sh:rule is neither a sh:SPARQLRule nor a "
                              "sh:TripleRule", hostile=False)
    if source.shape is None:
        return _refused(base, "the rule is not attached to a shape by sh:rule", hostile=False)
    if source.kind == "triple":
        missing = [name for term, name in ((SH_SUBJECT, "sh:subject"), (SH_PREDICATE, "sh:predicate"),
                                           (SH_OBJECT, "sh:object"))
                   if term not in source.triple_parts]
        if missing:
            return _refused(base, "the sh:TripleRule lacks " + ", ".join(missing), hostile=False)
        predicate = source.triple_parts[SH_PREDICATE]
        return _with(base, decides=(iri_value(predicate),) if predicate in decision_properties
                     else ())
    if not source.constructs:
        return _refused(base, "the sh:SPARQLRule has no sh:construct", hostile=False)
    decides: set[str] = set()
    for text in source.constructs:
        problem, hostile, query = parse_rule_query(text, source.prefixes)
        if problem is not None:
            return _refused(base, problem, hostile=hostile)
        assert query is not None
        decides.update(p for p in _template_predicates(query) if f"<{p}>" in decision_properties)
    return _with(base, decides=tuple(sorted(decides)))


def parse_rule_query(text: str, prefixes: dict[str, str]) -> tuple[str | None, bool, Query | None]:
    """``(problem, hostile, query)`` of one ``sh:construct`` text.

    ``problem`` is None for an acceptable CONSTRUCT query; ``$this`` is read
    as the variable SHACL binds to the focus node.
    """
    full = prefix_block(prefixes) + text
    try:
        query = prepareQuery(full)
    except ParseException as exc:
        if _is_update(full):
            return "SPARQL updates (INSERT, DELETE, LOAD, CLEAR, ...) are not allowed in a rule", \
                True, None
        return f"the SPARQL does not parse: {_short(str(exc))}", False, None
    except Exception as exc:  # noqa: BLE001 - rdflib raises bare exceptions (unknown prefixes, ...)
        return f"the SPARQL does not parse: {_short(str(exc))}", False, None
    if query.algebra.name != "ConstructQuery":
        return f"a rule must be a CONSTRUCT query, not {query.algebra.name}", False, None
    if query.algebra.get("datasetClause"):
        return "FROM and FROM NAMED are not allowed in a rule (they load remote graphs)", True, None
    names = set(_algebra_names(query.algebra))
    if names & _OUTSIDE:
        return "SPARQL SERVICE is not allowed in a rule (it calls out of the service)", True, None
    return None, False, query


def _is_update(text: str) -> bool:
    try:
        parseUpdate(text)
    except Exception:  # noqa: BLE001 - any failure means "not an update"
        return bool(re.search(r"\b(?:INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|COPY|MOVE|ADD)\b", text,
                              re.IGNORECASE))
    return True


def _algebra_names(node: Any) -> Iterable[str]:
    if isinstance(node, CompValue):
        yield node.name
        for value in node.values():
            yield from _algebra_names(value)
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _algebra_names(item)


def _template_predicates(query: Query) -> set[str]:
    template = query.algebra.get("template") or ()
    return {str(p) for _, p, _ in template}


def _pyshacl_failure(triples: Sequence[Triple]) -> str | None:
    """pyshacl's own refusal of the rules (None when it loads every one)."""
    from reasoning.rules.shapes import load_rules

    try:
        load_rules(triples)
    except Exception as exc:  # noqa: BLE001 - pyshacl raises its own hierarchy and plain errors
        return f"pyshacl cannot load the rules: {_short(str(exc))}"
    return None


def _short(message: str) -> str:
    message = " ".join(message.split())
    return message if len(message) <= _ERROR_CHARS else message[:_ERROR_CHARS] + "..."


def _with(base: RuleReport, *, decides: tuple[str, ...]) -> RuleReport:
    return RuleReport(id=base.id, shape=base.shape, kind=base.kind, implements=base.implements,
                      requires_inputs=base.requires_inputs, decides=decides, ok=True)


def _refused(base: RuleReport, error: str, *, hostile: bool) -> RuleReport:
    return RuleReport(id=base.id, shape=base.shape, kind=base.kind, implements=base.implements,
                      requires_inputs=base.requires_inputs, decides=base.decides, ok=False,
                      error=error, hostile=hostile)
