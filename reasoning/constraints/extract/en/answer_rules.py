"""The English readers of answer rules that run after every other form reader.

Each reader is a module of its own; they run last because each replaces a
reading the earlier, more general readers give to its wording (a choice
read as a word count, a copied word range read as a length, a separator
"instead of bullet points" read as a bullet count): an earlier reading that
steers against the request is worse than none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reasoning.constraints.extract.common.bullet_separator import detect_bullet_separator
from reasoning.constraints.extract.common.comma_separated import detect_csv
from reasoning.constraints.extract.common.italic_thesis import detect_italic_thesis
from reasoning.constraints.extract.common.mark_set import detect_mark_set
from reasoning.constraints.extract.common.nesting import detect_nesting
from reasoning.constraints.extract.common.stop_share import detect_stop_share
from reasoning.constraints.extract.common.sub_bullets import detect_sub_bullets
from reasoning.constraints.extract.common.template import detect_template
from reasoning.constraints.extract.common.word_classes import detect_word_classes
from reasoning.constraints.extract.en.choice import detect_choice
from reasoning.constraints.extract.en.copy_words import (
    detect_copied_characters,
    detect_copied_words,
    detect_first_word_replaced,
)
from reasoning.constraints.extract.en.named import _Ctx

__all__ = ["refine_answer_rules_english"]

_READERS: Sequence[Callable[[_Ctx], None]] = (
    detect_choice,
    detect_bullet_separator,
    detect_copied_words,
    detect_copied_characters,
    detect_first_word_replaced,
    detect_mark_set,
    detect_stop_share,
    detect_nesting,
    detect_italic_thesis,
    detect_sub_bullets,
    detect_csv,
    detect_template,
    detect_word_classes,
)


def refine_answer_rules_english(ctx: _Ctx) -> None:
    """``ctx.found`` with the readings of :data:`_READERS` added or substituted."""
    for reader in _READERS:
        reader(ctx)
