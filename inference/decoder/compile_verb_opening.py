"""The compile step of an answer opening with a verb (``controllers.verb_opening``).

``position(answer, starts_with, word_class=verb)``, or the first sentence, line or paragraph's
(they open the answer), compiles to one ``VerbOpening`` where the controller can promise it:
in a free body without fixed text (a list marker or a template would write the first word),
with no other opening of the answer (a start phrase, a copy of the prompt, a word at the first
position, a class opening of the first piece), no controller that inserts words of its own
(keywords, placeholders, capital words, citations, a stated decision), and no all-capitals
answer (the listed verbs are read as verbs as written or lowercased, not shouted).
"""

from __future__ import annotations

from collections.abc import Sequence

from inference.decoder.compile.forms import form_of_constraint, free_body
from inference.decoder.controllers.template import Layout
from inference.decoder.controllers.verb_opening import VerbOpening
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.model import Position, Unit
from reasoning.constraints.model import Constraint, Kind

__all__ = ["form_verb_opening"]

_FIRST_PIECES = frozenset({Unit.ANSWER, Unit.SENTENCES, Unit.LINES, Unit.PARAGRAPHS})
#: Kinds whose controllers write words of their own wherever they fall due (the answer's first word too).
_WRITES_WORDS = frozenset({
    Kind.KEYWORDS_PRESENT, Kind.KEYWORD_FREQUENCY, Kind.CAPITAL_WORD_FREQUENCY, Kind.PLACEHOLDERS,
    Kind.CITE_SOURCES, Kind.START_PHRASE, Kind.REPEAT_PROMPT, Kind.ALL_CAPITALS,
})


def _opens_answer(form: Position) -> bool:
    return form.op == "starts_with" and form.plain and (form.unit is Unit.ANSWER or form.unit in _FIRST_PIECES
                                                        and form.k == 1)


def form_verb_opening(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool, placed: bool
) -> VerbOpening | None:
    """The ``VerbOpening`` of an answer that opens with a verb (None: none, or not controllable
    here; see the module doc). ``inserts``: citations or a stated decision are written;
    ``placed``: a word is placed at a middle position."""
    found = [c for c in constraints if isinstance(form := form_of_constraint(c), Position)
             and form.word_class == "verb" and _opens_answer(form)]
    if not found or inserts or placed or any(c.kind in _WRITES_WORDS for c in constraints):
        return None
    if not free_body(layout):
        return None
    ids = {c.id for c in found}
    for q in constraints:
        if q.id in ids:
            continue
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return None
        if any(isinstance(f, Position) and (_opens_answer(f) or f.unit is Unit.WORDS and f.k == 1) for f in forms):
            return None  # another opening of the answer: left to the prompt
    controlled.update(ids)
    return VerbOpening(sources=tuple(sorted(ids)))
