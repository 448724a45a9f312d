"""Maxima of the constraint form's counts, and the answer without a list.

A generic ``count`` constraint with an upper bound (``at most``, ``less
than``, an exact zero) on characters, letters, punctuation marks, digits,
emoji, numbers or filtered words (starting with / ending with / containing
a text, in a letter case or script, stop words or not) compiles to one
``Cap``; ``structure: no_list`` compiles to ``Tally.no_list``. They are
counted by the form's own counter (``reasoning.constraints.form.units``), so
the controller and the verifier cannot disagree on what an item is.

How each bound is kept:

- items that lie inside one character (characters, letters, punctuation,
  digits, emoji) add up over tokens: a ``[V]`` vector of what each complete
  token adds gives one mask per step (``count + added > cap`` is banned);
  a byte fragment is judged on the character it completes, and a cap with
  no room left refuses a fragment that can only become a counted character
  (an emoji's lead bytes);
- items that span characters (numbers, words) are checked per candidate on
  the window after the last whitespace (no number or word crosses one), so
  the check costs the length of the last word, not of the answer. Distinct
  words (``unique_words``) are not additive: the row keeps the set of the
  words before the window, and a candidate's count is the size of that set
  joined with the words of the window and the candidate. The word
  touching the end of the text is counted as if complete: a token that would
  make it match is refused even if a later token might have changed it. So
  the running count is an upper bound of every verdict the text can still
  get, and a text the controller lets through passes the verifier;
- a list line (a ``*`` or ``-`` bullet, or ``1.`` / ``1)`` then whitespace, at
  the start of a line, the verifier's patterns) is refused as soon as its
  marker is written.

- a bound per sentence, paragraph or line (``per``) is checked per
  candidate on the current piece: the pieces (as the verifier splits them)
  of the text from the start of the piece the row is in, with the candidate
  appended, each hold at most the cap. The start is where the last piece of
  the row's text begins; the boundary before it is settled (a sentence end
  followed by whitespace, a line break, a blank line: appending never
  undoes it), so a piece that could still merge with the next one is
  always inside the window. Tokens that add no item (a full stop, a comma)
  stay allowed, so a sentence at its cap can still end; a sentence one word
  short of a plain words-per-sentence cap asks to close (``RowPlanDraft.close``
  "end", where its last word may end a sentence), so the model ends it
  rather than gluing word pieces onto the last word.

- a capped ratio (``Share``: at most a fraction of one count's items are
  another's, e.g. of words those in capitals) is checked per candidate on
  both running counts (each counted as ``added`` counts it), and the answer
  may not end before the whole has an item.

Guarantee: every token the controller admits keeps each capped count within
its cap, each capped ratio within its fraction (per piece for a per-piece cap) (less what the layout's literals will add, reserved at compile
time) and leaves no list line, so the finished answer satisfies these
constraints. Minima of the form are not kept here (``compile`` lowers the
ones an insertion can meet to keywords).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec
import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    INSERTING,
    KEPT_UNITS,
    WORD_INSERTING,
    bounds,
    fixed_texts,
    form_of_constraint,
    free_body,
    literal_text,
    required_keywords,
    whole_length,
)
from inference.decoder.token_controllers.charset import tail_completes
from inference.decoder.token_controllers.count_tallies import good_last_word
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.template import Layout
from inference.decoder.vocab import VocabTables
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Form, Measure, Position, Structure, Unit
from reasoning.constraints.form.model import Layout as FormLayout
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.errors import ConflictError

__all__ = [
    "ADDITIVE_UNITS",
    "CAPPABLE_UNITS",
    "PIECE_UNITS",
    "Cap",
    "Share",
    "Tally",
    "Tallying",
    "added",
    "build_tally",
    "compile_tally",
    "item_vector",
    "list_line",
    "most_per_piece",
    "piece_start",
]

#: Units whose items lie inside one character: a text's count is the sum of its characters'.
ADDITIVE_UNITS = frozenset({Unit.CHARACTERS, Unit.LETTERS, Unit.PUNCTUATION, Unit.DIGITS, Unit.EMOJI})
#: Units a ``Cap`` can bound (the others are not counted per token here).
CAPPABLE_UNITS = ADDITIVE_UNITS | {Unit.NUMBERS, Unit.WORDS, Unit.UNIQUE_WORDS, Unit.HASHTAGS}

_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")
_NUMBERED_START = re.compile(r"\d+[.)]")


#: Pieces a cap may hold for (``Cap.per``).
PIECE_UNITS = frozenset({Unit.SENTENCES, Unit.PARAGRAPHS, Unit.LINES})


@dataclass(frozen=True)
class Cap:
    """At most ``at_most`` items of ``measure`` in the answer, or in each of its
    sentences / paragraphs / lines with ``per`` (``sources``: the constraint ids).
    ``reserved``: the items kept for fixed or inserted text (the constraint's bound
    is ``at_most + reserved``; ``unmet`` judges that)."""

    measure: Measure
    at_most: int
    sources: tuple[str, ...] = ()
    per: Unit | None = None
    reserved: int = 0

    @property
    def additive(self) -> bool:
        return self.per is None and self.measure.unit in ADDITIVE_UNITS


def piece_start(per: Unit, text: str, since: int = 0) -> int:
    """Where the last piece (``per``: sentence, paragraph, line) of ``text`` begins, looking from ``since``.

    ``since`` must itself be a settled piece start (0, or an earlier result).
    """
    pieces = units.pieces(per, text[since:])
    if not pieces:
        return since
    return since + text[since:].rfind(pieces[-1])


def most_per_piece(cap: Cap, text: str, start: int) -> int:
    """The largest count of ``cap``'s measure in a piece of ``text[start:]`` (0: no piece)."""
    assert cap.per is not None
    return max((units.count(cap.measure, piece) for piece in units.pieces(cap.per, text[start:])), default=0)


