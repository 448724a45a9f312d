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
is the property the decoder plans for. Complete means the text ends on

- a sentence end: a terminal (``.!?`` ``。！？`` ``…`` ``।॥`` ``؟۔``), closing
  quotes, brackets, emphasis or a code fence after it belonging to it;
- a closed structure the text itself shows: a JSON value, a list, a
  placeholder or a ``<<title>>`` (``}`` ``]`` ``>``), a table row (``|``),
  also inside a closing code fence;
- the closing the request itself requires (``required_closing``: an end
  phrase, the right side of a wrap, the word or text the answer must end
  with). The user fixed those words as the answer's last, so they end it
  even without a terminal (IFEval's end check fails a period after them).

A last line that is only a list marker (``3.``, ``-``) is an empty list
item: an open structure, though it ends in a period.

A list item, a heading or a line of a list is none of these on its own: the
text cannot tell a finished bare line from a cut one, so the steering ends
the answer's last part on a sentence end (``token_controllers.landing``), which
changes no count of sentences, as the text after the last end counts as
one sentence for every judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from reasoning.constraints.model import Constraint, Kind

__all__ = [
    "ENDS",
    "END_CUT",
    "END_LANDED",
    "END_MODEL",
    "End",
    "Lander",
    "ends_complete",
    "required_closing",
]

End = Literal["model", "landed", "budget_cut"]
END_MODEL: Final = "model"
END_LANDED: Final = "landed"
END_CUT: Final = "budget_cut"
ENDS: tuple[End, ...] = (END_MODEL, END_LANDED, END_CUT)

_TERMINALS = frozenset(".!?\u3002\uff01\uff1f\u2026\u0964\u0965\u061f\u06d4")  # .!?。！？… ।॥ ؟۔
_CLOSERS = frozenset("\"'\u201d\u2019\u300d\u300f)*`")  # closers that may follow a sentence end
_LIST_MARKER = re.compile(r"\d+[.)]|[-*+\u2022]")  # a list item's marker alone
_STRUCTURE = frozenset("}]>|")  # a closed JSON value, a list, a placeholder, a title, a table row


def ends_complete(text: str, closing: Iterable[str] = ()) -> bool:
    """Whether ``text`` ends on a sentence end or a closed structure (see the module doc).

    Trailing whitespace is ignored; closing quotes, brackets, emphasis
    marks and fences after a sentence end or a structure belong to it. A
    text that ends in ``}``, ``]``, ``>`` or ``|`` ends a closed structure
    (JSON, a bracket, a ``<<title>>``, a table row). ``closing``: texts the
    request requires the answer to end with (``required_closing``); a text
    ending with one (ignoring case, as IFEval does) is complete. An empty
    text is not complete.

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
    >>> ends_complete('```json\\n{"a": 1}\\n```')
    True
    >>> ends_complete("Any questions? Let me know", closing=["let me know"])
    True
    >>> ends_complete("and a deep understanding of human-")
    False
    >>> ends_complete("* Rivers carry silt")
    False
    >>> ends_complete("1. Plan meals.\\n2. ")
    False
    """
    stripped = text.rstrip()
    if not stripped:
        return False
    lowered = stripped.lower()
    if any(c.strip() and lowered.endswith(c.strip().lower()) for c in closing):
        return True
    if _LIST_MARKER.fullmatch(stripped.rsplit("\n", 1)[-1].strip()):
        return False  # an empty list item ("3.", "-") opens a structure
    if stripped[-1] in _STRUCTURE:
        return True
    body = stripped
    while body and body[-1] in _CLOSERS:
        body = body[:-1].rstrip()
    return bool(body) and (body[-1] in _TERMINALS or body[-1] in _STRUCTURE)


def required_closing(constraints: Iterable[Constraint]) -> tuple[str, ...]:
    """The texts the request requires the answer to end with: an end phrase,
    a wrap's right side holding a letter or digit (a closing quote alone is
    no closing: the sentence inside it must end), the text the last unit of
    the answer must be or end with (``position``, ``k = -1``: its last word,
    sentence, line, or the whole answer)."""
    out: list[str] = []
    for c in constraints:
        params = c.params
        if c.kind == Kind.END_PHRASE:
            out.append(str(params.get("phrase", "")))
        elif c.kind == Kind.WRAP:
            right = str(params.get("right", ""))
            if any(ch.isalnum() for ch in right):
                out.append(right)
        elif (
            c.kind == Kind.POSITION
            and params.get("op") in ("is", "ends_with")
            and (params.get("unit") == "answer" or params.get("k") == -1)
        ):
            out.append(str(params.get("text", "")))
    return tuple(t for t in out if t.strip())


@dataclass(frozen=True)
class Lander:
    """Finds where a token sequence last ends complete (for the search's rollback).

    ``decode`` turns token ids into text (the tokenizer's); ``closing`` are
    the request's required closing texts (``required_closing``).
    ``complete_length`` is the length of the longest prefix that
    ``ends_complete``, or None; candidates are the prefixes whose last token
    holds a terminal, a structure closer or the end of a closing text, tried
    from the end, so a long answer costs one decode per token plus a few
    prefix decodes.
    """

    decode: Callable[[Sequence[int]], str]
    closing: tuple[str, ...] = ()
    _pieces: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def complete(self, tokens: Sequence[int]) -> bool:
        """Whether the text of ``tokens`` ends complete."""
        return ends_complete(self.decode(list(tokens)), self.closing)

    def complete_length(self, tokens: Sequence[int]) -> int | None:
        """The length of the longest complete prefix of ``tokens`` (None: there is none).

        The prefix never ends in whitespace-only tokens: a line or paragraph break with
        nothing after it opens what would follow, so an answer rolled back (or ended
        before a step left out) ends where its last sentence does."""
        marks = _TERMINALS | _CLOSERS | _STRUCTURE | {"\ufffd"}  # a byte fragment may end a 。
        marks |= {c.strip()[-1].lower() for c in self.closing if c.strip()}
        for k in range(len(tokens), 0, -1):
            piece = self._piece(tokens[k - 1])
            if not piece.strip() or not any(ch in marks for ch in piece.lower()):
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
