"""The decision rules of one ontology version, loaded into pyshacl once.

:func:`load_rules` cuts the SHACL part out of the ontology's triples (the
shapes that hold ``sh:rule`` and everything reachable from them through
blank nodes and SHACL-described nodes, such as ``sh:prefixes``
declarations), parses it into a pyshacl ``ShapesGraph`` and gathers the
rules. Parsing the shapes costs more than running three rules, so it is
done once per version and the result is kept beside the ontology index.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from pyshacl.pytypes import SHACLExecutor
from pyshacl.rules import gather_rules
from pyshacl.shapes_graph import ShapesGraph

from reasoning.case.vocabulary import SH, SH_RULE
from reasoning.evidence.terms import Triple, from_rdflib, is_bnode, to_rdflib_graph
from reasoning.rules import sandbox
from reasoning.rules.sources import RuleSource, read_rule_sources

__all__ = ["LoadedRule", "load_rules", "shacl_triples"]

_SH_PREFIX: Final = f"<{SH}"


class LoadedRule:
    """One pyshacl rule with its declaration (read-only after loading)."""

    __slots__ = ("node", "order", "rule", "source")

    def __init__(self, node: str, order: float, source: RuleSource, rule: Any) -> None:
        self.node, self.order, self.source, self.rule = node, order, source, rule


def shacl_triples(triples: Sequence[Triple]) -> list[Triple]:
    """The triples of the shapes that hold rules, and what hangs off them."""
    by_subject: dict[str, list[Triple]] = defaultdict(list)
    described: set[str] = set()
    shapes: set[str] = set()
    for triple in triples:
        s, p, _ = triple
        by_subject[s].append(triple)
        if p.startswith(_SH_PREFIX):
            described.add(s)
        if p == SH_RULE:
            shapes.add(s)
    kept: list[Triple] = []
    seen: set[str] = set()
    stack = sorted(shapes)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for triple in by_subject.get(node, ()):
            kept.append(triple)
            obj = triple[2]
            if obj not in seen and (is_bnode(obj) or obj in described):
                stack.append(obj)
    return kept


def load_rules(triples: Sequence[Triple]) -> tuple[LoadedRule, ...]:
    """Every declared rule, loaded by pyshacl, in execution order (shape, then rule order).

    Raises pyshacl's errors for rules it cannot load; the upload checks of
    :mod:`reasoning.rules.check` report them, so a stored version loads.
    The evaluation guards of :mod:`reasoning.rules.sandbox` are installed
    first (pyshacl compiles ``sh:pattern`` while loading).
    """
    sandbox.install()
    part = shacl_triples(triples)
    if not part:
        return ()
    graph = to_rdflib_graph(part)
    shapes_graph = ShapesGraph(graph)
    executor = SHACLExecutor(advanced_mode=True, iterate_rules=False)
    for shape in shapes_graph.shapes:
        shape.set_advanced(True)
    # Blank node labels change on parsing: read the declarations back from the parsed graph.
    parsed = [(from_rdflib(s), from_rdflib(p), from_rdflib(o)) for s, p, o in graph]
    sources = {source.node: source for source in read_rule_sources(
        [(s, p, o) for s, p, o in parsed if s is not None and p is not None and o is not None])}
    loaded: list[tuple[float, float, str, LoadedRule]] = []
    for shape, rules in gather_rules(executor, shapes_graph).items():
        for rule in rules:
            node = from_rdflib(rule.node)
            source = sources.get(node) if node is not None else None
            if node is None or source is None or rule.deactivated:
                continue
            order = float(rule.order)
            loaded.append((float(shape.order), order, node, LoadedRule(node, order, source, rule)))
    loaded.sort(key=lambda item: item[:3])
    return tuple(item[3] for item in loaded)
