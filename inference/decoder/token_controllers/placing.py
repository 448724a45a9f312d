"""A word at a middle position: the k-th word of the answer is (or starts with) a text.

Words are the verifier's: the answer's whitespace-separated pieces, each
compared without its surrounding punctuation, ignoring case
(``reasoning.constraints.form.verify``). The controller keeps one
``Placement`` (``k >= 2``; the first and last words are the start and end
phrases' job) in three phases per row:

- *before*: fewer than ``k - 1`` pieces, or ``k - 1`` and the last one may
  still grow. Once the row holds ``k - 1`` pieces, every token that holds
  whitespace is refused except the first token of `` text`` (so no other
  piece can start as the k-th); when the model's own best token would start
  a new piece (it does not continue the word), `` text`` is written there:
  its first token is the only one allowed, its other tokens are forced;
- *closing*: the text is written; until whitespace follows it, only tokens
  that start with whitespace or consist of punctuation the verifier strips
  are allowed (so the piece stays the text), or the end;
- *done*: no restriction.

Every candidate is also checked on the k-th piece of the text it would
make (a token outside the masks, such as a byte fragment, is judged the
same way), and the answer may not end before the text is written
(``ends_ok``). So a text this controller lets through has the text as its
k-th word, provided nothing else forces tokens into the answer: the
compiler controls a placement only without inserting controllers
(keywords, capital words, placeholders, citations, a stated decision) and
without a word minimum, whose pacing would need new words where this
controller refuses them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import INSERTING, bounds, form_of_constraint
from inference.decoder.token_controllers.forcing import ForcedText, Spelling, Writer, allow_only
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    JudgesText,
    RowPlan,
    SteerState,
    spec_of,
)
from inference.decoder.vocab import VocabTables
from reasoning.constraints.form import units
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.model import Count, Position, Unit
from reasoning.constraints.model import Constraint, Kind

__all__ = [
    "STRIPPED",
    "Placement",
    "Placing",
    "build_placing",
    "compile_placement",
    "placement_holds",
]


#: What the verifier strips from both ends of a word before comparing it.
STRIPPED = ".,;:!?\"'“”‘’()[]{}*`"


@dataclass(frozen=True)
class Placement:
    """The ``k``-th word (1-based, ``k >= 2``) ``is`` / ``starts_with`` ``text`` (``sources``: ids)."""

    k: int
    text: str
    op: str = "is"
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlacingState:
    """A row's part: the tokens of the text still to force, whether it is written, whether
    whitespace follows it (``done``: nothing is restricted any more), and the text's pieces."""

    pending: tuple[int, ...] = ()
    written: bool = False
    done: bool = False
    pieces: int = 0


def _consistent(piece: str, target: str, op: str, complete: bool) -> bool:
    """Whether ``piece`` (complete, or still growing) is, or can still become, a word that passes."""
    low = piece.lower()
    if complete:
        word = low.strip(STRIPPED)
        return word == target if op == "is" else word.startswith(target)
    core = low.lstrip(STRIPPED)
    if not core:
        return True
    if op == "starts_with":
        return core.startswith(target) or target.startswith(core)
    trimmed = core.rstrip(STRIPPED)
    if len(trimmed) < len(core):
        return trimmed == target
    return target.startswith(core)


def placement_holds(p: Placement, text: str, *, partial: bool) -> bool:
    """Whether ``text`` keeps ``p`` (``partial``: a text that may still grow; its k-th word may be unwritten)."""
    pieces = text.split()
    if len(pieces) < p.k:
        return partial
    complete = len(pieces) > p.k or not partial or text[-1:].isspace()
    return _consistent(pieces[p.k - 1], p.text.lower(), p.op, complete)


def _no_whitespace(tables: VocabTables) -> torch.Tensor:
    def build() -> torch.Tensor:
        values = [not any(ch.isspace() for ch in t) for t in tables.texts]
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("placing-no-whitespace", 0), build)  # type: ignore[no-any-return]


def _closers(tables: VocabTables) -> torch.Tensor:
    """Tokens that may follow the written word: whitespace first, or only stripped punctuation."""

    def build() -> torch.Tensor:
        values = [
            bool(t) and (t[0].isspace() or all(ch in STRIPPED for ch in t)) for t in tables.texts
        ]
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("placing-closers", 0), build)  # type: ignore[no-any-return]


