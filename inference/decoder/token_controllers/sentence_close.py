"""Sentence minimum under a tight budget: the current sentence closes in time.

When the token budget left (or the words a word maximum leaves) is too
tight for the sentences a minimum still owes (fewer than
``_TOKENS_PER_SENTENCE`` tokens or ``_WORDS_PER_SENTENCE`` words per missing
sentence), the gate segment asks the current sentence to close
(``RowPlanDraft.close``, masked by the layout): "end" when it has a word and either
ends in a word a period may follow (``good_last_word``) or in an end that
only waits for whitespace (``Counts.firm_run``); "word" when such a word must
come first (the text ends in a single letter, a number, an abbreviation).
Owed keywords and capital words are written before the sentence closes
(their controllers read the demand).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inference.decoder.token_controllers.count_tallies import good_last_word
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import Context, Controller, RowPlan, RowPlanDraft
from inference.decoder.token_controllers.template import Free

__all__ = ["SentenceClose", "build_sentence_close"]

_TOKENS_PER_SENTENCE = 6  # below this many budget tokens per missing sentence, close the current one
_WORDS_PER_SENTENCE = 3  # likewise for the words a maximum leaves


class SentenceClose(Controller):
    """Asks the current sentence to close when the owed sentences need it (see the module doc)."""

    def __init__(self, ctx: Context, need: int, budget: int) -> None:
        self.need = need
        self.budget = budget
        self.max_words = ctx.limits.max_words

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state, comp = d.state, d.comp
        segment = comp.segment
        if not isinstance(segment, Free) or not segment.gate or state.counts.bracket_open or state.pending:
            return None
        counts = state.counts
        missing = self.need - counts.firm_sentences - comp.reserve.firm_sentences
        if missing <= 0:
            return None
        left = tokens_left(self.budget, d, owed=d.owed_tokens)
        if state.seg_deadline is not None:
            left = min(left, state.seg_deadline - state.n_tokens)
        words_left = None
        if self.max_words is not None:
            words_left = self.max_words - comp.reserve.units - 2 * comp.free_after - counts.units
        if left > _TOKENS_PER_SENTENCE * missing and (words_left is None or words_left > _WORDS_PER_SENTENCE * missing):
            return None
        if counts.firm_run == "armed" or (counts.sentence_words > 0 and good_last_word(counts.word_tail)):
            d.close = "end"
        else:
            d.close = "word"
        return None


def build_sentence_close(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence closer, for a sentence minimum under a token budget."""
    if ctx.limits.min_sentences is None or ctx.max_new_tokens is None:
        return None
    return SentenceClose(ctx, ctx.limits.min_sentences, ctx.max_new_tokens)
