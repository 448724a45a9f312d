"""Citations of the evidence facts the prompt shows, written by the model's choice.

When a hard ``cite_sources`` constraint is active and the prompt shows
numbered evidence facts (``[E1] ...``, see ``inference.prompting``), the
answer must cite at least ``need`` distinct ids in the one citation syntax of
``reasoning.constraints.citations`` (``[E3]``). ``Citations`` is what the
steering needs for that:

- after an opening bracket (``[`` or `` [``) the row is in *citation mode*:
  only tokens that keep the text after the bracket a prefix of ``E<id>]``
  for an id that exists (and is not cited yet) stay allowed, so the model
  picks *which* fact to cite and cannot invent one;
- the end of the answer is held back until ``need`` ids are cited; the
  stop's probability moves to the opening bracket instead (the same
  mechanism as a missing placeholder), so a citation is written before EOS.

The ids are those of *one* prompt: each evidence branch shows its own facts,
so each branch gets its own ``Citations`` (``for_ids``). A branch that shows
fewer ids than ``need`` cannot meet the requirement: the steering pushes only
for what it can (``owed``: every shown id) and ``missing`` still counts the
shortfall, so the steering's ``unmet`` reports it ("citations") instead of
letting the branch cite a fact it never saw.

Guarantee: every citation written in citation mode names a shown fact and
is parsed by ``citations.evidence_ids``; from any prefix a completion exists
(an ``E``, digits one by one, ``]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from inference.decoder.token_controllers.count_tallies import Later
from inference.decoder.token_controllers.layout import LayoutSegment, bracket_token
from inference.decoder.token_controllers.protocol import (
    HOLD_NONE,
    HOLD_TARGET,
    Context,
    Controller,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.template import Free
from inference.decoder.vocab import VocabTables

__all__ = ["CITATION_TOKENS", "CitationState", "Citations", "Citing", "build_citing"]

CITATION_TOKENS = 5  # budget kept for one forced citation (" [", "E", digits, "]")
_CITING_ROLES = ("body", "postscript")

_ID = re.compile(r"E\d+")
_CHARS = frozenset("E0123456789]")


@dataclass(frozen=True)
class Citations:
    """The evidence ids that exist and how many distinct ones must be cited.

    ``sources`` are the ids of the ``cite_sources`` constraints behind ``need``.
    """

    ids: tuple[str, ...]
    need: int = 1
    sources: tuple[str, ...] = ()
    _cache: dict[tuple[str, frozenset[str]], list[int]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        bad = [i for i in self.ids if not _ID.fullmatch(i)]
        if bad:
            raise ValueError(f"evidence ids must look like E1, E2, ...: {bad}")

    @property
    def reachable(self) -> bool:
        """Whether the shown ids are enough to meet ``need``."""
        return len(self.ids) >= self.need

    def for_ids(self, ids: tuple[str, ...]) -> Citations:
        """The same requirement over the ids another prompt shows (a fresh token cache)."""
        return Citations(ids, need=self.need, sources=self.sources)

    def missing(self, cited: frozenset[str]) -> int:
        """How many more distinct ids the requirement needs (what ``unmet`` reports)."""
        return max(0, self.need - len(cited))

    def owed(self, cited: frozenset[str]) -> int:
        """How many more distinct ids the steering pushes for: ``missing``,
        capped by the shown ids not cited yet (``cited`` holds only shown ids)."""
        return max(0, min(self.need, len(self.ids)) - len(cited))

    def completed(self, inside: str) -> str | None:
        """The id when ``inside`` (the text after ``[``) is a whole citation."""
        if inside.endswith("]") and inside[:-1] in self.ids:
            return inside[:-1]
        return None

    def next_tokens(self, tables: VocabTables, inside: str, cited: frozenset[str]) -> list[int]:
        """Token ids that keep ``inside`` on the way to ``E<id>]`` of an id not
        in ``cited`` (all ids once no more are owed)."""
        exclude = cited if self.owed(cited) else frozenset()
        key = (inside, exclude)
        found = self._cache.get(key)
        if found is None:
            targets = [f"{i}]" for i in self.ids if i not in exclude]
            found = [
                idx
                for idx in _candidates(tables)
                if any(t.startswith(inside + tables.texts[idx]) for t in targets)
            ]
            self._cache[key] = found
        return found


def _candidates(tables: VocabTables) -> list[int]:
    """Complete, non-special tokens made only of ``E``, digits and ``]``."""

    def build() -> list[int]:
        special = tables.special.tolist()
        fragment = tables.fragment.tolist()
        return [
            idx
            for idx, text in enumerate(tables.texts)
            if text and not special[idx] and not fragment[idx] and set(text) <= _CHARS
        ]

    return tables.cached("citation-candidates", build)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class CitationState:
    """A row's citations: ``cite`` is the text after an open citation's ``[``
    (None outside one), ``cited`` the ids cited so far."""

    cite: str | None = None
    cited: frozenset[str] = frozenset()


class Citing(Controller):
    """Citation mode, the held-back end and the budget kept while citations are
    owed (see the module doc). Owed citations count until the gate segment ends."""

    def __init__(self, ctx: Context, citations: Citations) -> None:
        self.ctx = ctx
        self.citations = self.spec = citations
        tables = ctx.tables
        self._open_spaced = bracket_token(tables, " [")
        self._open_bare = bracket_token(tables, "[")
        self._close = bracket_token(tables, "]")
        self._open = [t for t in (self._open_spaced, self._open_bare) if t >= 0]

    def start(self) -> CitationState:
        return CitationState()

    def _owed_now(self, state: SteerState) -> int:
        """Citations still owed by the time the gate segment ends (0 after it)."""
        if state.seg > self.ctx.layout.gate:
            return 0
        return self.citations.owed(state.parts[self.slot].cited)

    def owed(self, state: SteerState) -> Owed:
        missing = self._owed_now(state)
        if not missing:
            return Owed()
        return Owed(tokens=CITATION_TOKENS * missing, words=missing, units=missing)

    def route(self, state: SteerState) -> RowPlan | None:
        if state.parts[self.slot].cite is None:
            return None
        return RowPlan("cite", self._close if self._close >= 0 else self.ctx.layout.eos, seg=state.seg, owner=self.slot)

    def route_row(self, state: SteerState, plan: RowPlan, lp: torch.Tensor, out: torch.Tensor) -> None:
        part = state.parts[self.slot]
        ids = self.citations.next_tokens(self.ctx.tables, part.cite, part.cited)
        out[ids] = lp[ids]

    def holding(self, state: SteerState) -> bool:
        return state.parts[self.slot].cite is not None

    def exit(self, d: RowPlanDraft) -> None:
        # An owed citation opens with a bracket where the model would stop.
        segment = d.comp.segment
        if d.exit != d.target or d.state.counts.bracket_open or not self._open:
            return
        if isinstance(segment, Free) and segment.gate and d.owed[self.slot].tokens:
            token = self._open_bare if d.state.text[-1:].isspace() else self._open_spaced
            if token >= 0:
                d.exit, d.opens = token, token != d.target

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_TARGET if d.owed[self.slot].tokens else HOLD_NONE

    def _may_open(self, state: SteerState, plan: RowPlan) -> bool:
        """A free row may open a citation while one is owed, in running text."""
        if not self.citations.owed(state.parts[self.slot].cited) or state.counts.bracket_open or state.pending:
            return False
        if self.ctx.layout.free(plan.seg).role not in _CITING_ROLES:
            return False
        limits = self.ctx.limits
        if not limits.has_max:
            return True
        # The citation's id is one more word; the reserve counted it only at the gate.
        comp = self.ctx.layout.segments[plan.seg]
        after = state.counts.add(" [E1]", limits.letter)
        return not limits.exceeded(after, Later(comp.reserve, comp.free_after, comp.sentences))

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        if not self._open:
            return
        layout = self.ctx.layout
        for r, (s, p) in enumerate(zip(states, plans)):
            if self._may_open(s, p):
                for t in self._open:
                    # A part's first token after a forced word must still end that word.
                    allowed[r, t] = not layout.at_word_end(s, p.seg) or bool(layout.word_end[t])

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        """Enter, continue or close citation mode after ``token_id``."""
        part: CitationState = before.parts[self.slot]
        if part.cite is not None:
            inside = part.cite + self.ctx.tables.texts[token_id]
            done = self.citations.completed(inside)
            if done is not None:
                return CitationState(None, part.cited | {done})
            return replace(part, cite=inside)
        opens = (
            token_id in self._open
            and comp is not None
            and isinstance(comp.segment, Free)
            and comp.segment.role in _CITING_ROLES
            and self.citations.owed(part.cited) > 0
            and not before.counts.bracket_open
        )
        return replace(part, cite="") if opens else part

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        part = state.parts[self.slot]
        return ("citations",) if part.cite is not None or self.citations.missing(part.cited) else ()

    def for_evidence(self, ids: Sequence[str]) -> Controller:
        """The controller for a branch showing ``ids``: it cites only those.

        A branch that shows fewer ids than the minimum cannot meet it: it is
        steered to cite every id it shows, its ``unmet`` reports "citations"
        and the constraint is ``demoted`` (assisted, not controlled, for it).
        """
        shown = tuple(dict.fromkeys(str(i) for i in ids))
        if shown == self.citations.ids:
            return self
        bound = Citing.__new__(Citing)
        bound.__dict__.update(self.__dict__)
        bound.citations = bound.spec = self.citations.for_ids(shown)
        return bound

    def demoted(self) -> frozenset[str]:
        return frozenset() if self.citations.reachable else frozenset(self.citations.sources)


def build_citing(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The citation controller, for a controlled ``cite_sources`` requirement."""
    citations = spec_of(specs, Citations)
    return Citing(ctx, citations) if citations is not None else None
