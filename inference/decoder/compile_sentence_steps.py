"""The compile step of sentences growing by a step (``controllers.sentence_steps``).

``spread(words, sentences, step=n)`` ("each sentence exactly two words longer than the previous
one", 每句话比前一句多两个字) compiles to one ``SentenceSteps`` where the controller can promise it:
a step of at most :data:`MOST_STEP` words either way, in a free body without fixed text, with no
controller that inserts words and no other rule on sentences or words (their counts would pull
the lengths elsewhere).
"""

from __future__ import annotations

from collections.abc import Sequence

from inference.decoder.compile.forms import INSERTING, form_of_constraint, forms_of, free_body
from inference.decoder.controllers.sentence_steps import SentenceSteps
from inference.decoder.controllers.template import Layout
from reasoning.constraints.form.model import Count, Position, Spread, Unit, Wrap
from reasoning.constraints.model import Constraint

__all__ = ["MOST_STEP", "form_sentence_steps"]

#: The largest step (words) between consecutive sentences the controller takes on.
MOST_STEP = 5


def form_sentence_steps(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> SentenceSteps | None:
    """The ``SentenceSteps`` of a step between sentences (None: none, or not controllable here)."""
    found = [(c, f) for c in constraints if isinstance(f := form_of_constraint(c), Spread) and f.step is not None
             and f.unit is Unit.WORDS and f.per is Unit.SENTENCES]
    if len(found) != 1 or inserts or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    assert form.step is not None
    if form.step == 0 or abs(form.step) > MOST_STEP or not free_body(layout):
        return None
    for q in constraints:
        for f in forms_of(q) if q.id != c.id else ():
            if isinstance(f, (Wrap, Position, Spread)) or isinstance(f, Count) and (
                    f.unit in (Unit.SENTENCES, Unit.WORDS) or f.per is not None or f.of is not None):
                return None
    controlled.add(c.id)
    return SentenceSteps(step=form.step, sources=(c.id,))
