"""The decision the domain's rules give, stated by the answer and never contradicted.

When the rules stage (``inference.pipeline``) has a decision for the request,
the answer must *say* it: ``Statement.text`` is the decision sentence in the
request's language with the deciding rules' evidence ids cited
(``[E21]``, the ids the prompt shows). This controller inserts it as a
forced token sequence at the start of the answer's first body part (as a
required keyword is inserted), so the steering writes it during decoding;
the model writes the rest of the answer after it.

Every candidate token of the free text is then checked against the
decision (``Statement.contradicts``, the symbolic claim check of
``reasoning.rules.claims``, run on the current sentence as it would read
with the candidate): a token that would complete a denial of a concluded
action ("should not be escalated"), an action that conflicts with one, or an
action no rule requires for a complete decision is refused, so a
contradicting claim cannot be written; the model takes its next choice. The
check is a few regular expressions on one sentence, cheap enough for every
candidate. A token that would write a rule id the evidence does not hold
(``Statement.invented``: a token of the shape of the ontology's rule ids
that no shown fact, the request or the decision holds) is refused the same
way, as soon as the id leaves every id the evidence holds ("AEM-R" when
only "AML-R-..." ids are held), so an invented rule id cannot be written.

Guarantees: the inserted sentence is exactly ``Statement.text`` (spelled
under the request's character policy when one is active, see
``build_stating``); a citation in it is spelled as the citation controller
reads one (``[`` then the id then ``]``), so it counts towards a
``cite_sources`` minimum. ``unmet`` reports ``"decision"`` when the text
lacks the statement or holds a contradicting sentence (the composer's
forced exit when nothing else passes).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inference.decoder.token_controllers.charset import CharPolicy, SoftPolicy
from inference.decoder.token_controllers.count_tallies import Limits, count_text
from inference.decoder.token_controllers.layout import LayoutSegment, bracket_token
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    Owed,
    RowPlan,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.template import Free

__all__ = ["Statement", "Stating", "build_stating"]

_CITATION: Final = re.compile(r"(\s?\[E\d+\])")
_SENTENCE_END: Final = re.compile(r"[.!?。！？\n]")
_HAS_WORD: Final = re.compile(r"[^\W\d_]", re.UNICODE)
_ID_PART: Final = re.compile(r"[\w\-./:]")
#: Tokens the grounds leave free for what other controllers may owe (a keyword, a citation, ...),
#: when the request has any beside the statement and the character and length bounds.
_ROOM: Final = 8
#: Tokens the planner keeps free before the budget's end (its forced exit: ``Planner.plan``).
_END_MARGIN: Final = 2
#: Words the grounds leave free under a word maximum.
_WORD_ROOM: Final = 4
#: Sentence ends after which the next sentence follows without a space.
_NO_SPACE_AFTER: Final = ("。", "！", "？")


@dataclass(frozen=True)
class Statement:
    """What the answer must state, and the check a claim must pass.

    ``text``: the decision sentence (rules and evidence ids cited).
    ``contradicts``: whether one sentence contradicts the decision.
    ``sources``: what the statement stands for in reports (the rule ids).
    ``invented``: the first rule-id-shaped token of a sentence the evidence
    does not hold, or None (None: ids are not checked).
    ``grounds``: the decision's grounds (``reasoning.rules.grounds``), complete
    sentences with their citations in the order a budget keeps them; the
    controller states after ``text`` as many as the request's bounds leave
    room for (``build_stating``).
    ``briefs``: the short forms (no citations) of the first ``len(briefs)``
    grounds, the leads (one firing fact of each deciding rule), stated in
    their place when the leads do not all fit with their citations.
    """

    text: str
    contradicts: Callable[[str], bool]
    sources: tuple[str, ...] = ()
    invented: Callable[[str], str | None] | None = None
    grounds: tuple[str, ...] = ()
    briefs: tuple[str, ...] = ()

    @property
    def ground_texts(self) -> tuple[str, ...]:
        """Every sentence of the grounds the answer may state: each ground and each brief."""
        return tuple(dict.fromkeys((*self.grounds, *self.briefs)))

    def refuses(self, sentence: str) -> bool:
        """Whether ``sentence`` (complete or being written) contradicts the decision or
        writes a rule id the evidence does not hold."""
        if self.invented is not None and self.invented(sentence) is not None:
            return True
        return self.contradicts(sentence)


class Stating(Controller):
    """Inserts the decision sentence, then refuses contradicting tokens (see the module doc)."""

    lazy = True

    def __init__(self, ctx: Context, statement: Statement, tokens: tuple[int, ...]) -> None:
        self.ctx = ctx
        self.statement = self.spec = statement
        self.tokens = tokens
        self._reserve = count_text(statement.text + " ", ctx.limits.letter)

    def start(self) -> tuple[int, ...]:
        return self.tokens

    def _in_body(self, seg: int) -> bool:
        segments = self.ctx.layout.segments
        if seg >= len(segments):
            return False
        segment = segments[seg].segment
        return isinstance(segment, Free) and segment.role == "body"

    def owed(self, state: SteerState) -> Owed:
        rest: tuple[int, ...] = state.parts[self.slot]
        if not rest:
            return Owed()
        whole = len(rest) == len(self.tokens)
        r = self._reserve
        return Owed(tokens=len(rest), words=r.words if whole else 0, units=r.units if whole else 0,
                    letter=r.letter if whole else 0, insert=True, writes=True)

    def route(self, state: SteerState) -> RowPlan | None:
        rest: tuple[int, ...] = state.parts[self.slot]
        if rest and self._in_body(state.seg):
            return RowPlan("only", rest[0], seg=state.seg)
        return None

    def holding(self, state: SteerState) -> bool:
        rest: tuple[int, ...] = state.parts[self.slot]
        return bool(rest) and len(rest) < len(self.tokens)

    def prepare(self, state: SteerState, plan: RowPlan) -> Any:
        """The current sentence so far (the candidates complete it); None when
        nothing is checked (the statement is still owed, or the sentence
        already contradicts: the forced exit's violation is reported by ``unmet``)."""
        if state.parts[self.slot]:
            return None
        text = state.text
        ends = list(_SENTENCE_END.finditer(text))
        sentence = text[ends[-1].end():] if ends else text
        return None if sentence.strip() and self.statement.refuses(sentence) else sentence

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        if memo is None or not (_HAS_WORD.search(text) or _ID_PART.search(text)):
            return True
        return not self.statement.refuses(memo + text)

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        return self.check(state, memo, text, tail, False)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        rest: tuple[int, ...] = before.parts[self.slot]
        if rest and token_id == rest[0] and self._in_body(before.seg):
            return rest[1:]
        return rest

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        if state.parts[self.slot] or self.statement.text not in state.text:
            return ("decision",)
        # The stated decision and its grounds are checked where they are made; the rest here.
        before, _, after = state.text.partition(self.statement.text)
        if any(self.statement.refuses(s) for s in _SENTENCE_END.split(before + " " + after) if s.strip()):
            return ("decision",)
        return ()


def statement_tokens(ctx: Context, text: str) -> tuple[int, ...]:
    """The tokens of ``text``, each citation spelled as the citation controller reads one."""
    tables = ctx.tables
    open_spaced, open_bare, close = (bracket_token(tables, t) for t in (" [", "[", "]"))
    out: list[int] = []
    for piece in _CITATION.split(text):
        if not piece:
            continue
        if _CITATION.fullmatch(piece) and close >= 0:
            spaced = piece.startswith((" ", "\t"))
            opener = open_spaced if spaced else open_bare
            if opener >= 0:
                out += [opener, *tables.encode(piece.strip()[1:-1]), close]
                continue
        out += tables.encode(piece)
    return tuple(out)


def build_stating(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The stating controller, when the request has a decision to state.

    A token budget too small for the whole sentence inserts none of it.
    Under an active character policy (no commas, a letter case) the
    statement is spelled the way the policy allows (``CharPolicy.transform``).
    The grounds follow the decision sentence in one forced run, as many as
    fit, in order (one that does not fit is skipped, a shorter later one may
    still fit): within the token budget less the room the rest needs
    (``_room``), a word maximum less ``_WORD_ROOM`` words, a sentence
    maximum and a letter maximum. The leads (``Statement.briefs``) are
    stated with their citations when all of them fit so, else briefly.
    """
    statement = spec_of(specs, Statement)
    if statement is None:
        return None
    policy = spec_of(specs, CharPolicy)
    if policy is not None and policy.active and not policy.ok_text(statement.text):
        statement = dataclasses.replace(statement, text=policy.transform(statement.text))
    if not any(isinstance(c.segment, Free) and c.segment.role == "body" for c in ctx.layout.segments):
        return None
    tokens = statement_tokens(ctx, statement.text)
    if ctx.max_new_tokens is not None and len(tokens) + 2 > ctx.max_new_tokens:
        # A budget the sentence does not fit: it is not started (a cut statement would
        # say less than the decision); claims are still checked and ``unmet`` reports it.
        tokens = ()
    elif statement.grounds:
        statement, tokens = _with_grounds(ctx, statement, tokens, policy, _room(ctx, specs))
    return Stating(ctx, statement, tokens)


def _room(ctx: Context, specs: Sequence[Any]) -> int:
    """Tokens the forced run leaves before the budget's end: what the layout needs after the
    body (a closing literal), the planner's end margin, and ``_ROOM`` when another controller
    may still owe text after the statement."""
    body = next(c for c in ctx.layout.segments if isinstance(c.segment, Free) and c.segment.role == "body")
    others = any(not isinstance(s, (Statement, CharPolicy, SoftPolicy, Limits)) for s in specs)
    return body.reserve_tokens + _END_MARGIN + (_ROOM if others else 0)


def _with_grounds(
    ctx: Context, statement: Statement, tokens: tuple[int, ...], policy: CharPolicy | None, room: int
) -> tuple[Statement, tuple[int, ...]]:
    """The statement with as many of its grounds as the request's bounds leave room for.

    The leads go first: with their citations when all of them fit so, else
    their briefs (each that fits); then the other grounds in order, each
    that fits."""
    leads = len(statement.briefs)
    full = _fitting(ctx, statement.text, tokens, statement.grounds[:leads], policy, room)
    if len(full[2]) < leads:
        full = _fitting(ctx, statement.text, tokens, statement.briefs, policy, room)
    text, out, _ = _fitting(ctx, full[0], full[1], statement.grounds[leads:], policy, room)
    if text == statement.text:
        return statement, tokens
    return dataclasses.replace(statement, text=text), out


def _fitting(
    ctx: Context, text: str, tokens: tuple[int, ...], grounds: Sequence[str], policy: CharPolicy | None,
    room: int,
) -> tuple[str, tuple[int, ...], tuple[str, ...]]:
    """``text`` (spelled as ``tokens``) with each of ``grounds`` that still fits the
    request's bounds appended, in order, and the grounds taken."""
    limits = ctx.limits
    out, taken = list(tokens), []
    for ground in grounds:
        if policy is not None and policy.active and not policy.ok_text(ground):
            ground = policy.transform(ground)
        sep = "" if text.endswith(_NO_SPACE_AFTER) else " "
        more = statement_tokens(ctx, sep + ground)
        trial = text + sep + ground
        counts = count_text(trial + " ", limits.letter)
        if ctx.max_new_tokens is not None and len(out) + len(more) + room > ctx.max_new_tokens:
            continue
        if limits.max_words is not None and counts.units > limits.max_words - _WORD_ROOM:
            continue
        if limits.max_sentences is not None and counts.sentences > limits.max_sentences:
            continue
        if limits.max_letter is not None and counts.letter > limits.max_letter:
            continue
        text, out = trial, out + list(more)
        taken.append(ground)
    return text, tuple(out), tuple(taken)
