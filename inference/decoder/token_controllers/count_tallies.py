"""Counted quantities of the answer: words, sentences, a letter, placeholders.

Counting follows IFEval's definitions, which our verifiers share: a word is a
``\\w+`` run, a sentence ends at a run of ``.!?`` (closing quotes or brackets
may follow) before whitespace, or at ``。！？`` (``vocab.scan_sentences``; no
abbreviation is exempted, so the tally never falls below the verifier's), a
placeholder is ``[...]`` on one line. Words are tallied twice:
``words`` by IFEval's rule and ``units`` by our verifier's
(``textstats.count_words``: each Han character is a word of its own). Since
``units >= words`` on every text, the maxima bound ``units`` and the minima
``words``, so a text the controllers let through passes both judges. ``Counts`` is the
running tally of one beam, updated per appended chunk in O(len(chunk)).
``Limits`` says what the request bounds; ``over_max`` gives the tally after each
candidate token as a ``[V]`` vector, so an upper bound becomes one mask, with
room kept for what the rest of the layout adds (``Later``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import torch

from inference.decoder.token_controllers.sentences import (
    RUN_ARMED,
    RUN_CLOSED,
    RUN_OPEN,
    SentenceRoom,
    run_codes,
    run_tables,
)
from inference.decoder.vocab import WORD_RE, VocabTables, joins_run, scan_sentences
from reasoning.constraints.textstats import ABBREVIATIONS, count_words

__all__ = ["Counts", "Later", "Limits", "count_text", "firm_scan", "good_last_word"]

_CJK_ENDS = "\u3002\uff01\uff1f"  # 。！？
_CLOSERS = "\"'\u201d\u2019)]"


@dataclass(frozen=True, slots=True)
class Counts:
    """Running tallies of one beam's text."""

    words: int = 0
    in_word: bool = False
    units: int = 0
    in_unit: bool = False
    sentences: int = 0
    ends_terminal: bool = False
    sentence_run: str = ""  # see ``scan_sentences``
    sentence_words: int = 0  # words (IFEval's rule) since the last counted sentence end
    open_text: bool = False  # non-space text since the last counted sentence end (a sentence to come)
    firm_sentences: int = 0  # ends every judge counts (see ``firm_scan``): what minima count
    firm_run: str = ""  # see ``firm_scan``
    word_tail: str = ""  # the last word-character run, capped (empty after a non-word character)
    letter: int = 0
    placeholders: int = 0
    bracket_open: bool = False
    last_char: str = ""

    def add(self, chunk: str, letter: str | None) -> Counts:
        """The tallies after ``chunk`` is appended."""
        if not chunk:
            return self
        runs = WORD_RE.findall(chunk)
        words = self.words + len(runs)
        if runs and self.in_word and WORD_RE.match(chunk[0]):
            words -= 1
        units = self.units + count_words(chunk)
        if self.in_unit and joins_run(chunk[0]):
            units -= 1
        ends, run = scan_sentences(chunk, self.sentence_run)
        firm, firm_run, tail = firm_scan(chunk, self.firm_run, self.word_tail)
        sentence_words = self.sentence_words + words - self.words
        open_text = self.open_text or not chunk.isspace()
        if ends:
            after = chunk[_last_end(chunk, self.sentence_run) :]
            sentence_words = len(WORD_RE.findall(after))
            open_text = bool(after.strip())
        placeholders, open_ = self.placeholders, self.bracket_open
        for ch in chunk:
            if ch == "\n":
                open_ = False
            elif ch == "[" and not open_:
                open_ = True
            elif ch == "]" and open_:
                open_ = False
                placeholders += 1
        last = chunk[-1]
        return Counts(
            words=words,
            in_word=bool(WORD_RE.match(last)),
            units=units,
            in_unit=joins_run(last),
            sentences=self.sentences + ends,
            ends_terminal=bool(run),
            sentence_run=run,
            sentence_words=sentence_words,
            open_text=open_text,
            firm_sentences=self.firm_sentences + firm,
            firm_run=firm_run,
            word_tail=tail,
            letter=self.letter + (chunk.lower().count(letter) if letter else 0),
            placeholders=placeholders,
            bracket_open=open_,
            last_char=last,
        )


