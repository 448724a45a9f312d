"""``overrides`` edges: which of two mutually exclusive constraints gives way.

Priority only matters where both cannot hold, so an ``overrides`` edge is
drawn only for a pair joined by ``excludes``. The rules, tried in order; the
first that separates the pair decides:

1. origin: a user instruction or an ontology rule overrides a profile
   default (defaults are what applies when nobody said otherwise);
2. hardness: a hard constraint overrides a soft one;
3. order, for two constraints of the same origin and hardness read from the
   prompt: the later overrides the earlier when the later is marked as a
   correction (a discourse marker such as "actually", "instead", "rather",
   "其实", "改为" between the end of the earlier and the end of the later
   source span), or when both are soft (a later preference refines an
   earlier one).

Anything else (two hard user instructions with no correction marker, a user
instruction against an ontology rule) stays unresolved: it is a conflict the
user must confirm, because guessing would silently drop a requirement.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.model import Constraint, Hardness, Origin
from reasoning.graph.relations import Edge, EdgeKind

__all__ = ["CORRECTION_MARKERS", "compute_overrides", "is_correction"]

#: Discourse markers that announce a correction of something said before.
CORRECTION_MARKERS: tuple[str, ...] = (
    "actually",
    "instead",
    "rather",
    "correction",
    "scratch that",
    "on second thought",
    "on second thoughts",
    "i meant",
    "never mind",
    "nevermind",
    "change that",
    "其实",
    "改为",
    "改成",
    "改用",
    "换成",
    "更正",
    "算了",
    "而是",
)

_LATIN_MARKERS = [m for m in CORRECTION_MARKERS if m.isascii()]
_HAN_MARKERS = [m for m in CORRECTION_MARKERS if not m.isascii()]
_MARKER_RE = re.compile(
    r"(?<![\w])(?:"
    + "|".join(re.escape(m) for m in _LATIN_MARKERS)
    + r")(?![\w])"
    + "|"
    + "|".join(re.escape(m) for m in _HAN_MARKERS),
    re.IGNORECASE,
)

_SENTENCE_END = re.compile(r"[.!?;。！？；\n]+")

_ORIGIN_RANK = {Origin.PROFILE: 0, Origin.USER: 1, Origin.ONTOLOGY: 1}


def is_correction(prompt: str, earlier: Constraint, later: Constraint) -> bool:
    """Whether ``later`` is worded as a correction of ``earlier`` in ``prompt``.

    Looks for a correction marker in the sentence of the later source span,
    from that sentence's start (but not before the earlier span's end) to the
    end of the later span, so "Actually, answer in Chinese" and "answer in
    Chinese instead" count, and a marker in an unrelated sentence does not.
    """
    if earlier.source is None or later.source is None:
        return False
    sentence_start = 0
    for match in _SENTENCE_END.finditer(prompt, 0, later.source.start):
        sentence_start = match.end()
    start = min(max(earlier.source.end, sentence_start), later.source.start)
    return _MARKER_RE.search(prompt, start, later.source.end) is not None


def _position(c: Constraint) -> int:
    return c.source.start if c.source is not None else -1


def _decide(
    a: Constraint, b: Constraint, prompt: str | None
) -> tuple[Constraint, Constraint, str] | None:
    rank_a, rank_b = _ORIGIN_RANK[a.origin], _ORIGIN_RANK[b.origin]
    if rank_a != rank_b:
        win, lose = (a, b) if rank_a > rank_b else (b, a)
        return win, lose, f"{win.origin.value} constraint over {lose.origin.value} default"
    if a.hardness != b.hardness:
        win, lose = (a, b) if a.hardness is Hardness.HARD else (b, a)
        return win, lose, "hard constraint over soft constraint"
    if a.origin != b.origin or a.source is None or b.source is None:
        return None
    earlier, later = (a, b) if _position(a) <= _position(b) else (b, a)
    if prompt is not None and is_correction(prompt, earlier, later):
        return later, earlier, "later instruction marked as a correction"
    if a.hardness is Hardness.SOFT:
        return later, earlier, "later soft preference over earlier one"
    return None


def compute_overrides(
    constraints: Sequence[Constraint], excludes: Sequence[Edge], *, prompt: str | None = None
) -> tuple[Edge, ...]:
    """One ``overrides`` edge (winner -> loser) per resolvable ``excludes`` edge.

    ``prompt`` is the text the source spans point into; without it no
    instruction counts as a correction.
    """
    by_id = {c.id: c for c in constraints}
    edges: list[Edge] = []
    for edge in excludes:
        if edge.relation is not EdgeKind.EXCLUDES:
            continue
        a, b = by_id.get(edge.source), by_id.get(edge.target)
        if a is None or b is None:
            continue
        decision = _decide(a, b, prompt)
        if decision is not None:
            win, lose, reason = decision
            edges.append(
                Edge(source=win.id, target=lose.id, relation=EdgeKind.OVERRIDES, reason=reason)
            )
    return tuple(edges)
