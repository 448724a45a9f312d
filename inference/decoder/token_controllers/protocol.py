"""The token-controller plug-in protocol: what one controller family implements.

A ``Controller`` is one family of rules (keywords, capital words, citations,
placeholders, sentence closing, forbidden words, the character policy...)
compiled for one request. It owns its per-row state (``start`` gives it; the
composer keeps it in ``SteerState.parts[slot]`` and hands it back), and it
takes part in each phase of a step only through the hooks below; every hook
has a neutral default, so a controller implements only what it needs, and
the composer (``token_controllers.steering``) calls a hook only on the controllers
that override it (the per-step path pays nothing for the others).

Per step and per row the composer:

1. ``shift``: moves mass on the whole batch before planning (banned
   variants to allowed ones, soft penalties);
2. plans the row (``RowPlanDraft``): ``route`` may claim it outright (a forced token
   sequence such as an insertion, or a mode of its own such as a citation);
   ``owed`` is what each controller still has to write (its room in the
   token budget, its words for the upper bounds); ``exit`` may change the
   token that leaves the segment; ``holds`` may hold back the model's stop;
   ``forces`` may force the end; ``ends_ok`` may make a forced end wait;
   ``forced`` may keep a forced row free for one more word; ``pace`` may
   force a token now or leave marks (``RowPlanDraft.marks``) and a sentence-closing
   demand (``RowPlanDraft.close``) for the masks;
3. masks free rows: ``mask`` narrows the allowed ``[R, V]`` set (rows in
   free segments only); ``reweigh`` moves mass on the masked log-probs;
4. checks the best candidates one by one when any controller is ``lazy``
   (or byte fragments are in play): ``prepare`` once per row, ``narrow`` the
   candidate pool, ``check`` each candidate (``check_pieced`` those made of
   byte fragments; a ``JudgesText`` controller judges both by one ``fits``
   of the text the candidate makes); ``ends_ok`` also judges EOS;
5. on the chosen token, ``advance`` gives the controller's successor part;
   ``holding`` says the row is inside a sequence of its own (the layout does
   not leave the segment on its exit token then);
6. ``unmet`` reports what the text fails of its rules, were it to end now.

A controller is built by a ``Builder`` (``token_controllers.registry``) from the
compiled specs of a request (``compile.compile_steering``) and returns None
when the request does not need it (``spec_of`` finds its spec). A
controller that writes text of its own builds on ``token_controllers.forcing``
(``Writer``, ``ForcedText``). Guarantee a controller must keep: its
masks and checks are monotone restrictions (they never re-allow a token
another rule removed, except the exit token it names itself); the composer
keeps every row alive (see ``steering``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from inference.decoder.token_controllers.count_tallies import Later, Limits
from inference.decoder.token_controllers.layout import CompiledLayout, LayoutSegment
from inference.decoder.token_controllers.state import SteerState

if TYPE_CHECKING:
    from inference.decoder.vocab import VocabTables

__all__ = [
    "HOLD_ALL",
    "HOLD_NONE",
    "HOLD_TARGET",
    "NEG_INF",
    "NOTHING_OWED",
    "Builder",
    "Context",
    "Controller",
    "JudgesText",
    "Owed",
    "RowPlan",
    "RowPlanDraft",
    "SteerState",
    "spec_of",
]

NEG_INF = float("-inf")
HOLD_NONE = 0  # the model may stop
HOLD_TARGET = 1  # the model may stop only where the exit opens something owed (a bracket)
HOLD_ALL = 2  # the model may not stop at all


@dataclass(frozen=True, slots=True)
class Owed:
    """What a controller still has to write: ``tokens`` kept in the budget,
    and the ``words`` / ``units`` / ``letter`` count they will add (the upper
    bounds keep room for them). ``insert``: the tokens are insertions paced
    over the budget (later insertion controllers pace over what is left);
    ``writes``: text is owed into the current sentence (a sentence maximum
    keeps its last sentence open)."""

    tokens: int = 0
    words: int = 0
    units: int = 0
    letter: int = 0
    insert: bool = False
    writes: bool = False


NOTHING_OWED = Owed()


@dataclass(frozen=True, slots=True)
class RowPlan:
    """One row's plan for this step (named for the row: ``inference.pipeline.Plan`` is a
    request's plan): ``kind`` is "only" (``exit`` alone),
    "free", "formal" or a controller's own (``owner`` is its slot: its
    ``route_row`` fills the row). ``marks``: per-slot decisions for masks."""

    kind: str
    exit: int
    seg: int = 0
    may_stop: bool = False
    forced: bool = False
    close: str = ""
    owner: int = -1
    marks: dict[int, Any] = field(default_factory=dict)
    later: Later | None = None  # what the rest adds, for the upper bounds (when any)
    owed: tuple[Owed, ...] = ()  # each controller's owed text, by slot (free and formal rows)


@dataclass(slots=True)
class RowPlanDraft:
    """A row's plan under construction (mutable, per row and step), from which the planner
    makes the step's ``RowPlan``. Not a speculative draft (``inference.decoder.drafts``)."""

    state: SteerState
    comp: LayoutSegment
    target: int  # the token that leaves the segment
    exit: int
    owed: tuple[Owed, ...]  # by controller slot
    owed_tokens: int  # budget tokens kept for all owed text
    inserts: int  # of which insertions
    opens: bool = False  # ``exit`` opens something owed (a bracket)
    forced: bool = False
    may_stop: bool = False
    close: str = ""  # the current sentence must "end", or get a "word" to end on
    ends_clean: bool = True
    marks: dict[int, Any] = field(default_factory=dict)
    later: Later | None = None

    def inserts_before(self, slot: int) -> int:
        """Insertion tokens owed by the controllers ranked before ``slot``."""
        return sum(o.tokens for o in self.owed[:slot] if o.insert)


