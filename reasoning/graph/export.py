"""Exports of a constraint graph: node-link JSON, networkx, Turtle and JSON-LD.

The node-link form is built directly (no networkx, no rdflib on the hot
path) in the shape of ``networkx.node_link_data(G, edges="edges")`` for a
``MultiDiGraph``: ``{"directed": true, "multigraph": true, "graph": {...},
"nodes": [...], "edges": [...]}``. Each edge's ``key`` is its relation, which
is unique per ordered pair. ``networkx.node_link_graph(data, edges="edges")``
reads it back. Premises are included as nodes with ``"type": "premise"`` and
no edges; constraints carry ``"type": "constraint"``.

Turtle and JSON-LD go through :func:`reasoning.graph.rdf.to_rdf`, built only
when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import networkx as nx

from reasoning.constraints.model import Constraint, Premise, Span
from reasoning.graph.graph import ConstraintGraph

__all__ = ["node_link", "to_jsonld", "to_networkx", "to_turtle"]


def _span(span: Span | None) -> dict[str, Any] | None:
    return None if span is None else {"start": span.start, "end": span.end, "text": span.text}


def _constraint_node(c: Constraint, active: bool) -> dict[str, Any]:
    return {
        "id": c.id,
        "type": "constraint",
        "kind": c.kind.value,
        "params": c.params,
        "hardness": c.hardness.value,
        "scope": c.scope.value,
        "origin": c.origin.value,
        "source": _span(c.source),
        "confidence": c.confidence,
        "weight": c.weight,
        "active": active,
    }


def _premise_node(p: Premise) -> dict[str, Any]:
    return {
        "id": p.id,
        "type": "premise",
        "text": p.text,
        "topic": p.topic,
        "value": p.value,
        "negated": p.negated,
        "source": _span(p.source),
        "language": p.language,
    }


def node_link(graph: ConstraintGraph, premises: Sequence[Premise] = ()) -> dict[str, Any]:
    """The graph as a JSON-ready node-link object (see the module docstring).

    ``graph["conflicts"]`` lists the conflicts as ``{a, b, reason}``.
    """
    inactive = set(graph.inactive)
    nodes = [_constraint_node(c, c.id not in inactive) for c in graph.constraints]
    nodes += [_premise_node(p) for p in premises]
    edges = [
        {
            "source": e.source,
            "target": e.target,
            "key": e.relation.value,
            "relation": e.relation.value,
            "reason": e.reason,
            "origin": e.origin,
        }
        for e in graph.edges
    ]
    return {
        "directed": True,
        "multigraph": True,
        "graph": {
            "conflicts": [{"a": c.a, "b": c.b, "reason": c.reason} for c in graph.conflicts],
            "inactive": list(graph.inactive),
        },
        "nodes": nodes,
        "edges": edges,
    }


def to_networkx(graph: ConstraintGraph, premises: Sequence[Premise] = ()) -> nx.MultiDiGraph:
    """A networkx view for algorithms; node and edge attributes as in :func:`node_link`."""
    data = node_link(graph, premises)
    return cast(
        nx.MultiDiGraph, nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
    )


def to_turtle(
    graph: ConstraintGraph, premises: Sequence[Premise] = (), *, base: str | None = None
) -> str:
    """The graph in Turtle, in the ``cg:`` vocabulary."""
    from reasoning.graph.rdf import to_rdf

    return to_rdf(graph, premises, base=base).serialize(format="turtle")


def to_jsonld(
    graph: ConstraintGraph, premises: Sequence[Premise] = (), *, base: str | None = None
) -> str:
    """The graph in JSON-LD, compacted with an inline context (never a remote one)."""
    from reasoning.graph.rdf import JSONLD_CONTEXT, to_rdf

    return to_rdf(graph, premises, base=base).serialize(
        format="json-ld", context=JSONLD_CONTEXT, auto_compact=True
    )
