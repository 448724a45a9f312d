"""The constants a domain's decision rules compare a case's values with.

A rule's ``FILTER (?amount > ?limit)`` reads a threshold when one side is the
case's (a variable the case binds, ``$this :amount ?amount``) and the other a
constant of the rule: a literal (``FILTER (?amount >= 1000000)``) or a
variable bound by a chain of patterns that starts at a constant of the
ontology (``:R-24 :hasThreshold ?t . ?t :thresholdAmount ?limit``), whose
values the ontology holds. :func:`rule_thresholds` lists them, said from the
case's side (``?limit < ?amount`` is the case's value ``>`` the limit), for
every rule of a :class:`~reasoning.rules.engine.RuleBook`, from the rules and
the ontology alone: a counterfactual variant moves a stated number or date to
the other side of a line the rules read
(``reasoning.counterfactual.cross_threshold``) without any domain's code.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, Final

import numpy as np
from rdflib import Literal, URIRef, Variable
from rdflib.paths import AlternativePath
from rdflib.plugins.sparql.parserutils import CompValue

from reasoning.counterfactual import Threshold
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.terms import is_literal, literal_parts
from reasoning.rules.engine import RuleBook
from reasoning.rules.relax import FLIPPED, pattern_triples, units

__all__ = ["rule_thresholds"]

#: The comparisons that draw a line a case value can cross.
_ORDERED: Final = frozenset({">", "<", ">=", "<="})
_DATED: Final = ("#date", "#dateTime")
_MAX_VALUES: Final = 16  # values one constant chain may hold (a threshold is one or a few)
_READ: weakref.WeakKeyDictionary[RuleBook, tuple[Threshold, ...]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def rule_thresholds(book: RuleBook) -> tuple[Threshold, ...]:
    """Every threshold the rules of ``book`` compare a case value with (distinct, in rule
    order); read once per rule book (an ontology version), then remembered with it."""
    with _LOCK:
        known = _READ.get(book)
    if known is None:
        known = _read(book)
        with _LOCK:
            _READ[book] = known
    return known


def _read(book: RuleBook) -> tuple[Threshold, ...]:
    found: dict[Threshold, None] = {}
    for queries in book.queries:
        for query in queries:
            if query is None:
                continue
            part = query.algebra.p
            patterns = list(pattern_triples(part))
            data = _data_values(patterns, book.index)
            for unit in units(part):
                if unit.kind == "filter":
                    found.update(dict.fromkeys(_compared(unit.node, data)))
    return tuple(found)


def _predicate(term: Any) -> URIRef | None:
    predicate = term.args[0] if isinstance(term, AlternativePath) else term
    return predicate if isinstance(predicate, URIRef) else None


def _data_values(
    patterns: Iterable[tuple[Any, Any, Any]], index: OntologyIndex
) -> dict[Variable, list[str]]:
    """The values (N-Triples terms) of each variable the rule binds from its own constants:
    ``<c> :p ?v``, then ``?v :q ?w`` on what ``?v`` holds, and so on."""
    values: dict[Variable, list[str]] = {}
    pending = [t for t in patterns if isinstance(t[2], Variable) and _predicate(t[1]) is not None]
    changed = True
    while changed:
        changed = False
        for s, p, o in pending:
            if o in values:
                continue
            if isinstance(s, URIRef):
                subjects = [f"<{s}>"]
            elif isinstance(s, Variable) and s in values:
                subjects = values[s]
            else:
                continue
            predicate = _predicate(p)
            values[o] = _objects(index, subjects, f"<{predicate}>")
            changed = True
    return values


def _objects(index: OntologyIndex, subjects: list[str], predicate: str) -> list[str]:
    pid = index.term_id(predicate)
    sids = [i for i in (index.term_id(s) for s in subjects) if i >= 0]
    if pid < 0 or not sids:
        return []
    # The subjects' triples (CSR slices), in document order as a scan of every triple would find them.
    edges = np.sort(np.concatenate([index.out_of(s) for s in dict.fromkeys(sids)]))
    rows = edges[index.p[edges] == pid][:_MAX_VALUES]
    return [index.terms[o] for o in index.o[rows].tolist()]


def _compared(expr: Any, data: dict[Variable, list[str]]) -> Iterator[Threshold]:
    """The thresholds of one filter conjunct: a comparison of a case variable with constants."""
    if not (isinstance(expr, CompValue) and expr.name == "RelationalExpression"):
        return
    left, op, right = expr.get("expr"), str(expr.get("op")), expr.get("other")
    if op not in _ORDERED or isinstance(right, list):
        return
    sides = [_constants(left, data), _constants(right, data)]
    if (sides[0] is None) == (sides[1] is None):
        return  # two case values, or two constants: no line a case crosses
    case_side = 0 if sides[0] is None else 1
    said = op if case_side == 0 else FLIPPED[op]
    for term in sides[1 - case_side] or ():
        threshold = _threshold(term, said)
        if threshold is not None:
            yield threshold


def _constants(term: Any, data: dict[Variable, list[str]]) -> list[str] | None:
    """The constant values of a comparison side (None: the side is the case's)."""
    if isinstance(term, Literal):
        return [term.n3()]
    if isinstance(term, Variable) and term in data:
        return data[term]
    return None


def _threshold(term: str, op: str) -> Threshold | None:
    if not is_literal(term):
        return None
    lexical, _, datatype = literal_parts(term)
    value = lexical.strip()
    if datatype and datatype.endswith(_DATED):
        return Threshold(op=op, value=value[:10], dated=True)
    try:
        float(value)
    except ValueError:
        return None
    return Threshold(op=op, value=value, dated=False)
