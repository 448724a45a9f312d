"""The constraint graph: constraints as nodes, entails / excludes / overrides edges."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec

from reasoning.constraints.model import Constraint
from reasoning.errors import InvalidInput
from reasoning.graph.conflicts import Conflict, find_conflicts, inactive_ids
from reasoning.graph.priority import compute_overrides
from reasoning.graph.relations import Edge, EdgeKind, compute_relations

__all__ = ["ConstraintGraph", "DomainHook", "build_graph", "ontology_edge"]

#: Contributes domain edges (e.g. from ``owl:disjointWith`` between classes the
#: constraints reference) for a set of constraints.
DomainHook = Callable[[Sequence[Constraint]], Iterable[Edge]]


class ConstraintGraph(msgspec.Struct, frozen=True, kw_only=True):
    """A built constraint graph; immutable, cheap to serialise.

    ``edges`` hold entails and excludes edges first (rules, then ontology),
    then the overrides edges. ``inactive`` lists the constraints an overrides
    edge set aside; ``conflicts`` are the unresolved exclusions between
    active hard constraints (empty means the request can proceed).
    """

    constraints: tuple[Constraint, ...]
    edges: tuple[Edge, ...]
    conflicts: tuple[Conflict, ...]
    inactive: tuple[str, ...]

    def active(self) -> tuple[Constraint, ...]:
        """The constraints the decoder must honour, in input order."""
        gone = set(self.inactive)
        return tuple(c for c in self.constraints if c.id not in gone)

    def edges_of(self, relation: EdgeKind) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.relation is relation)


def ontology_edge(source: str, target: str, relation: str | EdgeKind, reason: str) -> Edge:
    """An edge contributed by a domain ontology (``origin="ontology"``).

    Raises:
        InvalidInput: ``relation`` is not entails / excludes / overrides.
    """
    try:
        kind = EdgeKind(relation)
    except ValueError:
        raise InvalidInput(f"unknown edge relation {relation!r}") from None
    return Edge(source=source, target=target, relation=kind, reason=reason, origin="ontology")


def _edge_key(edge: Edge) -> tuple[object, ...]:
    """Identity of an edge: excludes is unordered, entails and overrides are directed."""
    if edge.relation is EdgeKind.EXCLUDES:
        return (frozenset((edge.source, edge.target)), edge.relation)
    return (edge.source, edge.target, edge.relation)


def build_graph(
    constraints: Sequence[Constraint],
    *,
    prompt: str | None = None,
    extra_edges: Iterable[Edge] = (),
) -> ConstraintGraph:
    """Compute every edge, the inactive constraints and the conflicts.

    Args:
        constraints: the request's constraints (user, profile and ontology
            origins), ids unique.
        prompt: the text their source spans point into; lets a later
            instruction marked as a correction override an earlier one.
        extra_edges: domain edges (see :func:`ontology_edge`); an extra
            edge the rules already drew (same pair and relation) is dropped,
            and priorities are computed for the remaining ones like for any
            other exclusion.

    Raises:
        InvalidInput: duplicate constraint ids, or an extra edge naming an
            unknown constraint.

    >>> from reasoning.constraints.model import Kind
    >>> g = build_graph([
    ...     Constraint(id="c1", kind=Kind.RESPONSE_LANGUAGE, params={"language": "en"}),
    ...     Constraint(id="c2", kind=Kind.RESPONSE_LANGUAGE, params={"language": "zh"}),
    ... ])
    >>> [(c.a, c.b) for c in g.conflicts]
    [('c1', 'c2')]
    """
    ids = [c.id for c in constraints]
    if len(set(ids)) != len(ids):
        raise InvalidInput("constraint ids must be unique")
    known = set(ids)
    relations = list(compute_relations(constraints))
    seen = {_edge_key(e) for e in relations}
    for edge in extra_edges:
        if edge.source not in known or edge.target not in known:
            raise InvalidInput(
                f"domain edge {edge.source}->{edge.target} names an unknown constraint"
            )
        if edge.source == edge.target:
            raise InvalidInput(f"domain edge {edge.source}->{edge.target} is a loop")
        if _edge_key(edge) in seen:
            continue
        seen.add(_edge_key(edge))
        relations.append(edge)
    plain = [e for e in relations if e.relation is not EdgeKind.OVERRIDES]
    given = [e for e in relations if e.relation is EdgeKind.OVERRIDES]
    decided = {frozenset((e.source, e.target)) for e in given}
    computed = [
        e
        for e in compute_overrides(constraints, plain, prompt=prompt)
        if frozenset((e.source, e.target)) not in decided
    ]
    edges = tuple(plain + given + computed)
    gone = inactive_ids(edges)
    return ConstraintGraph(
        constraints=tuple(constraints),
        edges=edges,
        conflicts=find_conflicts(constraints, edges),
        inactive=tuple(i for i in ids if i in gone),
    )
