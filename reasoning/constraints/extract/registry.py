"""The registered readers of each language, in the order extraction runs them, and the one entry point.

A reader takes its language's context (:class:`.en.context.Context` over the
spaCy parse, :class:`.zh.context.Context` over the jieba segmentation) and
adds readings to its ``found`` or replaces some already there. All readers of
a language share one context per prompt, so the order is part of the
meaning: the named-kind readers come first, the form readers after them
refine what those read (a word count that holds per sentence replaces the
plain word count), and the answer-rule readers run last because each
replaces a reading the earlier, more general readers give to its wording (a
choice read as a word count, a copied word range read as a length, a
separator "instead of bullet points" read as a bullet count): an earlier
reading that steers against the request is worse than none.

Counts are read in two passes of the one English context, on purpose:
``named.detect_named_counts`` runs first because the named readers after it
work on its readings (the divider template, the n-th paragraph, blank-line
paragraphs read paragraph counts), and ``form.detect_unit_counts`` runs
after every named reader because it must see their spans (a count inside a
keyword or an end phrase is no count) and replaces the named word and
sentence counts it refines; it leaves a plain count of words, sentences or
paragraphs to the first pass. Both take a relation written after the unit
through :func:`.en.phrases.relation_after_unit`.

Adding a reader is a function in the module of its family (``en/``, ``zh/``,
``common/`` for one with an English and a Chinese half) plus one line here.
:func:`read` runs them; :func:`reasoning.constraints.extraction.extract`
calls it once per prompt.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

from spacy.tokens import Doc

from reasoning.constraints.extract.common.bullet_separator import (
    detect_bullet_separator,
    refine_bullet_separator_chinese,
)
from reasoning.constraints.extract.common.comma_separated import detect_csv, refine_csv_chinese
from reasoning.constraints.extract.common.italic_thesis import (
    detect_italic_thesis,
    refine_italic_thesis_chinese,
)
from reasoning.constraints.extract.common.list_marker import detect_list_marker
from reasoning.constraints.extract.common.mark_set import detect_mark_set, refine_mark_set_chinese
from reasoning.constraints.extract.common.nesting import detect_nesting, refine_nesting_chinese
from reasoning.constraints.extract.common.sentence_types import (
    refine_sentence_types_chinese,
    refine_sentence_types_english,
)
from reasoning.constraints.extract.common.stop_share import (
    detect_stop_share,
    refine_stop_share_chinese,
)
from reasoning.constraints.extract.common.sub_bullets import (
    detect_sub_bullets,
    refine_sub_bullets_chinese,
)
from reasoning.constraints.extract.common.template import detect_template, refine_template_chinese
from reasoning.constraints.extract.common.word_classes import (
    detect_word_classes,
    refine_word_classes_chinese,
)
from reasoning.constraints.extract.common.word_ratio import (
    detect_word_ratio,
    refine_word_ratio_chinese,
)
from reasoning.constraints.extract.common.word_shape import (
    refine_word_shape_chinese,
    refine_word_shape_english,
)
from reasoning.constraints.extract.en import context as en_context
from reasoning.constraints.extract.en import form as en_form
from reasoning.constraints.extract.en import named as en_named
from reasoning.constraints.extract.en.amounts import refine_amounts_english
from reasoning.constraints.extract.en.choice import detect_choice
from reasoning.constraints.extract.en.copy_words import (
    detect_copied_characters,
    detect_copied_words,
    detect_first_word_replaced,
)
from reasoning.constraints.extract.en.pieces import refine_pieces_english
from reasoning.constraints.extract.en.sequence import refine_sequence_english
from reasoning.constraints.extract.en.structure import refine_structure
from reasoning.constraints.extract.en.word_rules import refine_word_rules_english
from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.zh import context as zh_context
from reasoning.constraints.extract.zh import form as zh_form
from reasoning.constraints.extract.zh.amounts import refine_amounts_chinese
from reasoning.constraints.extract.zh.choice import refine_choice_chinese
from reasoning.constraints.extract.zh.named import read_named
from reasoning.constraints.extract.zh.neighbour import refine_neighbour_chinese
from reasoning.constraints.extract.zh.pieces import refine_pieces_chinese
from reasoning.constraints.extract.zh.sequence import refine_sequence_chinese
from reasoning.constraints.extract.zh.structure import refine_structure_chinese
from reasoning.constraints.extract.zh.word_rules import refine_word_rules_chinese

__all__ = ["CHINESE", "ENGLISH", "ChineseReader", "EnglishReader", "read"]

EnglishReader = Callable[[en_context.Context], None]
ChineseReader = Callable[[zh_context.Context], None]


def _on_text(step: Callable[[str, list[Found]], list[Found]]) -> ChineseReader:
    """A Chinese reader written over the text and the readings so far, as a reader of the context.

    The reader keeps ``step``'s name, and ``step`` as its ``__wrapped__``.
    """

    @functools.wraps(step)
    def read_step(ctx: zh_context.Context) -> None:
        ctx.found = step(ctx.text, ctx.found)

    return read_step


ENGLISH: tuple[EnglishReader, ...] = (
    # the catalog's named kinds
    en_named.detect_named_counts,  # word / sentence / paragraph / bullet / section / placeholder counts
    en_named.detect_divider_template,
    en_named.detect_nth_paragraph,
    en_named.drop_blank_line_paragraphs,
    en_named.detect_highlights,
    en_named.detect_capital_words,
    en_named.detect_keywords,
    en_named.detect_letters,
    en_named.detect_case,
    en_named.detect_flags,
    en_named.detect_postscript,
    en_named.detect_start_end,
    en_named.detect_constrained,
    en_named.detect_repeat,
    en_named.detect_language,
    en_named.detect_citation_window,
    en_named.detect_cite_sources,
    en_named.detect_jurisdiction,
    en_named.detect_precision,
    en_named.prune_restated,  # readings another reading restates or implies
    # the constraint form: every unit of the lexicon, refining the named readings
    en_form.detect_unit_counts,  # counts of every lexicon unit, with filters and per-item scope
    refine_word_shape_english,
    en_form.detect_quoted_symbols,
    en_form.detect_case,
    en_form.detect_wraps,
    en_form.detect_layouts,
    en_form.detect_positions,
    en_form.detect_copies,
    en_form.detect_elliptical_ranges,
    en_form.detect_keywords_per_item,
    en_form.detect_items_per_piece,
    refine_structure,  # a copy's case or dropped sentence, prose beside a list, table headers
    refine_pieces_english,
    # answer rules: each replaces what the readers above gave its wording
    detect_choice,
    detect_bullet_separator,
    detect_list_marker,
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
    # last: word rules, positions in a sequence, loose amounts, sentence types
    refine_word_rules_english,
    refine_sequence_english,
    refine_amounts_english,
    refine_sentence_types_english,
    detect_word_ratio,
)

CHINESE: tuple[ChineseReader, ...] = (
    read_named,  # the catalog's named kinds, from the text's patterns
    # the constraint form
    zh_form.read_counts,
    zh_form.read_named_counts,
    zh_form.read_case,
    zh_form.read_wraps,
    zh_form.read_layouts,
    zh_form.read_quoted_spans,
    zh_form.read_positions,
    zh_form.read_answer_ends,
    zh_form.read_copies,
    _on_text(refine_structure_chinese),
    _on_text(refine_word_shape_chinese),
    _on_text(refine_pieces_chinese),
    # answer rules: each replaces what the readers above gave its wording
    _on_text(refine_choice_chinese),
    _on_text(refine_bullet_separator_chinese),
    _on_text(refine_mark_set_chinese),
    _on_text(refine_stop_share_chinese),
    _on_text(refine_nesting_chinese),
    _on_text(refine_italic_thesis_chinese),
    _on_text(refine_sub_bullets_chinese),
    _on_text(refine_csv_chinese),
    _on_text(refine_template_chinese),
    _on_text(refine_neighbour_chinese),
    _on_text(refine_word_classes_chinese),
    # last: word rules, sentence types, positions in a sequence, loose amounts
    _on_text(refine_word_rules_chinese),
    _on_text(refine_sentence_types_chinese),
    _on_text(refine_sequence_chinese),
    _on_text(refine_amounts_chinese),
    _on_text(refine_word_ratio_chinese),
)


def _run_english(doc: Doc, text: str, readers: Sequence[EnglishReader]) -> list[Found]:
    ctx = en_context.Context(doc, text)
    for reader in readers:
        reader(ctx)
    return ctx.found


def _run_chinese(doc: Doc, text: str, readers: Sequence[ChineseReader]) -> list[Found]:
    ctx = zh_context.Context(doc, text)
    for reader in readers:
        reader(ctx)
    return ctx.found


def read(docs: Mapping[str, Doc], text: str) -> list[Found]:
    """Every reading of ``text``: the English readers over ``docs["en"]``, then the Chinese over ``docs["zh"]``.

    ``docs`` holds the parses the prompt needs (a language without one is not
    read). The readings are not yet deduplicated or accounted for: that is
    :mod:`reasoning.constraints.extraction`'s next step.
    """
    found: list[Found] = []
    if "en" in docs:
        found.extend(_run_english(docs["en"], text, ENGLISH))
    if "zh" in docs:
        found.extend(_run_chinese(docs["zh"], text, CHINESE))
    return found
