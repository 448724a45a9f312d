"""Rebuilding an analysis's constraint graph after the service changed its constraints or edges.

A confirmation (a person's choice settling a conflict, :func:`settle_conflict`)
and a session's feedback policy both build the graph again after the analysis. The rules'
edges are recomputed from the constraints, but the edges the rules cannot
derive (those a domain ontology contributed through the analysis's domain
hook, e.g. ``owl:disjointWith`` exclusions, and any earlier person's choice)
exist only in the analysis's graph: they are carried over here, so a rebuilt
graph never forgets them.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from reasoning.analysis import Analysis, Status
from reasoning.constraints.model import Constraint
from reasoning.errors import ConflictError
from reasoning.graph import Edge, build_graph
from reasoning.graph.relations import EdgeKind

__all__ = ["RULE_ORIGIN", "carried_edges", "rebuild_graph", "settle_conflict"]

#: The origin of the edges ``build_graph`` computes itself from the constraints.
RULE_ORIGIN = "rule"


def carried_edges(analysis: Analysis, constraints: Sequence[Constraint]) -> tuple[Edge, ...]:
    """The analysis's edges the rules cannot recompute, between constraints still in ``constraints``."""
    present = {c.id for c in constraints}
    return tuple(
        e
        for e in analysis.graph.edges
        if e.origin != RULE_ORIGIN and e.source in present and e.target in present
    )


def rebuild_graph(
    analysis: Analysis,
    constraints: Sequence[Constraint],
    *,
    prompt: str,
    extra_edges: Sequence[Edge] = (),
) -> Analysis:
    """``analysis`` over ``constraints``, its graph built again with its carried edges and ``extra_edges``.

    ``status`` follows the new graph (``needs_confirmation`` exactly when it
    has conflicts), as :func:`reasoning.analysis.analyse` guarantees.
    """
    edges = (*carried_edges(analysis, constraints), *extra_edges)
    graph = build_graph(constraints, prompt=prompt, extra_edges=edges)
    status = Status.NEEDS_CONFIRMATION if graph.conflicts else Status.OK
    return msgspec.structs.replace(analysis, constraints=tuple(constraints), graph=graph, status=status)


def settle_conflict(analysis: Analysis, chosen: str, losers: Sequence[str], *, prompt: str) -> Analysis:
    """``analysis`` with ``chosen`` overriding each of ``losers`` in its constraint graph.

    The graph is built again with the person's choice added to the edges the
    analysis drew beyond the rules (the domain ontology's, e.g. a disjointness
    ``excludes``), so a conflict the choice did not touch stays a conflict.

    Raises:
        ConflictError: the analysis no longer has these constraints (the
            extraction changed since the choice was offered).
    """
    known = {c.id for c in analysis.constraints}
    missing = [cid for cid in (chosen, *losers) if cid not in known]
    if missing:
        raise ConflictError(
            f"the prompt no longer reads as it did (constraints {missing} are gone); send the request again"
        )
    edges = [
        Edge(source=chosen, target=loser, relation=EdgeKind.OVERRIDES, reason="chosen by a person",
             origin="confirmation")
        for loser in losers
    ]
    return rebuild_graph(analysis, analysis.constraints, prompt=prompt, extra_edges=edges)
