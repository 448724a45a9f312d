"""Upload-time checks of the decision rules and of every SPARQL text an ontology declares.

Each SHACL rule (a node typed ``sh:SPARQLRule`` or ``sh:TripleRule``, or the
object of an ``sh:rule``) gets one :class:`~reasoning.evidence.report.RuleReport`.
A rule is refused (``ok`` False, with ``error`` saying why) when:

- it is the object of ``sh:rule`` but neither kind of rule;
- its ``sh:construct`` does not pass :func:`parse_sparql` (below);
- a ``sh:TripleRule`` lacks its ``sh:subject``, ``sh:predicate`` or ``sh:object``;
- pyshacl cannot load it on its shape.

Every SPARQL text of the ontology, wherever it sits (``sh:construct``,
``sh:select`` of SPARQL targets, constraints and functions, ``sh:ask``,
``sh:update``; see :func:`~reasoning.rules.sources.read_sparql_texts`), gets one
:class:`~reasoning.evidence.report.SparqlReport` from the same checker,
:func:`parse_sparql`, which refuses a text when:

- it does not parse as SPARQL once the prefixes its node declares through
  ``sh:prefixes`` are applied, or it is not the query form its property
  requires (CONSTRUCT, SELECT, ASK);
- it is a SPARQL Update (``INSERT``, ``DELETE``, ``LOAD``, ``CLEAR``, ...) -
  ``hostile`` is then True;
- it reaches outside the case anywhere in its algebra (``FILTER EXISTS`` and
  sub-queries included): a ``SERVICE`` clause or a ``FROM`` / ``FROM NAMED``
  dataset - ``hostile`` is True;
- it is a ``sh:select`` or ``sh:ask`` holding ``MINUS`` or ``VALUES``
  (pyshacl refuses those when it evaluates a SPARQL constraint);
- a constant regular expression of ``regex`` or ``replace`` cannot run on RE2
  (backreferences, look-around), the engine evaluation uses
  (:mod:`reasoning.rules.sandbox`).

Every ``sh:pattern`` is checked the same way. The checks only parse: nothing
is evaluated and nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from pyparsing import ParseException
from rdflib import Literal
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
from reasoning.evidence.report import RuleReport, SparqlReport
from reasoning.evidence.terms import RDF_TYPE, Triple, iri_value
from reasoning.rules.sandbox import regex_problem
from reasoning.rules.sources import (
    RuleSource,
    prefix_block,
    read_patterns,
    read_rule_sources,
    read_sparql_texts,
)

__all__ = ["check_rules", "check_sparql_texts", "parse_rule_query", "parse_sparql"]

_OUTSIDE: Final = frozenset({"ServiceGraphPattern"})
_UPDATES: Final = frozenset({
    "Load", "Clear", "Drop", "Create", "Add", "Move", "Copy", "InsertData", "DeleteData",
    "DeleteWhere", "Modify",
})
_CONSTRAINT_REFUSED: Final = frozenset({"Minus", "values"})
_FORMS: Final = {"construct": "ConstructQuery", "select": "SelectQuery", "ask": "AskQuery"}
_REGEX_FLAGS: Final = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE}
_SH: Final = "http://www.w3.org/ns/shacl#"
_UPDATE_REFUSED: Final = ("SPARQL updates (INSERT, DELETE, LOAD, CLEAR, ...) are not allowed in "
                          "an ontology")
_FROM_REFUSED: Final = ("FROM and FROM NAMED are not allowed in an ontology's SPARQL (they load "
                        "remote graphs)")
_SERVICE_REFUSED: Final = ("SPARQL SERVICE is not allowed in an ontology's SPARQL (it calls out "
                           "of the service)")
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
    """``(problem, hostile, query)`` of one ``sh:construct`` text (:func:`parse_sparql`)."""
    return parse_sparql(text, prefixes, form="construct")


def parse_sparql(
    text: str, prefixes: dict[str, str], *, form: str
) -> tuple[str | None, bool, Query | None]:
    """``(problem, hostile, query)`` of one SPARQL text that must be a ``form`` query.

    ``form`` is ``construct``, ``select`` or ``ask`` (``update`` is always
    refused). ``problem`` is None for an acceptable query; ``$this`` and the
    other SHACL pre-bound names are read as variables.
    """
    full = prefix_block(prefixes) + text
    if form not in _FORMS:
        return _UPDATE_REFUSED, True, None
    try:
        query = prepareQuery(full)
    except ParseException as exc:
        if _is_update(full):
            return _UPDATE_REFUSED, True, None
        return f"the SPARQL does not parse: {_short(str(exc))}", False, None
    except Exception as exc:  # noqa: BLE001 - rdflib raises bare exceptions (unknown prefixes, ...)
        return f"the SPARQL does not parse: {_short(str(exc))}", False, None
    if query.algebra.get("datasetClause"):
        return _FROM_REFUSED, True, None
    names = set(_algebra_names(query.algebra))
    if names & _OUTSIDE:
        return _SERVICE_REFUSED, True, None
    if names & _UPDATES:
        return _UPDATE_REFUSED, True, None
    if form in ("select", "ask") and names & _CONSTRAINT_REFUSED:
        return ("MINUS and VALUES are not allowed in a SHACL SPARQL target, constraint or "
                "validator (pyshacl refuses them when it evaluates)"), False, None
    if query.algebra.name != _FORMS[form]:
        noun = "a rule" if form == "construct" else f"sh:{form}"
        return f"{noun} must be a {form.upper()} query, not {query.algebra.name}", False, None
    for pattern, flags in _constant_regexes(query.algebra):
        problem = regex_problem(pattern, flags)
        if problem is not None:
            return problem, False, None
    return None, False, query


def check_sparql_texts(triples: Sequence[Triple]) -> tuple[SparqlReport, ...]:
    """One report per SPARQL text and ``sh:pattern`` of the ontology (see the module doc)."""
    reports: list[SparqlReport] = []
    for source in read_sparql_texts(triples):
        where = "sh:" + source.property[len(_SH) + 1:-1]
        problem: str | None
        if source.text is None:
            problem, hostile = f"the value of {where} must be a string holding SPARQL", False
        else:
            problem, hostile, _ = parse_sparql(source.text, source.prefixes, form=source.form)
        reports.append(SparqlReport(node=iri_value(source.node), property=where,
                                    ok=problem is None, error=problem, hostile=hostile))
    for node, pattern, flag_letters in read_patterns(triples):
        problem = regex_problem(pattern, _flags(flag_letters))
        reports.append(SparqlReport(node=iri_value(node), property="sh:pattern",
                                    ok=problem is None, error=problem))
    return tuple(reports)


def _flags(letters: str) -> int:
    value = 0
    for letter in letters:
        value |= _REGEX_FLAGS.get(letter, 0)
    return value


def _constant_regexes(node: Any) -> Iterable[tuple[str, int]]:
    """The constant patterns (and flags) of ``regex`` and ``replace`` anywhere in the algebra."""
    if isinstance(node, CompValue):
        if node.name in ("Builtin_REGEX", "Builtin_REPLACE"):
            pattern, flags = node.get("pattern"), node.get("flags")
            if isinstance(pattern, Literal):
                yield str(pattern), _flags(str(flags)) if isinstance(flags, Literal) else 0
        for value in node.values():
            yield from _constant_regexes(value)
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _constant_regexes(item)


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