@dataclass(frozen=True)
class Context:
    """What every controller of a request may read: the vocabulary tables,
    the compiled layout, the counted bounds and the token budget."""

    tables: VocabTables
    layout: CompiledLayout
    limits: Limits
    max_new_tokens: int | None
    later: Callable[[SteerState, Sequence[Owed]], Later]  # what the rest adds, given the owed text


class Controller:
    """Base of the controller families: every hook is neutral (see the module doc)."""

    slot: int = -1
    lazy: bool = False  # ``check`` must see the best candidates one by one
    spec: Any = None  # the compiled spec it enforces (``ConstraintSteering.spec`` finds it)

    def start(self) -> Any:
        """The controller's part of a fresh row's state."""
        return None

    def shift(self, lp: torch.Tensor) -> torch.Tensor:
        """Move mass on all rows before planning. ``lp: [B, V]`` -> ``[B, V]``."""
        return lp

    def owed(self, state: SteerState) -> Owed:
        """What the row still owes this controller (see ``Owed``)."""
        return NOTHING_OWED

    def route(self, state: SteerState) -> RowPlan | None:
        """Claim the row before any other planning (a forced token, a mode of its own)."""
        return None

    def route_row(self, state: SteerState, plan: RowPlan, lp: torch.Tensor, out: torch.Tensor) -> None:
        """Fill row ``out: [V]`` of a row this controller routed (``lp: [V]``)."""

    def exit(self, d: RowPlanDraft) -> None:
        """Change ``d.exit`` (and ``d.opens``) where the model would stop."""

    def holds(self, d: RowPlanDraft) -> int:
        """``HOLD_NONE``, ``HOLD_TARGET`` or ``HOLD_ALL`` (gate segments only)."""
        return HOLD_NONE

    def forces(self, d: RowPlanDraft) -> bool:
        """Whether the segment must end now."""
        return False

    def ends_ok(self, state: SteerState) -> bool:
        """Whether the text may end here (a forced end waits, EOS fails, otherwise)."""
        return True

    def forced(self, d: RowPlanDraft) -> RowPlan | None:
        """A plan that replaces a forced end (None: the end is taken)."""
        return None

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Decide for a free row: a plan to take now, or marks on ``d`` (None)."""
        return None

    def precede(self, d: RowPlanDraft, plan: RowPlan) -> RowPlan | None:
        """A plan to take before ``plan``, the one another controller's ``pace`` took for a free
        row (None: ``plan`` stands): a text owed before the piece end ``plan`` writes."""
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
        """Narrow the free rows in place. ``allowed, fragments, base, lp: [R, V]``."""

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Move mass on the masked free rows in place. ``rows: [R, V]``."""

    def prepare(self, state: SteerState, plan: RowPlan) -> Any:
        """Per-row data for ``check`` (computed once per row and step)."""
        return None

    def narrow(self, states: Sequence[SteerState], pool: torch.Tensor) -> None:
        """Cut the lazy candidate pool in place. ``pool: [R, V]``."""

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        """Whether a candidate completing ``text`` (leaving an unfinished ``tail``)
        may follow (``closing``: the row waits only for a clean place to end)."""
        return True

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        """Like ``check``, for a candidate whose bytes ``raw`` complete or continue
        a character (a byte fragment, or after one): judged on ``text``."""
        return True

    def holding(self, state: SteerState) -> bool:
        """Whether the row is inside a token sequence of this controller's."""
        return False

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        """This controller's part after ``token_id`` (``before``: the row before it,
        already in the segment it enters; ``new``: the text after it)."""
        return before.parts[self.slot]

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        """What the text fails of this controller's rules, were it to end now."""
        return ()

    def for_evidence(self, ids: Sequence[str]) -> Controller:
        """This controller for a branch showing the evidence ``ids`` (default: itself)."""
        return self

    def demoted(self) -> frozenset[str]:
        """Constraint ids this controller can no longer control (a rebound branch)."""
        return frozenset()


class JudgesText(Controller):
    """A lazy controller whose per-candidate check is one judgement of the text the candidate
    would make (``fits``), the same whether or not its bytes are fragments of a character."""

    lazy = True

    def fits(self, state: SteerState, text: str) -> bool:
        """Whether ``text`` may follow ``state.text``."""
        return True

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        return self.fits(state, text)

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        return self.fits(state, text)


_Spec = TypeVar("_Spec")


def spec_of(specs: Sequence[Any], kind: type[_Spec]) -> _Spec | None:
    """The compiled spec of type ``kind`` among a request's ``specs`` (None: the request has none)."""
    return next((s for s in specs if isinstance(s, kind)), None)


Builder = Callable[[Context, Sequence[Any]], Controller | None]