class Placing(Writer, JudgesText):
    """The k-th word at decode time (see the module doc)."""

    def __init__(self, ctx: Context, placement: Placement) -> None:
        self.ctx = ctx
        self.spec = placement
        self.placement = placement
        tables = ctx.tables
        self._text = ForcedText(tables, placement.text)
        self._no_ws = _no_whitespace(tables)
        self._closers = _closers(tables)
        self._eos = list(tables.eos_ids)

    def start(self) -> PlacingState:
        return PlacingState()

    def _due(self, state: SteerState) -> bool:
        part: PlacingState = state.parts[self.slot]
        return not part.written and not part.pending and part.pieces == self.placement.k - 1

    def route(self, state: SteerState) -> RowPlan | None:
        writing = super().route(state)
        if writing is None and self._due(state) and Spelling.bare_after(state.text):
            return self._text.begin(state)
        return writing

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        spaced = self._text.spelling.spaced  # the word after the (k-1)-th: the spelling after a word
        first = spaced[0] if spaced else -1
        for r, state in enumerate(states):
            part: PlacingState = state.parts[self.slot]
            if part.done:
                continue
            if part.written and not state.text[-1:].isspace() and part.pieces == self.placement.k:
                keep = self._closers.clone()
                keep[self._eos] = True
                allowed[r] &= keep
                fragments[r] = False
                continue
            if not self._due(state) or first < 0:
                continue
            if not bool(self.ctx.tables.starts_wordchar[int(lp[r].argmax())]) \
                    and allow_only(allowed, fragments, r, first):
                continue  # the model ends its word: the placed word is written now
            keep = self._no_ws.clone()
            keep[first] = True
            allowed[r] &= keep
            fragments[r] = False

    def fits(self, state: SteerState, text: str) -> bool:
        part: PlacingState = state.parts[self.slot]
        if part.done:
            return True
        # Pieces the candidate can start: one per whitespace-to-text step (cheap bound first).
        started = sum(
            1
            for a, b in zip((state.text[-1:] or " ") + text, text)
            if a.isspace() and not b.isspace()
        )
        if part.pieces + started < self.placement.k:
            return True
        return placement_holds(self.placement, state.text + text, partial=True)

    def ends_ok(self, state: SteerState) -> bool:
        return placement_holds(self.placement, state.text, partial=False)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: PlacingState = before.parts[self.slot]
        if part.done:
            return part
        pieces = len(new.text.split())
        k = self.placement.k
        rest = self._text.rest(part.pending, self._due(before), token_id)
        if rest is not None:
            return PlacingState(rest, written=not rest, pieces=pieces)
        written = part.written or pieces >= k
        done = written and (pieces > k or new.text[-1:].isspace())
        return PlacingState(written=written, done=done, pieces=pieces)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if placement_holds(self.placement, state.text, partial=False) else ("placing",)


def build_placing(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The placing controller, when a request places a word at a middle position."""
    placement = spec_of(specs, Placement)
    return Placing(ctx, placement) if placement is not None else None


def compile_placement(ctx: CompileContext) -> Placement | None:
    """The ``token_controllers.placing.Placement`` of a word at a middle position (None: none, or not
    controllable here).

    Controlled: the k-th word (``k >= 2``) is / starts with one word, in a free body whose fixed
    text before it holds fewer than ``k - 1`` words, with no controller that inserts or paces
    words (``inserts``: citations or a stated decision; the kinds of ``INSERTING``) and
    no other placement.
    """
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    found: list[tuple[Constraint, Position]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Position) and form.unit is Unit.WORDS and form.k >= 2 and form.op in ("is", "starts_with"):
            found.append((c, form))
    if len(found) != 1 or inserts or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    word = form.text.strip().strip(STRIPPED)
    kinds = {q.kind for q in constraints}
    word = word.lower() if Kind.ALL_LOWERCASE in kinds else word.upper() if Kind.ALL_CAPITALS in kinds else word
    if not word or any(ch.isspace() for ch in word) or layout.body.kind != "free" or layout.end_phrase \
            or layout.postscript or layout.title or layout.highlights:
        return None
    if layout.prefix is not None and len(layout.prefix.split()) >= form.k - 1:
        return None
    for q in constraints:
        # The word's tokens are forced past the masks: an item in it that any maximum counts
        # (a capped letter, a forbidden word, a letter of the wrong case) leaves it to the prompt.
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return None
        for cap in forms:
            if isinstance(cap, Count) and cap.per is None and cap.of is None and cap.unit is not Unit.UNIQUE_WORDS \
                    and bounds(cap.relation, cap.n)[1] is not None and units.count(cap.measure, " " + word + " ") > 0:
                return None  # (a distinct-words cap reserves the placed words: ``compile_tally``)
    controlled.add(c.id)
    return Placement(k=form.k, text=word, op=form.op, sources=(c.id,))
