"""The compile step of sentences counted by type (``controllers.sentence_types``).

Counts of the sentences ending with one mark (``.``, ``?``, ``!``; the sentence-type readings of
``reasoning.constraints.extract.common.sentence_types``) compile to one ``SentenceTypes``: exact
counts of each type ("问句和陈述句各两句": two of each) are a pattern written once; ratios of two
types with a common type between them ("twice as many statements as questions", "equal numbers
of statements, questions and exclamations") the smallest whole round of marks, repeated.
Controlled only where the controller can promise it: every count is of this shape (exact, or an
exact ratio), the round holds at most :data:`MOST_ROUND` sentences, in a free body without fixed
text, with no controller that inserts words or bounds the sentences and no other rule on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import lcm

from inference.decoder.compile.forms import INSERTING, form_of_constraint, forms_of, free_body
from inference.decoder.controllers.sentence_types import SentenceTypes
from inference.decoder.controllers.template import Layout
from reasoning.constraints.form.model import Count, Filter, Measure, Position, Spread, Unit, Wrap
from reasoning.constraints.model import Constraint, Relation

__all__ = ["MOST_ROUND", "form_sentence_types", "pattern_of"]

#: The most sentences one round of the pattern may hold.
MOST_ROUND = 8
_MARKS = ".?!"


def _typed(form: Count) -> str | None:
    """The mark of a count of sentences by type (None: another count)."""
    mark = form.filter.ends_with or ""
    if form.unit is Unit.SENTENCES and form.per is None and len(mark) == 1 and mark in _MARKS \
            and form.filter == Filter(ends_with=mark) and form.relation is Relation.EXACTLY:
        return mark
    return None


def pattern_of(exact: dict[str, int], ratios: Sequence[tuple[str, str, float]]) -> tuple[str, ...] | None:
    """The marks of one round: ``exact`` counts of each mark, or the smallest whole numbers in the
    ``ratios`` (part, whole, fraction); None when they disagree or the round is too long.
    Marks are interleaved, the most owed first, a statement before a question before an exclamation
    on a tie (two statements to a question: '.', '?', '.'; two of each: '.', '?', '.', '?')."""
    counts: dict[str, Fraction] = {m: Fraction(n) for m, n in exact.items()}
    for part, whole, fraction in ratios:
        share = Fraction(fraction).limit_denominator(MOST_ROUND)
        if share <= 0:
            return None
        if part in counts and whole in counts:
            if counts[part] != counts[whole] * share:
                return None
        elif whole in counts:
            counts[part] = counts[whole] * share
        elif part in counts:
            counts[whole] = counts[part] / share
        else:
            counts[whole], counts[part] = Fraction(share.denominator), Fraction(share.numerator)
    if not counts:
        return None
    scale = lcm(*(c.denominator for c in counts.values()))
    whole_counts = {m: int(c * scale) for m, c in counts.items()}
    if sum(whole_counts.values()) > MOST_ROUND or min(whole_counts.values()) < 1:
        return None
    pattern: list[str] = []
    left = {m: whole_counts[m] for m in sorted(whole_counts, key=_MARKS.index)}  # a statement first on a tie
    while any(left.values()):
        mark = max(left, key=lambda m: left[m])
        pattern.append(mark)
        left[mark] -= 1
    return tuple(pattern)


def form_sentence_types(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> SentenceTypes | None:
    """The ``SentenceTypes`` of sentences counted by type (None: none, or not controllable here;
    see the module doc). ``inserts``: citations or a stated decision are written."""
    exact: dict[str, int] = {}
    ratios: list[tuple[str, str, float]] = []
    ids: list[str] = []
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or (mark := _typed(form)) is None:
            continue
        if form.of is None and form.n >= 1:
            exact[mark] = form.n
        elif form.of is not None and form.fraction is not None and isinstance(form.of, Measure) \
                and _typed(Count(unit=form.of.unit, relation=Relation.EXACTLY, filter=form.of.filter)) is not None:
            ratios.append((mark, str(form.of.filter.ends_with), float(form.fraction)))
        else:
            return None
        ids.append(c.id)
    if not ids or (exact and ratios) or inserts or any(c.kind in INSERTING for c in constraints):
        return None
    pattern = pattern_of(exact, ratios)
    if pattern is None or not free_body(layout):
        return None
    for q in constraints:
        if q.id in ids:
            continue
        for f in forms_of(q):
            if isinstance(f, (Wrap, Position, Spread)) and Unit.SENTENCES in (getattr(f, "unit", None),
                                                                              getattr(f, "per", None)):
                return None
            if isinstance(f, Count) and Unit.SENTENCES in (f.unit, f.per) or isinstance(f, Count) and f.of is not None:
                return None
    controlled.update(ids)
    return SentenceTypes(pattern=pattern, repeat=bool(ratios), sources=tuple(ids))