@dataclass(frozen=True)
class Share:
    """At most (``strict``: less than) ``fraction`` of the items of ``whole`` are items of ``part``:
    a ratio of two counts of the answer (``sources``: the constraint ids)."""

    part: Measure
    whole: Measure
    fraction: float
    strict: bool = False
    sources: tuple[str, ...] = ()

    def holds(self, part: int, whole: int) -> bool:
        """Whether counts ``part`` of ``whole`` keep the ratio (no whole yet: only with no part)."""
        if whole <= 0:
            return part <= 0
        share = part / whole
        return share < self.fraction if self.strict else share <= self.fraction


@dataclass(frozen=True)
class Tally:
    """The capped counts, the capped ratios and the no-list rule of one request."""

    caps: tuple[Cap, ...] = ()
    no_list: bool = False
    no_list_sources: tuple[str, ...] = ()
    shares: tuple[Share, ...] = ()


def _window_start(text: str) -> int:
    """Index of the last whitespace character (items never cross it), or 0."""
    match = _LAST_SPACE.search(text)
    return match.start() if match else 0


def _han(ch: str) -> bool:
    return "\u3400" <= ch <= "\u4dbf" or "\u4e00" <= ch <= "\u9fff"


def _previous_word_start(text: str, end: int) -> int:
    """Where the last word of ``text[:end]`` begins (0: none), as ``units.words`` splits words
    (a run of word characters, or one Han character)."""
    j = end
    while j > 0 and not (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    if j > 0 and _han(text[j - 1]):
        return j - 1
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_") and not _han(text[j - 1]):
        j -= 1
    return j


def added(measure: Measure, text: str, chunk: str) -> int:
    """How much appending ``chunk`` to ``text`` changes ``measure``'s count
    (the word touching the end counted as complete). A word judged against the
    word before it (``same_as_previous``) is counted on a window that holds it,
    a word judged by its earlier uses (``occurrence``) against the uses before the window."""
    if measure.unit in ADDITIVE_UNITS:
        return units.count(measure, chunk)
    start = _window_start(text)
    if measure.filter.occurrence is not None:
        return _later_uses_added(measure.filter, text, start, chunk)
    if measure.filter.same_as_previous is not None:
        start = _previous_word_start(text, start)
    window = text[start:]
    return units.count(measure, window + chunk) - units.count(measure, window)


@lru_cache(maxsize=64)
def _uses(before: str, f: Filter) -> Counter[str]:
    """How often each word of ``before`` (complete words: it ends at whitespace) that passes ``f``
    is used there, lowercased. One text per step is asked for every candidate: cached."""
    kept = Measure(unit=Unit.WORDS, filter=msgspec.structs.replace(f, occurrence=None))
    return Counter(w.lower() for w in units.words(before) if units.count(kept, w))


def _later_uses_added(f: Filter, text: str, start: int, chunk: str) -> int:
    """What appending ``chunk`` adds to the count of words that are at least the ``f.occurrence``-th
    use of themselves: the words before ``start`` (a whitespace) are counted once per text, only the
    window after it is walked per candidate (the same count as the verifier's over the whole text)."""
    before = _uses(text[:start], f)
    kept = Measure(unit=Unit.WORDS, filter=msgspec.structs.replace(f, occurrence=None))
    wanted = f.occurrence or 0

    def later(window: str) -> int:
        seen: Counter[str] = Counter()
        total = 0
        for word in units.words(window):
            if units.count(kept, word):
                key = word.lower()
                seen[key] += 1
                total += before[key] + seen[key] >= wanted
        return total

    window = text[start:]
    return later(window + chunk) - later(window)


def list_line(line: str, ended: bool) -> bool:
    """Whether ``line`` (``ended``: a newline follows it) is, or has begun as,
    a list line by the verifier's patterns (``*`` then a character other than
    ``*``, ``-``, or a number with ``.`` / ``)`` then whitespace)."""
    stripped = line.lstrip()
    if stripped.startswith("-"):
        return True
    if stripped.startswith("*"):
        return (len(stripped) > 1 and stripped[1] != "*") or (stripped == "*" and ended)
    match = _NUMBERED_START.match(stripped)
    if match is None:
        return False
    rest = stripped[match.end() :]
    return (rest[:1].isspace()) or (rest == "" and ended)


def lists_in(text: str, chunk: str) -> bool:
    """Whether appending ``chunk`` to ``text`` makes or begins a list line."""
    head = text[text.rfind("\n") + 1 :] + chunk
    lines = head.split("\n")
    return any(list_line(line, index < len(lines) - 1) for index, line in enumerate(lines))


def _completes_free(tables: VocabTables, measure: Measure, tail: bytes) -> bool:
    """Whether the unfinished UTF-8 ``tail`` can complete a character that
    ``measure`` does not count (a fragment with such a tail can still
    complete without adding an item). Judged once per tail."""
    return tables.cached(  # type: ignore[no-any-return]
        ("tally-free-tail", measure, tail),
        lambda: tail_completes(tail, lambda ch: not units.count(measure, ch)))


def item_vector(tables: VocabTables, measure: Measure) -> torch.Tensor:
    """``[V]`` int32: the items of ``measure`` each complete token adds."""

    def build() -> torch.Tensor:
        values = [units.count(measure, t) for t in tables.texts]
        return torch.tensor(values, dtype=torch.int32, device=tables.device)

    return tables.cached(("tally-vector", measure), build)  # type: ignore[no-any-return]


class Tallying(Controller):
    """The capped counts and the no-list rule at decode time (see the module doc).
    Its part of a row's state is the tuple of each cap's running count."""

    def __init__(self, ctx: Context, tally: Tally) -> None:
        self.ctx = ctx
        self.spec = tally
        self.caps = tally.caps
        self.shares = tally.shares
        self._masked = tuple(i for i, c in enumerate(tally.caps) if c.additive)
        self._checked = tuple(i for i, c in enumerate(tally.caps) if not c.additive and c.per is None)
        self._pieced = tuple(i for i, c in enumerate(tally.caps) if c.per is not None)
        self._closing = tuple(
            i for i in self._pieced
            if tally.caps[i].per is Unit.SENTENCES and tally.caps[i].measure == Measure(unit=Unit.WORDS, filter=Filter())
        )
        self._vectors = {i: item_vector(ctx.tables, tally.caps[i].measure) for i in self._masked}
        # A distinct-words cap's part of the state is the set of words before the window.
        self._unique = frozenset(
            i for i, c in enumerate(tally.caps) if c.per is None and c.measure.unit is Unit.UNIQUE_WORDS
        )
        # Byte fragments of counted characters (emoji, CJK punctuation) are judged per candidate.
        self.lazy = True

    def start(self) -> Any:
        caps: tuple[Any, ...] = tuple(frozenset() if i in self._unique else 0 for i in range(len(self.caps)))
        return caps + ((0, 0),) * len(self.shares)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Ask the current sentence to end when it is one word short of a words-per-sentence cap."""
        if not self._closing or d.close:
            return None
        state = d.state
        counts = state.parts[self.slot]
        for i in self._closing:
            cap = self.caps[i]
            if most_per_piece(cap, state.text, counts[i]) >= cap.at_most - 1 and good_last_word(
                state.counts.word_tail
            ):
                d.close = "end"
                break
        return None

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        if not self._masked:
            return
        for r, state in enumerate(states):
            counts = state.parts[self.slot]
            for i in self._masked:
                room = self.caps[i].at_most - counts[i]
                allowed[r] &= self._vectors[i] <= room

    def _passes(self, state: SteerState, text: str, indices: Sequence[int]) -> bool:
        counts = state.parts[self.slot]
        for i in indices:
            cap = self.caps[i]
            if cap.per is not None:
                continue
            if i in self._unique:
                window = state.text[_window_start(state.text) :] + text
                if len(counts[i] | units.distinct_words(window, cap.measure.filter)) > cap.at_most:
                    return False
                continue
            if counts[i] + added(cap.measure, state.text, text) > cap.at_most:
                return False
        for i in self._pieced:
            # A per-piece cap's part of the state is where the row's current piece starts.
            cap = self.caps[i]
            if most_per_piece(cap, state.text + text, counts[i]) > cap.at_most:
                return False
        for j, share in enumerate(self.shares, start=len(self.caps)):
            part, whole = counts[j]
            part += added(share.part, state.text, text)
            whole += added(share.whole, state.text, text)
            if not share.holds(part, whole):
                return False
        return not (self.spec.no_list and lists_in(state.text, text))

    def ends_ok(self, state: SteerState) -> bool:
        """A capped ratio needs a whole to take a share of (the verifier fails an empty one)."""
        counts = state.parts[self.slot]
        return all(counts[j][1] > 0 for j in range(len(self.caps), len(counts)))

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        return self._passes(state, text, self._checked)

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        if not self._passes(state, text, range(len(self.caps))):
            return False
        if not tail:
            return True
        counts = state.parts[self.slot]
        for i in self._masked:
            cap = self.caps[i]
            full = counts[i] + added(cap.measure, state.text, text) >= cap.at_most
            if full and not _completes_free(self.ctx.tables, cap.measure, tail):
                return False
        return True

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        counts: tuple[Any, ...] = before.parts[self.slot]
        chunk = new.text[len(before.text) :]
        if not chunk:
            return counts
        out: list[Any] = []
        for i, (n, cap) in enumerate(zip(counts, self.caps)):
            if i in self._unique:
                settled = new.text[_window_start(before.text) : _window_start(new.text)]
                out.append(n | units.distinct_words(settled, cap.measure.filter) if settled else n)
            elif cap.per is not None:
                out.append(piece_start(cap.per, new.text, n))
            else:
                out.append(n + added(cap.measure, before.text, chunk))
        for j, share in enumerate(self.shares, start=len(self.caps)):
            part, whole = counts[j]
            out.append((part + added(share.part, before.text, chunk), whole + added(share.whole, before.text, chunk)))
        return tuple(out)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        over = any(
            (most_per_piece(cap, state.text, 0) if cap.per is not None else units.count(cap.measure, state.text))
            > cap.at_most + cap.reserved
            for cap in self.caps
        )
        over = over or not all(
            share.holds(units.count(share.part, state.text), units.count(share.whole, state.text))
            and units.count(share.whole, state.text) > 0
            for share in self.shares
        )
        listed = self.spec.no_list and lists_in("", state.text)
        return ("tally",) if over or listed else ()


def build_tally(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The tally controller, when a request caps a form count or bans lists."""
    tally = spec_of(specs, Tally)
    if tally is None or not (tally.caps or tally.no_list or tally.shares):
        return None
    return Tallying(ctx, tally)


def compile_tally(ctx: CompileContext) -> Tally | None:
    """The capped form counts and the no-list rule of ``constraints`` (None: none)."""
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    literals = literal_text(layout)
    caps: list[Cap] = []
    shares: list[Share] = []
    no_list: list[str] = []
    for c in constraints:
        form = _every_word_opening(form_of_constraint(c))
        if isinstance(form, Structure) and form.layout is FormLayout.NO_LIST:
            if layout.body.kind == "formal":
                continue
            if layout.body.kind == "bullets":
                bullets = [b.id for b in constraints if b.kind == Kind.BULLET_COUNT]
                raise ConflictError("an answer without a list cannot hold bullets", constraint_ids=[c.id, *bullets])
            no_list.append(c.id)
            controlled.add(c.id)
            continue
        if isinstance(form, Count) and form.of is not None:
            share = _share(c, form, constraints, layout)
            if share is not None:
                shares.append(share)
                controlled.add(c.id)
            continue
        if not isinstance(form, Count):
            continue
        if form.unit not in CAPPABLE_UNITS or layout.body.kind == "formal":
            continue
        if form.per is not None:
            cap = _piece_cap(c, form, layout)
            if cap is not None:
                caps.append(cap)
                if not bounds(form.relation, form.n)[0]:
                    controlled.add(c.id)  # an exact count also needs its floor (``compile_floors``)
            continue
        if form.filter.separator or form.filter.marker or form.filter.left or form.filter.text and form.unit is not Unit.LETTERS:
            continue
        lo, hi = bounds(form.relation, form.n)
        # A range of characters, letters or hashtags is capped here, its minimum kept by ``compile_minima`` /
        # ``compile_hashtags``; other ranges are left to the prompt.
        if hi is None or lo and not (form.unit in KEPT_UNITS and whole_length(form) or form.unit is Unit.HASHTAGS):
            continue
        fixed = literals
        if form.unit is Unit.UNIQUE_WORDS:
            if any(q.kind in WORD_INSERTING for q in constraints):
                continue  # words chosen at decode time would be forced past the check
            placed = [f.text for q in constraints if isinstance(f := form_of_constraint(q), Position)]
            fixed = "\n".join([literals, *required_keywords(constraints), *placed])
        reserved = units.count(form.measure, fixed)
        if reserved > hi:
            raise ConflictError(
                f"the answer's fixed text already holds {reserved} {form.unit.value}, more than {hi}",
                constraint_ids=[c.id],
            )
        caps.append(Cap(form.measure, hi - reserved, (c.id,), reserved=reserved))
        if not lo:
            controlled.add(c.id)
    _check_words_fit(constraints, caps)
    if not caps and not no_list and not shares:
        return None
    return Tally(tuple(caps), bool(no_list), tuple(no_list), tuple(shares))


def _every_word_opening(form: Form | None) -> Form | None:
    """``form``, or for an opening of every word (``position(words, k=0, starts_with)``: a letter, or a
    capital) the count it is capped as: the words that do not open so, none (``Filter.negated``; the
    verifier judges every word as the counter splits them). A word's start is settled by its first
    token, so the cap refuses only tokens that open a word wrongly."""
    if not isinstance(form, Position) or form.unit is not Unit.WORDS or form.k != 0 or form.op != "starts_with":
        return form
    if form.word_class == "capital":
        wrong = Filter(case="title", negated=True)
    elif form.word_class is None and form.text.isalpha():
        wrong = Filter(starts_with=form.text, negated=True)
    else:
        return form
    return Count(unit=Unit.WORDS, filter=wrong, relation=Relation.AT_MOST, n=0)


#: Units a capped ratio can count on both sides (each item is judged within one word or character).
_SHARED_UNITS = CAPPABLE_UNITS - {Unit.UNIQUE_WORDS}


def _countable(measure: Measure) -> bool:
    f = measure.filter
    return measure.unit in _SHARED_UNITS and not (f.separator or f.marker or f.left) \
        and not (f.text and measure.unit is not Unit.LETTERS)


def _share(c: Constraint, form: Count, constraints: Sequence[Constraint], layout: Layout) -> Share | None:
    """The capped ratio of ``form`` (None: not an upper bound of a share of two countable
    measures in a free body without fixed text or words forced by another controller)."""
    if form.of is None or form.fraction is None or form.per is not None:
        return None
    if form.relation not in (Relation.AT_MOST, Relation.LESS_THAN):
        return None
    if not (_countable(form.measure) and _countable(form.of)):
        return None
    if not free_body(layout):
        return None
    if any(q.kind in INSERTING | WORD_INSERTING for q in constraints):
        return None
    return Share(form.measure, form.of, float(form.fraction), form.relation is Relation.LESS_THAN, (c.id,))


def _piece_cap(c: Constraint, form: Count, layout: Layout) -> Cap | None:
    """The per-piece cap of ``form`` (None: not a maximum per sentence / paragraph / line, or no room).

    Raises:
        ConflictError: a piece of the layout's own literals already holds more than the cap.
    """
    hi = bounds(form.relation, form.n)[1]
    if form.per not in PIECE_UNITS or hi is None:
        return None
    f = form.filter
    if f.separator or f.marker or f.left or (f.text and form.unit is not Unit.LETTERS):
        return None
    probe = Cap(form.measure, hi, (c.id,), per=form.per)
    pieces = list(fixed_texts(layout))
    reserved = max((most_per_piece(probe, text, 0) for text in pieces), default=0)
    if reserved > hi:
        raise ConflictError(
            f"a {form.per.value[:-1]} of the answer's fixed text already holds {reserved} {form.unit.value}, "
            f"more than {hi}",
            constraint_ids=[c.id],
        )
    if hi - reserved < 1:
        return None  # the free text could add nothing to a piece: left to the prompt
    return Cap(form.measure, hi - reserved, (c.id,), per=form.per, reserved=reserved)


def _check_words_fit(constraints: Sequence[Constraint], caps: Sequence[Cap]) -> None:
    """A word minimum above (words per sentence) x (most sentences) cannot be met: ``ConflictError``."""
    per_sentence = [cap for cap in caps if cap.per is Unit.SENTENCES and cap.measure.unit is Unit.WORDS
                    and cap.measure.filter == Filter()]
    if not per_sentence:
        return
    most_sentences: tuple[int, str] | None = None
    least_words: tuple[int, str] | None = None
    for c in constraints:
        relation, n = c.params.get("relation"), c.params.get("n")
        if not isinstance(n, int) or isinstance(n, bool):
            continue
        try:
            lo, hi = bounds(Relation(str(relation)), n)
        except ValueError:
            continue
        if c.kind == Kind.SENTENCE_COUNT and hi is not None and (most_sentences is None or hi < most_sentences[0]):
            most_sentences = (hi, c.id)
        if c.kind == Kind.WORD_COUNT and lo and (least_words is None or lo > least_words[0]):
            least_words = (lo, c.id)
    if most_sentences is None or least_words is None:
        return
    cap = min(per_sentence, key=lambda k: k.at_most)
    if least_words[0] > cap.at_most * most_sentences[0]:
        raise ConflictError(
            f"at least {least_words[0]} words do not fit in at most {most_sentences[0]} sentences "
            f"of at most {cap.at_most} words",
            constraint_ids=[least_words[1], most_sentences[1], *cap.sources],
        )
