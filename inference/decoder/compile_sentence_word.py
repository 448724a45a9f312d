"""The compile step of a word in the k-th sentence (``controllers.sentence_ends`` with ``op="contains"``).

``position(sentences, k, contains, text)`` with ``k >= 1`` ("the word 'ocean' must appear in the
third sentence", 第二句话必须包含“风险”这个词) compiles to one ``controllers.sentence_words.SentenceWord``:
the k-th sentence may not end before it holds the text, which the model is led to continue into. Controlled on the terms of the k-th sentence's ending
(``compile_form.form_sentence_end``): one such position, no ending of a sentence controlled
beside it, a text without a terminal or a line break, a free body without fixed text, no
controller that writes words of its own, no other rule on sentences' ends or openings, and no
maximum that counts an item of the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from inference.decoder.compile.forms import forms_of
from inference.decoder.compile_form import sentence_text_rule
from inference.decoder.controllers.sentence_ends import SentenceEnd
from inference.decoder.controllers.sentence_words import SentenceWord
from inference.decoder.controllers.template import Layout
from reasoning.constraints.form.kinds import GENERIC_KINDS
from reasoning.constraints.form.model import Position, Unit
from reasoning.constraints.model import Constraint

__all__ = ["form_sentence_word"]


def _contained(c: Constraint) -> Position | None:
    if GENERIC_KINDS.get(c.kind) is not Position:
        return None
    form = next(iter(forms_of(c)), None)
    if isinstance(form, Position) and form.unit is Unit.SENTENCES and form.op == "contains" and form.k >= 1 \
            and form.word is None and form.same_as is None:
        return form
    return None


def form_sentence_word(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool,
    ending: SentenceEnd | None,
) -> SentenceWord | None:
    """The ``controllers.sentence_words.SentenceWord`` of a word in the k-th sentence (None: none, or not
    controllable here; see the module doc). ``ending``: the k-th sentence's ending already
    compiled (one controller of sentence ends)."""
    if ending is not None:
        return None
    found = [(c, form) for c in constraints if (form := _contained(c)) is not None]
    rule = sentence_text_rule(constraints, layout, controlled, found, inserts=inserts)
    return SentenceWord.of(rule) if rule is not None else None
