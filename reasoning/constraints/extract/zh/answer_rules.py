"""The Chinese readers of answer rules that run after every other form step.

Each reader is a module of its own (the English ones: :mod:`reasoning.constraints.extract.en.answer_rules`);
they run last because each replaces a reading the earlier steps give to its wording.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reasoning.constraints.extract.common.bullet_separator import refine_bullet_separator_chinese
from reasoning.constraints.extract.common.comma_separated import refine_csv_chinese
from reasoning.constraints.extract.common.italic_thesis import refine_italic_thesis_chinese
from reasoning.constraints.extract.common.mark_set import refine_mark_set_chinese
from reasoning.constraints.extract.common.nesting import refine_nesting_chinese
from reasoning.constraints.extract.common.stop_share import refine_stop_share_chinese
from reasoning.constraints.extract.common.sub_bullets import refine_sub_bullets_chinese
from reasoning.constraints.extract.common.template import refine_template_chinese
from reasoning.constraints.extract.common.word_classes import refine_word_classes_chinese
from reasoning.constraints.extract.zh.choice import refine_choice_chinese
from reasoning.constraints.extract.zh.neighbour import refine_neighbour_chinese
from reasoning.constraints.found import Found

__all__ = ["refine_answer_rules_chinese"]

_READERS: Sequence[Callable[[str, Sequence[Found]], list[Found]]] = (
    refine_choice_chinese,
    refine_bullet_separator_chinese,
    refine_mark_set_chinese,
    refine_stop_share_chinese,
    refine_nesting_chinese,
    refine_italic_thesis_chinese,
    refine_sub_bullets_chinese,
    refine_csv_chinese,
    refine_template_chinese,
    refine_neighbour_chinese,
    refine_word_classes_chinese,
)


def refine_answer_rules_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with the readings of :data:`_READERS` added or substituted."""
    kept = list(found)
    for reader in _READERS:
        kept = reader(text, kept)
    return kept
