"""A text the decoder forces token by token, in its two spellings.

A tokenizer spells a text differently after a word (with its leading
space) and after whitespace or at the start of the answer. A controller
that writes a text at a place (the k-th word, the opening of the k-th
sentence) offers the spelling that fits the text so far, and once the
model takes the first token of either spelling, forces the rest of that one.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference.decoder.vocab import VocabTables

__all__ = ["Spelling"]


@dataclass(frozen=True)
class Spelling:
    """``spaced``: the text's tokens after a word; ``bare``: after whitespace or at the start."""

    spaced: tuple[int, ...]
    bare: tuple[int, ...]

    @classmethod
    def of(cls, tables: VocabTables, text: str) -> Spelling:
        return cls(tuple(tables.encode(" " + text)), tuple(tables.encode(text)))

    @staticmethod
    def bare_after(text: str) -> bool:
        """Whether the bare spelling is the one after ``text`` (the start, or whitespace)."""
        return text == "" or text[-1].isspace()

    def fitting(self, text: str) -> tuple[int, ...]:
        """The spelling to write after ``text``."""
        return self.bare if self.bare_after(text) else self.spaced

    def rest_after(self, token_id: int) -> tuple[int, ...] | None:
        """The tokens still to force once ``token_id`` began a spelling (None: it began neither)."""
        for spelling in (self.spaced, self.bare):
            if spelling and token_id == spelling[0]:
                return spelling[1:]
        return None
