"""How an answer ended: the model's own stop, a planned landing, or a budget cut.

``END_MODEL``: the model chose to stop where it had an alternative.
``END_LANDED``: the steering or the token budget ended the answer, and the
text ends complete (``ends_complete``): on a sentence end or a closed
structure -- either because the steering closed the sentence in time, or
because the search rolled the answer back to its last complete sentence.
``END_CUT`` (``"budget_cut"``): a budget ended it and no complete prefix
exists; such an answer ranks below every complete hypothesis.

``ends_complete`` is the one definition the beam search, the response and
the benchmarks (``complete_share``) share, so the figure a benchmark reports
is the property the decoder plans for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["ENDS", "END_CUT", "END_LANDED", "END_MODEL", "End", "Lander", "ends_complete"]

End = Literal["model", "landed", "budget_cut"]
END_MODEL: Final = "model"
END_LANDED: Final = "landed"
END_CUT: Final = "budget_cut"
ENDS: tuple[End, ...] = (END_MODEL, END_LANDED, END_CUT)

_TERMINALS = frozenset(".!?\u3002\uff01\uff1f\u2026\u0964\u0965\u061f\u06d4")  # .!?。！？… ।॥ ؟۔
_CLOSERS = frozenset("\"'\u201d\u2019\u300d\u300f)*`")  # closers that may follow a sentence end
_STRUCTURE = frozenset("}]>")  # a closed JSON value, a list, a placeholder or a title


def ends_complete(text: str) -> bool:
    """Whether ``text`` ends on a sentence end or a closed structure.

    Trailing whitespace is ignored; closing quotes, brackets and emphasis
    marks after a sentence end belong to it. A text that ends in ``}``,
    ``]`` or ``>`` ends a closed structure (JSON, a bracket, a ``<<title>>``).
    An empty text is not complete.

    >>> ends_complete("It is risky.")
    True
    >>> ends_complete('He said "no."')
    True
    >>> ends_complete("风险很高。")
    True
    >>> ends_complete("यह जोखिम है।")
    True
    >>> ends_complete('{"a": 1}')
    True
    >>> ends_complete("and a deep understanding of human-")
    False
    """
    stripped = text.rstrip()
    if not stripped:
        return False
    if stripped[-1] in _STRUCTURE:
        return True
    body = stripped
    while body and body[-1] in _CLOSERS:
        body = body[:-1].rstrip()
    return bool(body) and body[-1] in _TERMINALS


@dataclass(frozen=True)
class Lander:
    """Finds where a token sequence last ends complete (for the search's rollback).

    ``decode`` turns token ids into text (the tokenizer's). ``complete_length``
    is the length of the longest prefix that ``ends_complete``, or None;
    candidates are the prefixes whose last token holds a terminal or a
    structure closer, tried from the end, so a long answer costs one decode
    per token plus a few prefix decodes.
    """

    decode: Callable[[Sequence[int]], str]
    _pieces: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def complete(self, tokens: Sequence[int]) -> bool:
        """Whether the text of ``tokens`` ends complete."""
        return ends_complete(self.decode(list(tokens)))

    def complete_length(self, tokens: Sequence[int]) -> int | None:
        """The length of the longest complete prefix of ``tokens`` (None: there is none)."""
        marks = _TERMINALS | _CLOSERS | _STRUCTURE | {"\ufffd"}  # a byte fragment may end a 。
        for k in range(len(tokens), 0, -1):
            piece = self._piece(tokens[k - 1])
            if piece.strip() and not any(ch in marks for ch in piece):
                continue
            if self.complete(tokens[:k]):
                return k
        return None

    def _piece(self, token: int) -> str:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self.decode([token])
            self._pieces[token] = piece
        return piece
