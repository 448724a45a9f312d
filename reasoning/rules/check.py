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
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Final

from pyparsing import ParseException
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.parser import parseUpdate
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import Query

from reasoning.case.vocabulary import (
    SH_CONSTRUCT,
    SH_DECLARE,
    SH_NAMESPACE,
    SH_OBJECT,
    SH_PREDICATE,
    SH_PREFIX,
    SH_PREFIXES,
    SH_RULE,
    SH_SPARQL_RULE,
    SH_SUBJECT,
    SH_TRIPLE_RULE,
    TV_DECISION_PROPERTY,
    TV_IMPLEMENTS,
    TV_REQUIRES_INPUT,
)
from reasoning.evidence.report import RuleReport
from reasoning.evidence.terms import RDF_TYPE, Triple, iri_value, is_literal, literal_value

__all__ = ["RuleSource", "check_rules", "prefix_block", "read_rule_sources"]

_OUTSIDE: Final = frozenset({"ServiceGraphPattern"})
_ERROR_CHARS: Final = 300


class RuleSource:
    """One declared rule as read from the triples (no parsing yet)."""

    __slots__ = (
        "constructs",
        "implements",
        "inputs",
        "kind",
        "node",
        "prefixes",
        "shape",
        "triple_parts",
    )

    def __init__(self, node: str, shape: str | None, kind: str) -> None:
        self.node, self.shape, self.kind = node, shape, kind
        self.constructs: list[str] = []
        self.prefixes: dict[str, str] = {}
        self.implements: str | None = None
        self.inputs: list[str] = []
        self.triple_parts: dict[str, str] = {}


def read_rule_sources(triples: Iterable[Triple]) -> list[RuleSource]:
    """The rules declared in ``triples``, in a stable order (by node)."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    kinds: dict[str, str] = {}
    shapes: dict[str, str] = {}
    for s, p, o in triples:
        out[s].append((p, o))
        if p == RDF_TYPE and o in (SH_SPARQL_RULE, SH_TRIPLE_RULE):
            kinds[s] = "sparql" if o == SH_SPARQL_RULE else "triple"
        elif p == SH_RULE:
            shapes.setdefault(o, s)
    sources: list[RuleSource] = []
    for node in sorted(set(kinds) | set(shapes)):
        source = RuleSource(node, shapes.get(node), kinds.get(node, "unknown"))
        for p, o in out.get(node, ()):
            if p == SH_CONSTRUCT and is_literal(o):
                source.constructs.append(literal_value(o))
            elif p == SH_PREFIXES:
                source.prefixes.update(_declared_prefixes(out, o))
            elif p == TV_IMPLEMENTS and source.implements is None:
                source.implements = o
            elif p == TV_REQUIRES_INPUT:
                source.inputs.append(o)
            elif p in (SH_SUBJECT, SH_PREDICATE, SH_OBJECT):
                source.triple_parts[p] = o
        source.inputs.sort()
        sources.append(source)
    return sources


def _declared_prefixes(out: dict[str, list[tuple[str, str]]], node: str) -> dict[str, str]:
    prefixes: dict[str, str] = {}
    for p, declaration in out.get(node, ()):
        if p != SH_DECLARE:
            continue
        values = dict(out.get(declaration, ()))
        prefix, namespace = values.get(SH_PREFIX), values.get(SH_NAMESPACE)
        if prefix is not None and namespace is not None and is_literal(prefix) and is_literal(namespace):
            prefixes[literal_value(prefix)] = literal_value(namespace)
    return prefixes


def prefix_block(prefixes: dict[str, str]) -> str:
    """SPARQL ``PREFIX`` lines for declared prefixes (sorted, so the text is stable)."""
    return "".join(f"PREFIX {name}: <{ns}>\n" for name, ns in sorted(prefixes.items()))


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
