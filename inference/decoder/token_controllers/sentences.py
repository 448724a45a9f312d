"""How a sentence maximum shares out over the parts of a layout.

Both judges (our verifier and IFEval's Punkt) count a sentence per end
(``.!?`` runs before whitespace, ``。！？``) plus the text after the last
end. Literals bring ends of their own (``P.S.`` is one) and parts between
literals only add an end where their text ends one, so an unterminated part
joins the sentence that follows it. A layout therefore needs a least number
of sentences, and a small maximum must leave room for the parts still to
come, or they come out empty.

Each free part declares the sentences of its own it should hold
(``Free.sentences``: one for running text, none for a title or a heading)
and whether it may shrink to a bare phrase that shares a sentence
(``Free.bare``: a list item). ``sentence_floor`` is the least count of an
answer whose parts all hold text and whose running-text parts each hold a
sentence (one that a literal's end, such as ``P.S.``, may close); below it
the maximum conflicts with the layout. ``sentence_plan`` gives every part
what the rest of the answer will add at least (``SentenceRoom``), after
upgrading, in order, the parts that could be bare to their own sentence
while the maximum allows it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from inference.decoder.token_controllers.template import Free, Literal, Segment
from inference.decoder.vocab import VocabTables, scan_sentences

__all__ = [
    "RUN_ARMED",
    "RUN_CLOSED",
    "RUN_OPEN",
    "RunTables",
    "SentenceRoom",
    "run_codes",
    "run_tables",
    "sentence_floor",
    "sentence_plan",
]

_TERMINALS = re.compile("[.!?\u3002\uff01\uff1f]")
_SPACE = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class SentenceRoom:
    """Sentences the answer adds at least after the current segment, by how
    the text ends when the segment is left: ``closed`` (after a counted end,
    or before any text), ``open`` (text since the last end, unterminated) or
    ``armed`` (a terminal run the next whitespace ends). Each counts the
    current sentence too when it is still to be counted."""

    closed: int = 0
    open: int = 1
    armed: int = 1

    def after(self, run: str, open_text: bool) -> int:
        """The sentences to come for a text whose sentence run is ``run``
        (``Counts.sentence_run``) and that has ``open_text`` since its last end."""
        if run == "armed":
            return self.armed
        return self.open if open_text else self.closed


@dataclass(frozen=True, slots=True)
class _Walk:
    """The least-sentences walk's state: ``run`` as in ``scan_sentences``,
    ``pending`` text since the last end, ``owned`` by a running-text part."""

    run: str = ""
    pending: bool = False
    owned: bool = False


def _literal(text: str, walk: _Walk) -> tuple[int, _Walk]:
    """Ends in ``text`` after ``walk``; its non-space text opens (or continues) a sentence."""
    count, run, pending, owned = 0, walk.run, walk.pending, walk.owned
    for ch in text:
        ends, run = scan_sentences(ch, run)
        if ends:
            count += ends
            pending = owned = False
        elif not ch.isspace():
            pending = True
    return count, _Walk(run, pending, owned)


def _part(need: int, walk: _Walk) -> tuple[int, _Walk]:
    """A part writes ``need`` sentences of its own, the last one left open;
    a part that needs none joins the open sentence (or opens a shared one)."""
    count = 0
    if walk.run == "armed":
        count += 1  # its first whitespace ends the run before it
        walk = _Walk()
    if need <= 0:
        return count, _Walk(pending=True, owned=walk.owned and walk.pending)
    if walk.pending and walk.owned:
        count += 1  # the previous part's sentence ends before this one's
    return count + need - 1, _Walk(pending=True, owned=True)


def _walk(segments: Sequence[Segment], needs: Sequence[int], start: int, walk: _Walk) -> int:
    count = 0
    for index in range(start, len(segments)):
        seg = segments[index]
        if isinstance(seg, Literal):
            added, walk = _literal(seg.text, walk)
        else:
            added, walk = _part(needs[index], walk)
        count += added
    return count + (walk.run == "armed" or walk.pending)


def _needs(segments: Sequence[Segment], upgrade: bool) -> list[int]:
    """Per segment: sentences of its own (literals 0); ``upgrade`` gives bare parts their wish."""
    return [
        (s.sentences if upgrade or not s.bare else 0) if isinstance(s, Free) else 0
        for s in segments
    ]


def sentence_floor(segments: Sequence[Segment]) -> int:
    """The least sentences, for both judges, of an answer of this layout whose
    parts all hold text and whose running-text parts each hold a sentence
    (bare parts sharing one): a smaller maximum conflicts with the layout."""
    return _walk(segments, _needs(segments, upgrade=False), 0, _Walk())


def sentence_plan(
    segments: Sequence[Segment], maximum: int | None
) -> tuple[SentenceRoom | None, ...]:
    """Per segment, what the rest adds at least (None for literals).

    Bare parts (list items) get their sentence, in order, while the floor
    stays within ``maximum``; running-text parts always keep theirs (the
    caller refuses a maximum below ``sentence_floor``).
    """
    needs = _needs(segments, upgrade=False)
    wished = _needs(segments, upgrade=True)
    for index, wish in enumerate(wished):
        if wish > needs[index]:
            trial = [*needs[:index], wish, *needs[index + 1 :]]
            if maximum is None or _walk(segments, trial, 0, _Walk()) <= maximum:
                needs = trial
    rooms: list[SentenceRoom | None] = []
    for index, seg in enumerate(segments):
        if isinstance(seg, Literal):
            rooms.append(None)
            continue
        owned = needs[index] > 0
        rooms.append(
            SentenceRoom(
                closed=_walk(segments, needs, index + 1, _Walk()),
                open=_walk(segments, needs, index + 1, _Walk(pending=True, owned=owned)),
                armed=_walk(
                    segments, needs, index + 1, _Walk(run="armed", pending=True, owned=owned)
                ),
            )
        )
    return tuple(rooms)


@dataclass(frozen=True)
class RunTables:
    """Per token and per run before it (0: none, 1: armed), as ``[2, V]`` tensors:
    ``ends`` counted inside it, ``armed`` whether it leaves a terminal run
    open, ``text`` whether non-space text follows its last end (or, with no
    end, whether it adds non-space text that opens or continues a sentence)."""

    ends: torch.Tensor
    armed: torch.Tensor
    text: torch.Tensor


def run_tables(tables: VocabTables) -> RunTables:
    """The ``RunTables`` of a vocabulary (built once per tokenizer, kept with its tables)."""

    def build() -> dict[str, torch.Tensor]:
        ends: list[list[int]] = [[], []]
        armed: list[list[bool]] = [[], []]
        text: list[list[bool]] = [[], []]
        for token in tables.texts:
            for row, start in enumerate(("", "armed")):
                count, run = scan_sentences(token, start)
                if _TERMINALS.search(token):
                    count, walk = _literal(token, _Walk(run=start))
                    after = walk.pending and walk.run != "armed"
                elif count:
                    # Only the armed run before it ended, at its first whitespace.
                    after = bool(token[_SPACE.search(token).start() + 1 :].strip())  # type: ignore[union-attr]
                else:
                    after = run != "armed" and bool(token.strip())
                ends[row].append(count)
                armed[row].append(run == "armed")
                text[row].append(after)
        return {
            "ends": torch.tensor(ends, dtype=torch.int32),
            "armed": torch.tensor(armed, dtype=torch.bool),
            "text": torch.tensor(text, dtype=torch.bool),
        }

    # Kept on disk with the vocabulary (a walk over every token: seconds at 262k tokens).
    return tables.cached("sentence-runs", lambda: RunTables(**tables.kept("sentence-runs-v1", build)))  # type: ignore[no-any-return]


#: ``run_codes``' token classes: how the text ends after the token (``SentenceRoom``'s cases).
RUN_ARMED, RUN_OPEN, RUN_CLOSED = 0, 1, 2


def run_codes(tables: VocabTables, armed: bool, open_text: bool) -> torch.Tensor:
    """``[V]`` long: ``3 * ends + class`` per token after a text whose run is armed (or not)
    and that has ``open_text`` since its last end, where ``ends`` are the ends the token
    makes (``RunTables.ends``) and ``class`` how the text then ends (``RUN_ARMED``,
    ``RUN_OPEN``, ``RUN_CLOSED``). A per-step sentence bound is then one look-up per token
    in a table over the few codes (``Limits.over_max``), not a chain of ``[V]`` operations.
    """

    def build() -> torch.Tensor:
        runs = run_tables(tables)
        row = 1 if armed else 0
        ends = runs.ends[row].long()
        open_after = runs.text[row] | ((ends == 0) & open_text)
        cls = torch.where(
            runs.armed[row],
            RUN_ARMED,
            torch.where(open_after, RUN_OPEN, RUN_CLOSED),
        )
        return 3 * ends + cls

    return tables.cached(("sentence-codes", armed, open_text), build)  # type: ignore[no-any-return]