_TAIL_CAP = 12


def good_last_word(tail: str) -> bool:
    """Whether a period after the word ``tail`` ends a sentence for every judge:
    our verifier exempts single letters and abbreviations, Punkt numbers too."""
    if not tail or not tail.isalpha() or tail.lower() in ABBREVIATIONS:
        return False
    return len(tail) >= 2 or not tail.isascii()


def firm_scan(text: str, run: str = "", tail: str = "") -> tuple[int, str, str]:
    """Sentence ends in ``text`` that our verifier and Punkt both count, for minima.

    Stricter than ``scan_sentences`` (which bounds maxima from above): an ASCII
    end counts only as ``.``, ``!`` or ``?`` (then more ``!?``, closing quotes
    or brackets) right after a word ``good_last_word`` accepts, before
    whitespace; an ellipsis, "3." or "e.g." never counts. ``run`` is ``"armed"``
    ``"spoiled"`` (a run that will not count) or ``""``; ``tail`` the last
    word run before ``text``. Returns the ends,
    the run and the tail after ``text``.
    """
    ends = 0
    for ch in text:
        if ch in _CJK_ENDS:
            ends += 1
            run, tail = "", ""
        elif ch in ".!?":
            if run == "armed":
                run = "armed" if ch != "." else "spoiled"
            elif run == "" and good_last_word(tail):
                run = "armed"
            else:
                run = "spoiled"
            tail = ""
        elif ch in _CLOSERS and run:
            continue
        elif ch.isspace():
            ends += run == "armed"
            run, tail = "", ""
        elif WORD_RE.match(ch):
            tail = (tail + ch)[-_TAIL_CAP:] if not run else ""
            run = "spoiled" if run else ""
        else:
            run, tail = "", ""
    return ends, run, tail


def _last_end(chunk: str, run: str) -> int:
    """Index in ``chunk`` just after its last counted sentence end."""
    last = 0
    for index, ch in enumerate(chunk):
        ends, run = scan_sentences(ch, run)
        if ends:
            last = index + 1
    return last


def count_text(text: str, letter: str | None = None) -> Counts:
    return Counts().add(text, letter)


@dataclass(frozen=True)
class Limits:
    """Bounds from the request. ``max_*`` are inclusive maxima, ``min_*`` minima."""

    min_words: int | None = None
    max_words: int | None = None
    min_sentences: int | None = None
    max_sentences: int | None = None
    letter: str | None = None
    min_letter: int | None = None
    max_letter: int | None = None
    min_placeholders: int | None = None

    @property
    def has_max(self) -> bool:
        return any(v is not None for v in (self.max_words, self.max_sentences, self.max_letter))

    def mins_met(self, counts: Counts) -> bool:
        """True when every lower bound holds (the answer may end)."""
        return (
            (self.min_words is None or counts.words >= self.min_words)
            and (self.min_sentences is None or counts.firm_sentences >= self.min_sentences)
            and (self.min_letter is None or counts.letter >= self.min_letter)
            and (self.min_placeholders is None or counts.placeholders >= self.min_placeholders)
        )

    def over_max(self, tables: VocabTables, counts: Counts, later: Later) -> torch.Tensor | None:
        """``[V]`` bool of tokens that would break an upper bound, leaving room
        for what ``later`` parts and literals will add; None if no bound.

        A sentence bound counts, per candidate, the ends it makes, then what
        the rest of the answer adds at least given how the text would end
        (``SentenceRoom``): a terminal run still to be ended, open text, or
        nothing after the last end.
        """
        reserve = later.reserve
        banned: torch.Tensor | None = None
        # Each bound is one comparison (or look-up) per token: the running count moves to
        # the right-hand side, the per-token tables stay as they are.
        if self.max_words is not None:
            added = _units_added(tables, counts.in_unit)
            banned = added > self.max_words - reserve.units - 2 * later.parts - counts.units
        if self.max_sentences is not None:
            codes = run_codes(tables, counts.sentence_run == "armed", counts.open_text)
            closing = later.owes or (
                self.min_words is not None and counts.words + reserve.words < self.min_words
            )
            lookup = _sentence_lookup(
                _most_ends(tables), counts.sentences, later.sentences, self.max_sentences, closing
            )
            over = lookup.to(codes.device)[codes]
            banned = over if banned is None else banned | over
        if self.max_letter is not None and self.letter is not None:
            row_counts = tables.char_counts(self.letter)
            over = row_counts > self.max_letter - reserve.letter - counts.letter
            banned = over if banned is None else banned | over
        return banned

    def exceeded(self, counts: Counts, later: Later) -> bool:
        """True when ``counts`` already breaks an upper bound, by the same
        margins as :meth:`over_max` (for text the ``[V]`` tables cannot
        describe: byte fragments, checked once completed)."""
        reserve = later.reserve
        if self.max_words is not None and counts.units > self.max_words - reserve.units - 2 * later.parts:
            return True
        if self.max_sentences is not None:
            rest = later.sentences.after(counts.sentence_run, counts.open_text)
            if counts.sentences + rest > self.max_sentences:
                return True
        return (
            self.max_letter is not None
            and self.letter is not None
            and counts.letter > self.max_letter - reserve.letter
        )

    def must_close(self, counts: Counts, later: Later) -> bool:
        """True when an upper bound is reached and the segment must end now.

        A sentence bound closes right after the last sentence end the segment
        may make: one more word would open a sentence the rest of the answer
        has no room for.
        """
        reserve = later.reserve
        if self.max_words is not None and counts.units >= self.max_words - reserve.units - 2 * later.parts:
            return not counts.in_unit
        if self.max_sentences is not None and counts.sentence_run:
            ended = counts.sentences + (counts.sentence_run == "armed")
            if ended + later.sentences.open > self.max_sentences:
                return True
        return False


