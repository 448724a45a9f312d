"""The constraint graph: relations between constraints, conflicts, RDF and exports.

Public API::

    build_graph(constraints, *, prompt=None, extra_edges=()) -> ConstraintGraph
    node_link(graph, premises) / to_networkx / to_turtle / to_jsonld
    ontology_edge(a, b, relation, reason) -> Edge   # for domain hooks
"""

from __future__ import annotations

from reasoning.graph.conflicts import Conflict
from reasoning.graph.export import node_link, to_jsonld, to_networkx, to_turtle
from reasoning.graph.graph import ConstraintGraph, DomainHook, build_graph, ontology_edge
from reasoning.graph.relations import Edge, EdgeKind

__all__ = [
    "Conflict",
    "ConstraintGraph",
    "DomainHook",
    "Edge",
    "EdgeKind",
    "build_graph",
    "node_link",
    "ontology_edge",
    "to_jsonld",
    "to_networkx",
    "to_turtle",
]
