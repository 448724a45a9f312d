"""The answer opens with a verb: "start your answer with a verb", "begin with an action word".

``position(answer, starts_with, word_class=verb)`` (and the first sentence, line or paragraph's,
which open the answer too) compiles to one ``VerbOpening``. The verifier's verb is a word
spaCy's tagger reads as one, as written or as the verb of "you <word> ..."
(``form.classes.in_class``); a mask cannot ask the tagger about every token, so the controller
lets the answer open only with a word of :data:`OPENING_VERBS`, imperatives the tagger reads as
verbs in that frame whatever follows (a test holds every one of them to the verifier):

- while the answer holds no complete word, only tokens that spell (the start of) such a verb are
  allowed, after whitespace only (the mask is built once per request);
- every candidate is checked on the first word it touches: a word still being written must be
  the start of such a verb, a complete one must be one ("Im" + "agine" + " the");
- the answer may not end before its first word is complete and a verb.

Guarantee: an answer this controller lets end opens with a word of :data:`OPENING_VERBS`,
provided nothing else writes the answer's first word (the compiler controls it only in a free
body without fixed text and without an opening or insertion of another controller).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import form_of_constraint, free_body
from inference.decoder.token_controllers.protocol import (
    HOLD_ALL,
    HOLD_NONE,
    Context,
    Controller,
    JudgesText,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.model import Position, Unit
from reasoning.constraints.model import Kind

__all__ = [
    "OPENING_VERBS",
    "VerbOpening",
    "VerbOpenings",
    "build_verb_openings",
    "compile_verb_opening",
    "opens_with_listed_verb",
]


#: Imperatives the answer may open with (lowercase); each is a verb to the verifier in "you <word> ...".
OPENING_VERBS: frozenset[str] = frozenset({
    "imagine", "consider", "explore", "discover", "remember", "think", "enjoy", "try", "take", "make", "let",
    "start", "begin", "keep", "find", "learn", "choose", "use", "give", "write", "read", "visit",
    "follow", "check", "ask", "look", "listen", "watch", "create", "build", "prepare", "add", "place", "put",
    "meet", "celebrate", "embrace", "protect", "save", "join", "avoid", "understand", "know", "believe", "feel",
    "see", "hear", "tell", "show", "bring", "turn", "go", "come", "buy", "share", "study", "compare", "describe",
    "explain", "define", "identify", "summarize", "discuss", "examine", "analyze", "investigate", "collect",
    "gather", "travel", "pack", "apply", "install", "select", "enter", "boil", "stir", "serve", "pour", "grab",
    "hold", "get", "stop", "wait", "relax", "breathe", "ensure", "welcome", "grow", "plant", "cook",
    "gain", "improve", "reduce", "increase", "offer", "provide", "remove", "wash", "fill", "mix", "open", "close",
    "stay", "focus", "recall", "notice", "observe", "wake", "step", "walk", "climb", "swim", "fly", "drive",
})
_PREFIXES: frozenset[str] = frozenset(verb[:i] for verb in OPENING_VERBS for i in range(1, len(verb) + 1))
_WORD = re.compile(r"[A-Za-z]+")


def opens_with_listed_verb(text: str, *, complete: bool) -> bool:
    """Whether ``text`` (the answer so far) may open with a listed verb: nothing but whitespace before
    its first word, which is a listed verb once complete, else the start of one. With ``complete``,
    the first word must be complete (followed by a character that is not a letter)."""
    stripped = text.lstrip()
    if not stripped:
        return not complete
    first = _WORD.match(stripped)
    if first is None:
        return False
    word = first.group(0).lower()
    if first.end() < len(stripped):
        return word in OPENING_VERBS
    return not complete and word in _PREFIXES


@dataclass(frozen=True)
class VerbOpening:
    """The answer's first word is a verb (of :data:`OPENING_VERBS`)."""

    sources: tuple[str, ...] = ()


class VerbOpenings(JudgesText):
    """The answer's opening verb at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: VerbOpening) -> None:
        self.ctx = ctx
        self.spec = spec
        tables = ctx.tables

        def build() -> torch.Tensor:
            return torch.tensor([opens_with_listed_verb(t, complete=False) and t.strip() != "" for t in tables.texts],
                                dtype=torch.bool, device=tables.device)

        self._first = tables.cached(("verb-opening",), build)

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        for r, state in enumerate(states):
            if not state.pending and not state.text.strip():
                allowed[r] &= self._first

    def fits(self, state: SteerState, text: str) -> bool:
        """The first word, while the answer has no complete word yet, starts (or is) a listed verb."""
        if opens_with_listed_verb(state.text, complete=True):
            return True  # the opening is written; the rest is free
        return opens_with_listed_verb(state.text + text, complete=False) or \
            opens_with_listed_verb(state.text + text, complete=True)

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def ends_ok(self, state: SteerState) -> bool:
        return opens_with_listed_verb(state.text, complete=True)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.ends_ok(state) else ("verb-opening",)


def build_verb_openings(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The verb-opening controller, when a request opens its answer with a verb."""
    spec = spec_of(specs, VerbOpening)
    return VerbOpenings(ctx, spec) if spec is not None else None


_FIRST_PIECES = frozenset({Unit.ANSWER, Unit.SENTENCES, Unit.LINES, Unit.PARAGRAPHS})


#: Kinds whose controllers write words of their own wherever they fall due (the answer's first word too).
_WRITES_WORDS = frozenset({
    Kind.KEYWORDS_PRESENT, Kind.KEYWORD_FREQUENCY, Kind.CAPITAL_WORD_FREQUENCY, Kind.PLACEHOLDERS,
    Kind.CITE_SOURCES, Kind.START_PHRASE, Kind.REPEAT_PROMPT, Kind.ALL_CAPITALS,
})


def _opens_answer(form: Position) -> bool:
    return form.op == "starts_with" and form.plain and (form.unit is Unit.ANSWER or form.unit in _FIRST_PIECES
                                                        and form.k == 1)


def compile_verb_opening(ctx: CompileContext) -> VerbOpening | None:
    """The ``VerbOpening`` of an answer that opens with a verb (None: none, or not controllable
    here).

    ``position(answer, starts_with, word_class=verb)``, or the first sentence, line or
    paragraph's (they open the answer), is controlled in a free body without fixed text (a list
    marker or a template would write the first word), with no other opening of the answer (a
    start phrase, a copy of the prompt, a word at the first position, a class opening of the
    first piece), no controller that inserts words of its own (keywords, placeholders, capital
    words, citations or a stated decision: ``inserts``; a word placed at a middle position:
    ``placed``), and no all-capitals answer (the listed verbs are read as verbs as written or
    lowercased, not shouted)."""
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    inserts, placed = ctx.inserts, ctx.placed
    found = [c for c in constraints if isinstance(form := form_of_constraint(c), Position)
             and form.word_class == "verb" and _opens_answer(form)]
    if not found or inserts or placed or any(c.kind in _WRITES_WORDS for c in constraints):
        return None
    if not free_body(layout):
        return None
    ids = {c.id for c in found}
    for q in constraints:
        if q.id in ids:
            continue
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return None
        if any(isinstance(f, Position) and (_opens_answer(f) or f.unit is Unit.WORDS and f.k == 1) for f in forms):
            return None  # another opening of the answer: left to the prompt
    controlled.update(ids)
    return VerbOpening(sources=tuple(sorted(ids)))