def _units_added(tables: VocabTables, in_unit: bool) -> torch.Tensor:
    """``[V]`` int32: the verifier's words each token adds (one fewer where it continues the
    unit the text ends in)."""
    if not in_unit:
        return tables.word_units
    return tables.cached(  # type: ignore[no-any-return]
        "units-added-in-unit", lambda: tables.word_units - tables.starts_unit_char.to(torch.int32)
    )


def _most_ends(tables: VocabTables) -> int:
    """The most sentence ends one token makes (the highest ``run_codes`` code is below ``3 * (this + 1)``)."""
    return tables.cached("most-sentence-ends", lambda: int(run_tables(tables).ends.max()))  # type: ignore[no-any-return]


@lru_cache(maxsize=4096)
def _sentence_lookup(
    most_ends: int, sentences: int, room: SentenceRoom, limit: int, closing: bool
) -> torch.Tensor:
    """Over ``run_codes``' codes: whether the token breaks the sentence bound. The sentences
    after it are the ones counted, those it ends and those the rest of the answer adds given
    how the text then ends (``room``). With ``closing``, the last sentence the bound allows
    may not end (nor arm its end) either: the answer still owes words, keywords or capital
    words, so it ends with that sentence."""
    rest = {RUN_ARMED: room.armed, RUN_OPEN: room.open, RUN_CLOSED: room.closed}
    over = []
    for ends in range(most_ends + 1):
        for cls in (RUN_ARMED, RUN_OPEN, RUN_CLOSED):
            total = sentences + ends + rest[cls]
            ending = ends > 0 or cls == RUN_ARMED
            over.append(total > limit or (closing and ending and total >= limit))
    return torch.tensor(over, dtype=torch.bool)


@dataclass(frozen=True, slots=True)
class Later:
    """What the layout after the current segment will still add, so that the
    upper bounds keep room for it: ``reserve`` (the later literals' counts,
    plus owed citations, keywords and capital words), ``parts`` (free
    segments, two words kept for each), ``sentences`` (the sentences still to
    come, ``SentenceRoom``) and ``owes`` (keywords or capital words are still
    to be written into the current sentence)."""

    reserve: Counts = field(default_factory=Counts)
    parts: int = 0
    sentences: SentenceRoom = field(default_factory=SentenceRoom)
    owes: bool = False
