"""Forbidden words, checked at the token level across token boundaries.

A forbidden word is violated once it stands in the text as a whole word
(``\\bword\\b``, case-insensitive): the verifier's rule
(``reasoning.constraints.verifiers``) and IFEval's. So "banking", "banks" and
"sandbank" are other words and stay allowed under a ban on "bank".

A token can only complete a violation together with the end of the text
before it, so a candidate is checked on ``tail + token`` where ``tail`` is
the last ``max_len + 1`` characters: that window contains every occurrence
the token could finish, including a word split over several tokens ("fin" +
"anc" + "ial").

A forbidden word written at the very end of the text is *open*: the next
character decides. "bank" followed by "ing" is "banking"; followed by a space
or a period it is the forbidden word. ``token_ok`` therefore refuses only
closed occurrences (the word and then a character that ends it), and
``ends_open`` tells the controller that the next token must continue the
word (begin with a word character), so the beam is never stranded:
continuations such as "s" or "ing" always exist. ``ends_ok`` refuses to end
the text (EOS, a forced closing literal) on an open occurrence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.token_controllers.protocol import Context, Controller, SteerState, spec_of

__all__ = ["Forbidden", "ForbiddenWords", "build_forbidden"]


@dataclass(frozen=True)
class ForbiddenWords:
    """The words no answer may contain as whole words."""

    words: tuple[str, ...]

    def __post_init__(self) -> None:
        # One pattern per word: occurrences of different words may overlap
        # ("a b c" and "b"), and one alternation would report only one of them.
        patterns = tuple(re.compile(rf"\b{re.escape(w)}\b", re.IGNORECASE) for w in self.words)
        object.__setattr__(self, "_patterns", patterns)
        object.__setattr__(self, "_window", max(len(w) for w in self.words) + 1)

    def _ends(self, text: str) -> list[int]:
        """End offsets of every whole-word occurrence in ``text``."""
        return [m.end() for p in self._patterns for m in p.finditer(text)]  # type: ignore[attr-defined]

    @property
    def window(self) -> int:
        return self._window  # type: ignore[attr-defined,no-any-return]

    def token_ok(self, tail: str, chunk: str) -> bool:
        """False when appending ``chunk`` to text ending in ``tail`` writes a
        forbidden word whole and closed (followed by a character that ends it).

        An occurrence at the very end is open and allowed here; see
        :meth:`ends_open`.
        """
        text = tail[-self.window :] + chunk
        return all(end == len(text) for end in self._ends(text))

    def ends_open(self, tail: str) -> bool:
        """True when the text ends in a whole forbidden word that only a
        following word character can still turn into another word."""
        text = tail[-self.window :]
        return len(text) in self._ends(text)

    def ends_ok(self, tail: str) -> bool:
        """False when the text, ending now, would end in a forbidden word."""
        return not self.ends_open(tail)

    def violated(self, text: str) -> bool:
        """True when ``text`` (complete) contains a forbidden word."""
        return any(p.search(text) is not None for p in self._patterns)  # type: ignore[attr-defined]


class Forbidden(Controller):
    """Forbidden words at decode time: every candidate is checked (``token_ok``);
    after an open occurrence only a word character may follow, a forced end
    or an unfinished character waits for one, and EOS is refused."""

    lazy = True

    def __init__(self, ctx: Context, words: ForbiddenWords) -> None:
        self.words = words
        self._wordchar = ctx.tables.starts_wordchar

    def ends_ok(self, state: SteerState) -> bool:
        return self.words.ends_ok(state.text)

    def narrow(self, states: Sequence[SteerState], pool: torch.Tensor) -> None:
        open_rows = [r for r, s in enumerate(states) if self.words.ends_open(s.text)]
        if open_rows:
            pool[open_rows] = pool[open_rows].masked_fill(~self._wordchar, float("-inf"))

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        if not self.words.token_ok(state.text, text):
            return False
        return not ((tail or closing) and self.words.ends_open(state.text[-self.words.window :] + text))

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.words.ends_ok(state.text) else ("forbidden_words",)


def build_forbidden(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The forbidden-word controller, for hard forbidden words."""
    words = spec_of(specs, ForbiddenWords)
    return Forbidden(ctx, words) if words is not None else None
