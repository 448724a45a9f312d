"""Conflicts: mutually exclusive hard constraints that no priority resolves."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from reasoning.constraints.model import Constraint, Hardness, Span
from reasoning.graph.relations import Edge, EdgeKind

__all__ = ["Conflict", "find_conflicts", "inactive_ids"]


class Conflict(msgspec.Struct, frozen=True, kw_only=True):
    """Two hard constraints that cannot both hold, with where each was read.

    ``spans`` is ``[a's source, b's source]``; a profile default has no
    source span and shows ``None``.
    """

    a: str
    b: str
    reason: str
    spans: tuple[Span | None, Span | None]


def inactive_ids(edges: Sequence[Edge]) -> frozenset[str]:
    """Ids of the constraints some ``overrides`` edge sets aside.

    A constraint that lost a priority contest is inactive: the decoder does
    not enforce it and it takes part in no conflict.
    """
    return frozenset(e.target for e in edges if e.relation is EdgeKind.OVERRIDES)


def find_conflicts(
    constraints: Sequence[Constraint], edges: Sequence[Edge]
) -> tuple[Conflict, ...]:
    """Every ``excludes`` edge between two active hard constraints, unresolved by ``overrides``.

    Guaranteed: each returned conflict names two distinct constraints of
    ``constraints``, both hard, neither overridden; order follows ``edges``.
    """
    by_id = {c.id: c for c in constraints}
    inactive = inactive_ids(edges)
    resolved = {frozenset((e.source, e.target)) for e in edges if e.relation is EdgeKind.OVERRIDES}
    conflicts: list[Conflict] = []
    for edge in edges:
        if edge.relation is not EdgeKind.EXCLUDES:
            continue
        a, b = by_id.get(edge.source), by_id.get(edge.target)
        if a is None or b is None or a.id == b.id:
            continue
        if a.hardness is not Hardness.HARD or b.hardness is not Hardness.HARD:
            continue
        if a.id in inactive or b.id in inactive or frozenset((a.id, b.id)) in resolved:
            continue
        conflicts.append(Conflict(a=a.id, b=b.id, reason=edge.reason, spans=(a.source, b.source)))
    return tuple(conflicts)
