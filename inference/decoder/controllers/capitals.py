"""A minimum of words written in capitals, counted the way IFEval counts them.

IFEval counts the answer's nltk tokens that are ``isupper()`` ("NASA", "I",
"DON'T" as "DO" and "N'T"); our verifier counts the same tokens with
``textstats.count_capital_words``. A hard ``capital_word_frequency`` minimum
is met by capital words *the model chooses*:

- owed capital words are paced over the token budget like keywords (the
  k-th of N once k / (N + 1) of it is spent); a due one is written at the
  next word boundary: the row keeps only tokens that begin a word of at
  least two capital letters (" RISK", " NOT"), so the model picks the word;
- a word begun in capitals while one is owed continues without a lowercase
  letter until it ends ("RISK" cannot become "RISKy"), so it counts;
- the end is held back while one is owed, the budget keeps room for each
  owed word and a word maximum keeps a word for each.

A maximum ("less than") is left to the prompt: "I" and "A" are capital
words, and whether a run of capitals is one token or several is nltk's
decision, so a mask could not promise the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from inference.decoder.vocab import VocabTables
from reasoning.constraints.textstats import count_capital_words

__all__ = ["CAPITAL_WORD_TOKENS", "Capitals", "capital_starts"]

#: Budget tokens kept for one owed capital word (its first token and one more).
CAPITAL_WORD_TOKENS = 2


@dataclass(frozen=True)
class Capitals:
    """At least ``need`` capital words; ``sources`` are the constraints behind it."""

    need: int
    sources: tuple[str, ...] = ()

    def count(self, text: str) -> int:
        """Capital words in ``text``, as our verifier (and IFEval) count them."""
        return count_capital_words(text)

    def count_after(self, count: int, text: str, chunk: str) -> int:
        """``count(text + chunk)`` from ``count == count(text)``, recounting only
        the text after the last whitespace (no counted token holds whitespace,
        so the tokens before it are final)."""
        start = len(text)
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        rest = text[start:]
        return count - self.count(rest) + self.count(rest + chunk)

    def owed(self, count: int, later: int) -> int:
        """Capital words still needed beyond ``count`` and the later literals' ``later``."""
        return max(0, self.need - count - later)


def capital_starts(tables: VocabTables, *, spaced: bool) -> torch.Tensor:
    """``[V]`` bool: tokens that begin a word of capitals: leading spaces
    (required when ``spaced``: the text before ends in a word or a sign),
    then two or more letters, every one a capital."""

    def build() -> torch.Tensor:
        values = []
        for text in tables.texts:
            word = text.lstrip(" ")
            lead = len(text) > len(word)
            values.append(len(word) >= 2 and word.isalpha() and word.isupper() and (lead or not spaced))
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("capital-starts", spaced), build)  # type: ignore[no-any-return]
