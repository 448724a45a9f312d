"""A SPARQL rule's WHERE pattern with some of its conditions dropped (for the nearest rule).

A rule that did not fire on a case failed on some of its conditions. The
conditions are the pattern's *units*: each triple pattern whose subject
is a variable (``$this`` included; the rule's own constants such as
``<rule> :hasThreshold ?t`` are the rule's data, not a condition on the
case), each ``UNION`` as a whole (one requirement with alternatives), and
each conjunct of each ``FILTER`` (a comparison, a ``NOT EXISTS``).
``tv:mentions`` patterns are not units: dropping one would let the rule
match individuals the case does not name.

:func:`units` lists them in a fixed order and :func:`relaxed` rebuilds the
algebra without the dropped ones (a dropped union becomes the empty group,
a dropped filter conjunct ``true``), leaving the original untouched, so the
engine can evaluate the relaxed pattern exactly as it evaluates the rule.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from rdflib import Literal, URIRef, Variable
from rdflib.plugins.sparql.parserutils import CompValue, Expr

from reasoning.evidence.terms import TV

__all__ = ["FLIPPED", "Unit", "alternatives", "pattern_triples", "relaxed", "units"]

#: A rule's comparison operator said from its other side (``?a > 5`` is ``5 < ?a``).
FLIPPED: Final = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "=": "=", "!=": "!="}

_MENTIONS: Final = URIRef(TV + "mentions")
_TRUE: Final = Literal(True)


@dataclass(frozen=True)
class Unit:
    """One droppable condition: ``kind`` ``triple`` (``node`` the pattern), ``union``
    (the Union node) or ``filter`` (the conjunct expression)."""

    key: int
    kind: str
    node: Any


def units(part: Any) -> list[Unit]:
    """The conditions of a rule's algebra, in the order :func:`relaxed` numbers them."""
    found: list[Unit] = []
    _walk(part, frozenset(), found, [0])
    return found


def relaxed(part: Any, drop: frozenset[int]) -> Any:
    """The algebra without the units whose keys are in ``drop`` (a new tree; ``part`` unchanged)."""
    return _walk(part, drop, [], [0])


def alternatives(union: Any) -> Iterator[list[tuple[Any, Any, Any]]]:
    """The triple patterns of each alternative of a (nested) UNION, ``tv:mentions`` left out."""
    for key in ("p1", "p2"):
        child = union.get(key)
        if isinstance(child, CompValue) and child.name == "Union":
            yield from alternatives(child)
        elif isinstance(child, CompValue):
            yield [t for t in pattern_triples(child) if t[1] != _MENTIONS]


def pattern_triples(part: Any) -> Iterator[tuple[Any, Any, Any]]:
    """The triple patterns of a query's graph pattern (not those inside FILTER expressions)."""
    if isinstance(part, CompValue):
        if part.name == "BGP":
            yield from part.triples
        for key in ("p", "p1", "p2"):
            child = part.get(key)
            if isinstance(child, CompValue):
                yield from pattern_triples(child)


def _condition(triple: tuple[Any, Any, Any]) -> bool:
    return isinstance(triple[0], Variable) and triple[1] != _MENTIONS


def _copy(node: CompValue, **changes: Any) -> CompValue:
    values = dict(OrderedDict.items(node))
    values.update(changes)
    if isinstance(node, Expr):
        fn = getattr(node, "_evalfn", None)
        return Expr(node.name, getattr(fn, "__func__", fn), **values)
    return CompValue(node.name, **values)


def _next(counter: list[int]) -> int:
    key = counter[0]
    counter[0] += 1
    return key


def _walk(node: Any, drop: frozenset[int], out: list[Unit], counter: list[int]) -> Any:
    if not isinstance(node, CompValue):
        return node
    name = node.name
    if name == "BGP":
        kept = []
        for triple in node.triples:
            if _condition(triple):
                key = _next(counter)
                out.append(Unit(key, "triple", triple))
                if key in drop:
                    continue
            kept.append(triple)
        return node if len(kept) == len(node.triples) else _copy(node, triples=kept)
    if name == "Union":
        key = _next(counter)
        out.append(Unit(key, "union", node))
        return CompValue("BGP", triples=[]) if key in drop else node
    changes: dict[str, Any] = {}
    if name == "Filter":
        expr = _conjuncts(OrderedDict.__getitem__(node, "expr"), drop, out, counter)
        if expr is not OrderedDict.__getitem__(node, "expr"):
            changes["expr"] = expr
    for part in ("p", "p1", "p2"):
        if part in node:
            child = OrderedDict.__getitem__(node, part)
            new = _walk(child, drop, out, counter)
            if new is not child:
                changes[part] = new
    return _copy(node, **changes) if changes else node


def _conjuncts(expr: Any, drop: frozenset[int], out: list[Unit], counter: list[int]) -> Any:
    if isinstance(expr, CompValue) and expr.name == "ConditionalAndExpression":
        first = OrderedDict.__getitem__(expr, "expr")
        others = list(OrderedDict.get(expr, "other") or [])
        new_first = _conjuncts(first, drop, out, counter)
        new_others = [_conjuncts(o, drop, out, counter) for o in others]
        if new_first is first and all(a is b for a, b in zip(new_others, others, strict=True)):
            return expr
        return _copy(expr, expr=new_first, other=new_others)
    key = _next(counter)
    out.append(Unit(key, "filter", expr))
    return _TRUE if key in drop else expr
