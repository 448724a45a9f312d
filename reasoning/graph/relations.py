"""``entails`` and ``excludes`` edges, computed from facets (see :mod:`.facets`).

Rules, for two constraints A and B with facets FA and FB:

``excludes`` (symmetric; one edge, drawn from the earlier constraint):
  1. some counted quantity is bounded by both and the intervals are disjoint
     ("at least 300 words" vs "less than 100 words"; a forbidden word, bounded
     to zero occurrences, vs a required keyword, bounded to at least one);
  2. some exclusive attribute is fixed by both to different values (response
     language zh vs en; letter case lower vs upper; decimals 2 vs 0);
  3. a word bounded to zero occurrences by one appears, as a whole word, in
     every alternative of a literal the other requires (forbidden "risk" vs
     the start phrase "Risk assessment:");
  4. a character forbidden by one occurs in every alternative of a literal
     the other requires (no commas vs a keyword "Hello, world");
  5. their prefixes (or suffixes) cannot both hold: two literals neither of
     which starts (ends) the other, or a literal whose first (last)
     character is outside the other's allowed set (a JSON answer cannot
     start with "My answer"; a quoted answer cannot end with "?");
  6. one bounds from below a quantity that can never exceed a quantity the
     other bounds from above, and the lower bound is larger ("at least 3
     '!'" vs "no exclamation marks"; "at least 40 unique words" vs "at most
     30 words"; see :mod:`reasoning.constraints.form.order`).

``entails`` (directed, A ⇒ B): B's facets are its whole meaning
(``complete``) and A's facets imply each of them: every interval of B
contains A's interval on the same quantity, every attribute B fixes A fixes
to the same value, every literal B requires is contained in one A requires,
B's forbidden characters are forbidden by A, and A's prefix / suffix implies
B's.

What is *not* an edge, on purpose: postscript vs end phrase (the end phrase
may close the postscript); JSON vs title, sections, highlights or a
postscript (all can sit inside JSON strings); letter case vs literals (all
literal matching is case-insensitive); relations across different
quantities (words vs sentences), which would need more than two
constraints to be clear-cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from functools import lru_cache

import msgspec

from reasoning.constraints.form.describe import name_measure
from reasoning.constraints.form.order import within
from reasoning.constraints.model import Constraint
from reasoning.graph.facets import Boundary, Facets, facets_of

__all__ = ["Edge", "EdgeKind", "compute_relations", "entailment_reason", "exclusion_reason"]


class EdgeKind(StrEnum):
    ENTAILS = "entails"
    EXCLUDES = "excludes"
    OVERRIDES = "overrides"


class Edge(msgspec.Struct, frozen=True, kw_only=True):
    """One edge of the constraint graph.

    ``source`` and ``target`` are constraint ids. ``excludes`` is symmetric
    and stored once, from the constraint read first. ``origin`` is ``"rule"``
    for edges computed here, ``"ontology"`` for edges a domain ontology
    contributed (e.g. from ``owl:disjointWith``) and ``"confirmation"`` for
    an override a person chose to settle a conflict.
    """

    source: str
    target: str
    relation: EdgeKind
    reason: str
    origin: str = "rule"


def _quantity_label(q: tuple[str, ...]) -> str:
    return " ".join(f"'{part}'" if i else part.replace("_", " ") for i, part in enumerate(q))


@lru_cache(maxsize=4096)
def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) is not None


def exclusion_reason(fa: Facets, fb: Facets) -> str | None:
    """Why two constraints with these facets cannot both hold, or None when they can."""
    for q, ia in fa.bounds.items():
        ib = fb.bounds.get(q)
        if ib is not None and ia.disjoint(ib):
            return f"{_quantity_label(q)} must lie in {ia} and in {ib}"
    for attr, va in fa.values.items():
        vb = fb.values.get(attr)
        if vb is not None and vb != va:
            return f"{_quantity_label(attr)} cannot be both '{va}' and '{vb}'"
    for first, second in ((fa, fb), (fb, fa)):
        for word in sorted(first.forbidden_words):
            for alternatives in second.required:
                if all(_word_in(word, alt) for alt in alternatives):
                    return f"forbidden word '{word}' is part of required text '{alternatives[0]}'"
        for char in sorted(first.forbidden_chars):
            for alternatives in second.required:
                if all(char in alt for alt in alternatives):
                    return (
                        f"forbidden character '{char}' is part of required text '{alternatives[0]}'"
                    )
    for low, high in ((fa, fb), (fb, fa)):
        reason = _sub_quantity_reason(low, high)
        if reason is not None:
            return reason
    if fa.prefix and fb.prefix and not fa.prefix.compatible(fb.prefix, at_end=False):
        return f"the answer cannot start {_describe(fa.prefix)} and {_describe(fb.prefix)}"
    if fa.suffix and fb.suffix and not fa.suffix.compatible(fb.suffix, at_end=True):
        return f"the answer cannot end {_describe(fa.suffix)} and {_describe(fb.suffix)}"
    return None


def _sub_quantity_reason(low: Facets, high: Facets) -> str | None:
    """Rule 6: ``low`` needs more of a quantity than ``high`` allows of one that contains it."""
    for qa, ia in low.bounds.items():
        ma = low.measures.get(qa)
        if ma is None or ia.lo <= 0:
            continue
        for qb, ib in high.bounds.items():
            mb = high.measures.get(qb)
            if mb is None or qb == qa or ib.hi is None or ia.lo <= ib.hi:
                continue
            if within(ma, mb):
                return (
                    f"{name_measure(ma)} must number at least {ia.lo}, but they are among the "
                    f"{name_measure(mb)}, which may number at most {ib.hi}"
                )
    return None


def _describe(boundary: Boundary) -> str:
    if boundary.literal is not None:
        text = boundary.literal if len(boundary.literal) <= 60 else boundary.literal[:57] + "..."
        return f"with '{text}'"
    chars = "".join(sorted(boundary.chars or ()))
    return f"with one of {chars!r}"


def entailment_reason(fa: Facets, fb: Facets) -> str | None:
    """Why A's facets imply B's complete meaning, or None when they do not."""
    if not fb.complete:
        return None
    if not (fb.bounds or fb.values or fb.required or fb.forbidden_chars or fb.prefix or fb.suffix):
        return None
    for q, ib in fb.bounds.items():
        ia = fa.bounds.get(q)
        if ia is None or not ia.within(ib):
            return None
    for attr, vb in fb.values.items():
        if fa.values.get(attr) != vb:
            return None
    for alternatives in fb.required:
        if not any(
            any(alt_b in alt_a for alt_b in alternatives) and len(alts_a) == 1
            for alts_a in fa.required
            for alt_a in alts_a
        ):
            return None
    if not fb.forbidden_chars <= fa.forbidden_chars:
        return None
    if fb.prefix and not (fa.prefix and fa.prefix.implies(fb.prefix, at_end=False)):
        return None
    if fb.suffix and not (fa.suffix and fa.suffix.implies(fb.suffix, at_end=True)):
        return None
    parts = [f"{_quantity_label(q)} in {fa.bounds[q]} ⊆ {ib}" for q, ib in fb.bounds.items()]
    parts += [f"{_quantity_label(a)} = '{v}'" for a, v in fb.values.items()]
    return "; ".join(parts) or "every requirement of the target is implied"


def compute_relations(constraints: Sequence[Constraint]) -> tuple[Edge, ...]:
    """All ``entails`` and ``excludes`` edges among ``constraints``, in a stable order.

    Pairs are visited in input order, so ids and edge order are deterministic.
    Equivalent constraints entail each other (two edges). Quadratic in the
    number of constraints, which is small (a prompt rarely holds more than a
    dozen); each pair costs a few dictionary lookups.

    >>> from reasoning.constraints.model import Kind
    >>> a = Constraint(id="c1", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 50})
    >>> b = Constraint(id="c2", kind=Kind.WORD_COUNT, params={"relation": "at most", "n": 100})
    >>> [(e.source, e.relation.value, e.target) for e in compute_relations([a, b])]
    [('c1', 'entails', 'c2')]
    """
    facets = [facets_of(c) for c in constraints]
    edges: list[Edge] = []
    for i, a in enumerate(constraints):
        for j in range(i + 1, len(constraints)):
            b = constraints[j]
            if a.id == b.id:
                continue
            reason = exclusion_reason(facets[i], facets[j])
            if reason is not None:
                edges.append(
                    Edge(source=a.id, target=b.id, relation=EdgeKind.EXCLUDES, reason=reason)
                )
                continue
            forward = entailment_reason(facets[i], facets[j])
            if forward is not None:
                edges.append(
                    Edge(source=a.id, target=b.id, relation=EdgeKind.ENTAILS, reason=forward)
                )
            backward = entailment_reason(facets[j], facets[i])
            if backward is not None:
                edges.append(
                    Edge(source=b.id, target=a.id, relation=EdgeKind.ENTAILS, reason=backward)
                )
    return tuple(edges)
