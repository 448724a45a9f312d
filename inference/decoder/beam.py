"""Our beam search: batched branches, per-beam steering, step-boundary pruning, step repair.

Call order (gpt-fast style): ``prefill_prefix`` / ``prefill_branches`` (in
``batch.py``) build the ragged batch, then ``generate`` runs
``select`` -> ``decode_step`` until every branch is done. ``select`` is the
only Python-per-candidate code and touches ``2 * width`` candidates per
branch, never the vocabulary; everything over the vocabulary is a tensor op.
Where the steering holds every live beam to a run of forced tokens, or
prompt lookup drafts one (``drafts.py``), the run is fed in one multi-token
forward and the selects of its positions read that forward's logits
(``forced_runs.py``); the selects themselves are the same.

Scores: a live beam's score is the sum of its steered log-probabilities; a
finished hypothesis is ranked by ``score / generated_tokens ** length_penalty``
(as Hugging Face's beam search does). A branch stops when it holds ``width``
hypotheses and no live beam can still beat the worst of them; a beam
finishes at ``max_new_tokens`` of its own, so a repaired beam gets the tokens
it rolled back again (within the slab's slack columns).

Step boundaries (``boundaries.py``) hand every candidate that closes a step to
a ``StepJudge``; a pending step is also judged after a sentence end and every
``probe_every`` tokens (a degenerate run need not contain a boundary), and a
parent whose pending step fails is "condemned": none of its candidates is
kept. A rejected candidate is dropped; if a branch would be left with no beam
at all, its best rejected beam is rolled back to the start of the step and the
step is re-decoded with the step's first token banned at that position
(bounded by ``max_repairs``). When repair fails -- attempts exhausted, or the
ban meets a token the steering forces -- the step is kept and flagged as an
unrepaired violation, never silently dropped; except that a step the judge
marks ``droppable`` (a claim of a domain answer, which the answer does not
need) ends the answer before it, where the text before it ends complete and
the steering owes nothing there (``_ended_before``): the model had nothing
the rules let it add.

Endings (``endings.py``): a hypothesis the model stopped freely ends
``model``; one a budget or the steering ended is ``landed`` when its text
ends complete, and otherwise rolled back to its last complete sentence
(``landed``, its steering state replayed) or, with none, kept as
``budget_cut``, which ranks below every complete hypothesis.

A rolled-back row is not copied: the columns it abandons are masked and its
positions restart at the step, the same ragged-batch mechanism as branch
prompts of different length.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import torch

from inference.decoder.batch import BatchState
from inference.decoder.boundaries import BoundaryTable
from inference.decoder.contrast import RowContext
from inference.decoder.drafts import PromptLookup
from inference.decoder.endings import END_CUT, END_LANDED, END_MODEL, End, Lander
from inference.decoder.forced_runs import ForcedRun, draft_run, feed_run, rewind, take
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from inference.decoder.steering_protocol import Steering, SteeringState
from inference.decoder.topk import row_topk

__all__ = [
    "BeamConfig",
    "BranchOutcome",
    "ClosedStep",
    "Hypothesis",
    "SearchStats",
    "StepCheck",
    "StepJudge",
    "decode_step",
    "generate",
    "unmet",
]

_NEG_INF = float("-inf")


@dataclass(frozen=True)
class BeamConfig:
    """What one search reads: the decode's ``options``, the ids that end an
    answer, the ``lander`` that finds complete prefixes (None: answers a
    budget ends are neither rolled back nor ranked by how they end, and
    report ``budget_cut``) and the branches' prompts for drafting ``lookup``
    (None: only forced text is fed ahead)."""

    options: DecodeOptions
    eos_ids: frozenset[int] = frozenset()
    lander: Lander | None = None
    lookup: PromptLookup | None = None


@dataclass(frozen=True)
class StepCheck:
    """A judge's decision on one step: keep it, or prune it under ``rule``."""

    keep: bool
    rule: str | None = None
    detail: str = ""
    payload: Any = None
    #: The answer may end before this step when it cannot be repaired (see the module doc).
    droppable: bool = False


class StepJudge(Protocol):
    """Decides at a step boundary whether a beam's new step survives."""

    def judge(
        self,
        branch: int,
        tokens: Sequence[int],
        start: int,
        end: int,
        entropies: Sequence[float],
        final: bool,
        forced: Sequence[bool] = (),
        logprobs: Sequence[float] = (),
        context: RowContext | None = None,
    ) -> StepCheck:
        """``tokens[start:end]`` is the step; ``tokens[:end]`` the answer so far; ``final``: never prune.

        ``forced[k]`` is True when the steering left token ``k`` no alternative
        (a literal of the layout, the only token a grammar allows): the model
        chose none of those, so rules about the model's choices skip them.
        ``logprobs[k]`` is the model's log-probability of token ``k`` where it
        was chosen (before steering); ``context`` is the beam's row of the KV
        slab, fed every token but ``tokens[end - 1]`` (valid during the call):
        a judge may score alternatives of the step over it (``contrast.row_contrast``).
        """
        ...

    def ended(self, branch: int, tokens: Sequence[int], context: RowContext | None = None) -> None:
        """A beam ended with ``tokens`` (filed as one of the branch's hypotheses, or alive
        at the token limit); ``context`` is its row, valid during the call (fed every token
        but the last): work the judge deferred on its steps is done now or never."""
        ...


@dataclass(frozen=True)
class ClosedStep:
    start: int
    end: int
    check: StepCheck
    repaired: int = 0
    unrepaired: bool = False


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]
    logprobs: tuple[float, ...]
    entropies: tuple[float, ...]
    steps: tuple[ClosedStep, ...]
    score: float
    normalized: float
    state: SteeringState | None = None  # the steering state after the last token (its violations)
    end: End = END_MODEL  # how it ended (``endings``); a budget's end is settled by ``_finish``


@dataclass(frozen=True)
class BranchOutcome:
    branch: int
    hypotheses: tuple[Hypothesis, ...]  # best first

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]


@dataclass
class SearchStats:
    """Counts and times of one search (pruned by rule, repairs, constraint-check seconds)."""

    pruned: dict[str, int] = field(default_factory=dict)
    steps_checked: int = 0
    repairs: int = 0
    unrepaired: int = 0
    check_seconds: float = 0.0
    decode_seconds: float = 0.0
    #: Host seconds inside the decode forwards. On an accelerator that is the
    #: launch time; the wait for the kernels falls in the next select's first read.
    forward_seconds: float = 0.0
    steps_decoded: int = 0  # positions fed and selected from
    forwards: int = 0  # decode forward passes (a forced run feeds several positions in one)
    forced_fed: int = 0  # forced positions of runs fed ahead (every row's token certain)
    forced_taken: int = 0  # of those, positions the search followed (the rest were given back)
    draft_fed: int = 0  # positions of runs fed ahead where some row's token was a lookup's guess
    draft_taken: int = 0  # of those, positions the search followed

    @property
    def draft_acceptance(self) -> float | None:
        """The share of guessed positions fed ahead that the search followed (None: none fed)."""
        return self.draft_taken / self.draft_fed if self.draft_fed else None


@dataclass
class _Beam:
    """A live (or dead) beam: Python lists of its tokens and per-token figures."""

    tokens: list[int]
    cols: list[int]  # physical column of tokens[k]'s KV; the last token is not fed yet
    logprobs: list[float]  # the model's log-probability of each chosen token (before steering)
    entropies: list[float]  # normalised entropy of the distribution each token was drawn from
    forced: list[bool]  # the steering left the token no alternative
    score: float  # sum of steered log-probabilities
    state: SteeringState
    step_start: int
    step_state: SteeringState  # steering state at ``step_start`` (restored by a repair)
    step_score: float
    steps: list[ClosedStep]
    banned: dict[int, frozenset[int]]  # generated index -> token ids banned there (repairs, lifted if they would empty the row)
    repairs: dict[int, int]  # step start -> repair attempts
    alive: bool = True
    rewind_column: int | None = None  # set by a repair: mask from this column, re-feed
    abandoned: Hypothesis | None = None  # the flagged text a repair replaced (used on a dead end)

    @classmethod
    def start(cls, state: SteeringState, score: float, *, alive: bool) -> _Beam:
        """A beam with no token yet at steering ``state``: a branch's first beams, or a dead row."""
        return cls(
            tokens=[],
            cols=[],
            logprobs=[],
            entropies=[],
            forced=[],
            score=score,
            state=state,
            step_start=0,
            step_state=state,
            step_score=0.0,
            steps=[],
            banned={},
            repairs={},
            alive=alive,
        )

    def child(self, copy: bool) -> _Beam:
        """The beam itself (its last child) or an independent copy (earlier children)."""
        if not copy:
            return self
        return _Beam(
            tokens=list(self.tokens),
            cols=list(self.cols),
            logprobs=list(self.logprobs),
            entropies=list(self.entropies),
            forced=list(self.forced),
            score=self.score,
            state=self.state,
            step_start=self.step_start,
            step_state=self.step_state,
            step_score=self.step_score,
            steps=list(self.steps),
            banned=dict(self.banned),
            repairs=dict(self.repairs),
            alive=self.alive,
            rewind_column=None,
            abandoned=self.abandoned,
        )


@dataclass(frozen=True)
class _Candidate:
    parent: int
    token: int
    score: float
    raw: float
    entropy: float
    state: SteeringState
    closes: tuple[int, int] | None  # (start, end) of the step it closes, in the child's tokens
    check: StepCheck | None
    finished: bool
    forced: bool = False  # the steering left this token no alternative
    rollback_start: int | None = None
    ban_at: int = -1  # a repair bans ``token`` at this generated index (the step's first free token)
    unrepaired: bool = False
    abandoned: Hypothesis | None = None


def select_device(steerings: Sequence[Steering], model_device: torch.device) -> torch.device:
    """Where the beam search selects tokens: where the steerings' tables live
    (``Steering.device``), else beside the model.

    A steering compiled for the model's device keeps the select there; one
    compiled on the host (the default of ``compile_steering``) still steers a
    model on an accelerator, with the logits brought over once per step.
    """
    devices = {d for s in steerings if (d := getattr(s, "device", None)) is not None}
    if len(devices) > 1:
        raise ValueError(f"the branch steerings live on different devices: {sorted(map(str, devices))}")
    return devices.pop() if devices else model_device


def decode_step(
    runner: ModelRunner,
    state: BatchState,
    feed: torch.Tensor,
    rows: tuple[int, int] | None = None,
    stale: torch.Tensor | None = None,
) -> torch.Tensor:
    """One forward: ``feed: [N]`` token ids -> next-token logits ``[N, V]``.

    ``rows`` ``(lo, hi)`` feeds only rows ``lo .. hi - 1`` (through a view of
    the slab, :meth:`SlabCache.rows`; ``lo`` a multiple of the batch's ``width``):
    the other rows' new column is masked in but not written, and their logits
    are ``stale``'s rows (the previous step's; zeros when None). Only rows no
    select reads are left out (the rows of finished branches). The decode
    FLOPs are counted for every row, as a forward of all of them counts
    them: the counterfactual checks' budget is a share of them, so their
    verdicts do not depend on which rows were fed.
    """
    col = state.columns
    n = state.rows
    state.mask[:, col] = True
    ids = feed.view(-1, 1)  # [N, 1]
    pos = state.positions.view(-1, 1)  # [N, 1]
    lo, hi = rows if rows is not None else (0, n)
    if (lo, hi) == (0, n):
        logits = runner.forward(
            ids, pos, state.mask[:, : col + 1], state.cache, purpose="decode", last_only=True
        )[:, 0]
    else:
        hold = getattr(state.cache, "hold", None)
        if hold is not None:  # the whole cache decides what its sliding layers keep
            hold(state.mask[:, : col + 1], 1)
        part = runner.forward(
            ids[lo:hi],
            pos[lo:hi],
            state.mask[lo:hi, : col + 1],
            state.cache.rows(lo, hi),
            purpose="decode",
            last_only=True,
        )[:, 0]
        state.cache.set_length(col + 1)
        runner.counters.flops["decode"] += 2.0 * runner.parameters * (n - (hi - lo))
        logits = (
            stale.to(part.device, copy=True)
            if stale is not None
            else part.new_zeros((n, part.shape[-1]))
        )
        logits[lo:hi] = part
    state.columns = col + 1
    state.positions += 1
    return logits  # [N, V]


def _fed_rows(done: Sequence[bool], width: int) -> tuple[int, int]:
    """The rows a decode step feeds: from the first unfinished branch's first row to the last
    unfinished branch's last row (a finished branch's rows are never selected from again; one
    between two unfinished ones is fed, so the rows stay one slice of the slab)."""
    live = [b for b, d in enumerate(done) if not d]
    return (live[0] * width, (live[-1] + 1) * width) if live else (0, len(done) * width)


def generate(
    runner: ModelRunner,
    state: BatchState,
    first_logits: torch.Tensor,
    steerings: Sequence[Steering],
    config: BeamConfig,
    boundary: BoundaryTable,
    judge: StepJudge | None,
    stats: SearchStats,
    on_decided: Callable[[int, tuple[int, ...]], None] | None = None,
) -> list[BranchOutcome]:
    """Beam search from prefilled branches (``first_logits: [B, V]``); one outcome per branch.

    ``on_decided(branch, tokens)`` is called once per step as soon as it is
    decided: every live beam and every finished hypothesis of the branch
    shares it (with width 1, as soon as it closes). Decided steps never
    change afterwards, so a caller may stream them.
    """
    width = config.options.width
    beams: list[_Beam] = []
    for b, steering in enumerate(steerings):
        init = steering.initial_state()
        for k in range(width):
            score = 0.0 if k == 0 else _NEG_INF
            beams.append(_Beam.start(init, score, alive=k == 0))
    hyps: list[list[Hypothesis]] = [[] for _ in steerings]
    done = [False] * len(steerings)
    announced = [0] * len(steerings)
    where = select_device(steerings, runner.device)
    logits = first_logits.to(where).repeat_interleave(width, dim=0)  # [N, V]
    started = time.perf_counter()
    # Every beam finishes at max_new_tokens of its own; the columns beyond that
    # (the slab's slack) are what step repairs may re-decode.
    # A forced run fed ahead (``forced_runs``): the logits of its later positions, in order.
    ahead: list[torch.Tensor] = []
    run: ForcedRun | None = None
    for _ in range(state.cache.capacity - state.columns):
        room = state.cache.capacity - state.columns  # selects left, this one included
        held = [not d for d in done]
        beams, forks = _select(
            logits, beams, hyps, done, steerings, config, boundary, judge, stats, room, state
        )
        if on_decided is not None:
            _announce(beams, hyps, width, announced, on_decided)
        if all(done):
            break
        if run is not None:
            if run.followed(beams, forks, held):
                for bm in beams:
                    if bm.tokens:
                        bm.cols.append(state.columns)
                take(runner, state)
                logits = ahead.pop(0)
                if run.guessed(run.taken - 1):
                    stats.draft_taken += 1
                else:
                    stats.forced_taken += 1
                run = run if ahead else None
                stats.steps_decoded += 1
                continue
            rewind(state, len(ahead))
            ahead, run = [], None
        _move_rows(state, beams, forks)
        feed = torch.tensor(
            [
                bm.tokens[-1] if bm.tokens else state.prompt_last_token[r // width]
                for r, bm in enumerate(beams)
            ],
            dtype=torch.long,
            device=runner.device,
        )
        for bm in beams:
            if bm.tokens:
                bm.cols.append(state.columns)
        run = None if not config.options.forced_runs else draft_run(
            beams,
            steerings,
            done,
            width,
            eos_ids=config.eos_ids,
            max_new_tokens=config.options.max_new_tokens,
            room=state.cache.capacity - state.columns - 1,
            vocab=logits.shape[-1],
            lookup=config.lookup if config.options.draft_tokens else None,
            guesses=config.options.draft_tokens,
            device=where,
        )
        t0 = time.perf_counter()
        if run is None:
            fed = _fed_rows(done, width) if config.options.drop_finished else None
            logits = decode_step(runner, state, feed, fed, logits).to(where)
        else:
            block = feed_run(runner, state, feed, run).to(where)  # [N, 1 + K, V]
            logits, ahead = block[:, 0], list(block[:, 1:].unbind(1))
            guessed = sum(run.guessed(k) for k in range(run.length))
            stats.forced_fed += run.length - guessed
            stats.draft_fed += guessed
        stats.forward_seconds += time.perf_counter() - t0
        stats.steps_decoded += 1
        stats.forwards += 1
    rewind(state, len(ahead))  # the slab ends where the search did
    stats.decode_seconds += time.perf_counter() - started
    return _finish(beams, hyps, done, config, judge, steerings, state)


def _announce(
    beams: list[_Beam],
    hyps: list[list[Hypothesis]],
    width: int,
    announced: list[int],
    on_decided: Callable[[int, tuple[int, ...]], None],
) -> None:
    """Report the steps every candidate of a branch now agrees on (see ``generate``)."""
    for b, finished in enumerate(hyps):
        candidates: list[tuple[Sequence[int], Sequence[ClosedStep]]] = [
            (bm.tokens, bm.steps) for bm in beams[b * width : (b + 1) * width] if bm.alive
        ]
        candidates += [(h.tokens, h.steps) for h in finished]
        if not candidates:
            continue
        tokens, steps = candidates[0]
        k = announced[b]
        while k < len(steps):
            end = steps[k].end
            if not all(
                len(other) > k and other[k].end == end and list(toks[:end]) == list(tokens[:end])
                for toks, other in candidates[1:]
            ):
                break
            on_decided(b, tuple(tokens[steps[k].start : end]))
            k += 1
        announced[b] = k


def _select(
    logits: torch.Tensor,
    beams: list[_Beam],
    hyps: list[list[Hypothesis]],
    done: list[bool],
    steerings: Sequence[Steering],
    config: BeamConfig,
    boundary: BoundaryTable,
    judge: StepJudge | None,
    stats: SearchStats,
    room: int,
    state: BatchState | None = None,
) -> tuple[list[_Beam], list[tuple[int, int]]]:
    """Choose the next beams of every live branch; return them and the (dst, src) row forks.

    ``room``: how many selects the slab has left (this one included); a
    repair is only made when the rolled-back beam can still reach its own
    ``max_new_tokens`` in that room, so the steering's budget (which closes
    every open structure before the limit) stays true.
    """
    width, vocab, n_branch = config.options.width, logits.shape[-1], len(steerings)
    raw = torch.log_softmax(logits, dim=-1)  # [N, V]
    # [N]; a -inf entry's 0 * -inf is NaN and counts as 0
    probs = torch.softmax(logits, dim=-1)  # [N, V]: one pass, not exp(raw)
    entropy = (-torch.nansum(probs * raw, dim=-1) / math.log(vocab)).tolist()
    adjusted = _steer(raw, beams, steerings, width, stats, done)  # [N, V]
    # [N]: the steering left one token (at most one finite entry: the second best is -inf)
    forced = (
        (row_topk(adjusted, 2)[0][:, 1] == _NEG_INF).tolist() if vocab > 1 else [True] * len(beams)
    )
    _mask_rows(adjusted, beams, config)
    scores = torch.tensor([bm.score for bm in beams], dtype=adjusted.dtype, device=adjusted.device)
    cand = (adjusted + scores[:, None]).view(n_branch, width * vocab)  # [B, W*V]
    top_v, top_i = row_topk(cand, 2 * width)  # [B, 2W]: torch.topk's values, in two short passes
    top_raw = raw.view(n_branch, width * vocab).gather(1, top_i).tolist()  # [B, 2W]
    top_v_l, top_i_l = top_v.tolist(), top_i.tolist()
    new_beams: list[_Beam] = []
    forks: list[tuple[int, int]] = []
    for b in range(n_branch):
        base = b * width
        if done[b]:
            new_beams.extend(beams[base : base + width])
            continue
        walk = _Walk(
            b, vocab, entropy, forced, beams, hyps[b], steerings[b], config, boundary, judge, stats,
            state,
        )
        kept, pruned = walk.run(top_v_l[b], top_i_l[b], top_raw[b])
        if not kept and not hyps[b] and pruned:
            fallback = _repair_or_accept(pruned[0], beams[pruned[0].parent], config, stats, room)
            dropped = pruned[0]
            ended = (
                _ended_before(beams[dropped.parent], dropped.closes[0], steerings[b], config)
                if fallback.unrepaired
                and dropped.closes is not None
                and dropped.check is not None
                and dropped.check.droppable
                else None
            )
            if ended is not None:
                stats.unrepaired -= 1  # nothing flagged is kept: the answer ends before it
                hyps[b].append(ended)
            elif fallback.finished:
                _add_hypothesis(hyps[b], beams[fallback.parent], fallback, config)
            else:
                kept = [fallback]
        elif not kept and not hyps[b]:
            _file_dead_end(beams[base : base + width], hyps[b], config, stats)
        children = _materialise(kept, beams)
        for k in range(width):
            row = base + k
            if k < len(children):
                child, parent = children[k]
                new_beams.append(child)
                if parent != row:
                    forks.append((row, parent))
            else:
                new_beams.append(_dead(beams[base]))
        done[b] = _branch_done(new_beams[base : base + width], hyps[b], config)
    return new_beams, forks


def _steer(
    raw: torch.Tensor,
    beams: list[_Beam],
    steerings: Sequence[Steering],
    width: int,
    stats: SearchStats,
    done: Sequence[bool] = (),
) -> torch.Tensor:
    """Apply each branch's steering to its rows (one call when all branches share one).

    With a steering per branch, a branch that is ``done`` keeps its rows'
    scores unsteered: no select reads them again."""
    t0 = time.perf_counter()
    if all(s is steerings[0] for s in steerings):
        adjusted = steerings[0].apply([bm.state for bm in beams], raw)
    else:
        adjusted = torch.cat(
            [
                raw[b * width : (b + 1) * width]
                if b < len(done) and done[b]
                else steering.apply(
                    [bm.state for bm in beams[b * width : (b + 1) * width]],
                    raw[b * width : (b + 1) * width],
                )
                for b, steering in enumerate(steerings)
            ],
            dim=0,
        )
    stats.check_seconds += time.perf_counter() - t0
    return adjusted


def _mask_rows(adjusted: torch.Tensor, beams: list[_Beam], config: BeamConfig) -> None:
    """Step-repair bans and the minimum length (EOS masked), on the rows that need them.

    A ban never empties a row: the steering's allowed set is what keeps the
    hard constraints satisfiable, so a ban that would leave nothing (the
    steering now forces the banned token) is lifted and the step is judged
    again instead of ending the branch mid-structure.
    """
    eos = sorted(config.eos_ids)
    short: list[int] = []  # rows still below the minimum length: EOS masked, in one write
    for r, bm in enumerate(beams):
        if not bm.alive:
            continue
        ban = bm.banned.get(len(bm.tokens))
        if ban:
            row = adjusted[r].clone()  # [V]
            row[sorted(ban)] = _NEG_INF
            if bool(torch.isfinite(row).any()):
                adjusted[r] = row
        if eos and len(bm.tokens) < config.options.min_new_tokens:
            short.append(r)
    if short:
        rows = torch.tensor(short, device=adjusted.device)[:, None]  # [R, 1]
        adjusted[rows, torch.tensor(eos, device=adjusted.device)] = _NEG_INF


@dataclass
class _Walk:
    """One branch's pass down its ``2 * width`` best candidates."""

    branch: int
    vocab: int
    entropy: list[float]
    forced: list[bool]
    beams: list[_Beam]
    hyps: list[Hypothesis]
    steering: Steering
    config: BeamConfig
    boundary: BoundaryTable
    judge: StepJudge | None
    stats: SearchStats
    state: BatchState | None = None  # the rows' KV, for judges that score over a beam's row

    def run(
        self, values: list[float], flat: list[int], raws: list[float]
    ) -> tuple[list[_Candidate], list[_Candidate]]:
        """Keep up to ``width`` live candidates; file finished ones as hypotheses; collect pruned ones."""
        kept: list[_Candidate] = []
        pruned: list[_Candidate] = []
        judged: dict[tuple[int, int, int], StepCheck] = {}
        condemned = self._condemned(
            {index // self.vocab for value, index in zip(values, flat) if value != _NEG_INF}, judged
        )
        for value, index, raw in zip(values, flat, raws):
            if value == _NEG_INF or len(kept) >= self.config.options.width:
                break
            cand = self._candidate(value, index, raw, judged, condemned)
            if cand.check is not None and not cand.check.keep:
                rule = cand.check.rule or "unspecified"
                self.stats.pruned[rule] = self.stats.pruned.get(rule, 0) + 1
                pruned.append(cand)
            elif cand.finished:
                filed = _add_hypothesis(self.hyps, self.beams[cand.parent], cand, self.config)
                if filed is not None and self.judge is not None:
                    self.judge.ended(self.branch, filed.tokens, _row_context(self.state, cand.parent))
            else:
                kept.append(cand)
        return kept, pruned

    def _condemned(
        self, local_parents: set[int], judged: dict[tuple[int, int, int], StepCheck]
    ) -> dict[int, StepCheck]:
        """Parents whose pending step fails a rule at a sentence end or a periodic probe.

        The rules that can fail a pending step are monotone (a degenerate run,
        an unsupported fact, certain constraint violations are already
        written), so no continuation of that parent can save the step.
        """
        out: dict[int, StepCheck] = {}
        if self.judge is None:
            return out
        for local in sorted(local_parents):
            parent = self.branch * self.config.options.width + local
            pb = self.beams[parent]
            end = len(pb.tokens)
            pending = end - pb.step_start
            if pending > 0 and (
                self.boundary.soft[pb.tokens[-1]] or pending % self.config.options.probe_every == 0
            ):
                key = (parent, end, -1)
                if key not in judged:
                    judged[key] = self.judge.judge(
                        self.branch,
                        pb.tokens,
                        pb.step_start,
                        end,
                        pb.entropies,
                        False,
                        forced=pb.forced,
                        logprobs=pb.logprobs,
                        context=_row_context(self.state, parent),
                    )
                    self.stats.steps_checked += 1
                if not judged[key].keep:
                    out[parent] = judged[key]
        return out

    def _candidate(
        self,
        value: float,
        index: int,
        raw: float,
        judged: dict[tuple[int, int, int], StepCheck],
        condemned: dict[int, StepCheck],
    ) -> _Candidate:
        parent = self.branch * self.config.options.width + index // self.vocab
        token = index % self.vocab
        pb = self.beams[parent]
        t0 = time.perf_counter()
        nstate = self.steering.advance(pb.state, token)
        self.stats.check_seconds += time.perf_counter() - t0
        is_eos = token in self.config.eos_ids
        at_limit = len(pb.tokens) + 1 >= self.config.options.max_new_tokens
        finished = is_eos or at_limit or bool(nstate.finished)
        if parent in condemned:
            pending = (pb.step_start, len(pb.tokens))
            return _Candidate(
                parent,
                token,
                value,
                raw,
                self.entropy[parent],
                nstate,
                pending,
                condemned[parent],
                finished,
                forced=self.forced[parent],
            )
        closes = _closure(pb, token, is_eos, finished, self.boundary, self.config.options.max_step_tokens)
        check = None
        if closes is not None and self.judge is not None:
            start, end = closes
            included = end > len(pb.tokens)
            key = (parent, end, token if included else -1)
            if key not in judged:
                seq = [*pb.tokens, token] if included else pb.tokens
                ents = [*pb.entropies, self.entropy[parent]] if included else pb.entropies
                flags = [*pb.forced, self.forced[parent]] if included else pb.forced
                chosen = [*pb.logprobs, raw] if included else pb.logprobs
                judged[key] = self.judge.judge(
                    self.branch,
                    seq,
                    start,
                    end,
                    ents,
                    False,
                    forced=flags,
                    logprobs=chosen,
                    context=_row_context(self.state, parent),
                )
                self.stats.steps_checked += 1
            check = judged[key]
        return _Candidate(
            parent,
            token,
            value,
            raw,
            self.entropy[parent],
            nstate,
            closes,
            check,
            finished,
            forced=self.forced[parent],
        )


def _row_context(state: BatchState | None, row: int) -> RowContext | None:
    """The judge's view of ``row`` in the slab (None: no batch state was given)."""
    if state is None:
        return None
    b = state.branch_of_row[row]
    return RowContext(
        state.cache,
        row,
        state.mask[row, : state.columns],
        state.prompt_lengths[b],
        state.prompt_last_token[b],
    )


def _closure(
    pb: _Beam,
    token: int,
    is_eos: bool,
    finished: bool,
    boundary: BoundaryTable,
    max_step_tokens: int,
) -> tuple[int, int] | None:
    """The (start, end) of the step this candidate closes, or None; ``end`` indexes the child's tokens."""
    n = len(pb.tokens)
    if is_eos:
        end = n
    elif finished or boundary.hard[token] or n + 1 - pb.step_start >= max_step_tokens:
        end = n + 1
    elif boundary.closes_before(pb.tokens[-1] if pb.tokens else None, token):
        end = n
    else:
        return None
    return (pb.step_start, end) if end > pb.step_start else None


def _add_hypothesis(
    branch_hyps: list[Hypothesis], pb: _Beam, cand: _Candidate, config: BeamConfig
) -> Hypothesis | None:
    """File a finished candidate (EOS not included in its tokens); keep the ``width`` best.
    The filed hypothesis when it is now the branch's best, else None."""
    is_eos = cand.token in config.eos_ids
    tokens = tuple(pb.tokens) if is_eos else (*pb.tokens, cand.token)
    steps = list(pb.steps)
    if cand.closes is not None:
        steps.append(ClosedStep(cand.closes[0], cand.closes[1], cand.check or StepCheck(keep=True)))
    length = max(1, len(tokens))
    filed = Hypothesis(
        tokens=tokens,
        logprobs=tuple(pb.logprobs) if is_eos else (*pb.logprobs, cand.raw),
        entropies=tuple(pb.entropies) if is_eos else (*pb.entropies, cand.entropy),
        steps=tuple(steps),
        score=cand.score,
        normalized=cand.score / length**config.options.length_penalty,
        state=cand.state,
        end=END_MODEL if is_eos and not cand.forced else END_CUT,
    )
    branch_hyps.append(filed)
    branch_hyps.sort(key=lambda h: h.normalized, reverse=True)
    del branch_hyps[config.options.width :]
    return filed if branch_hyps[0] is filed else None


def _repair_or_accept(
    best: _Candidate, pb: _Beam, config: BeamConfig, stats: SearchStats, room: int
) -> _Candidate:
    """The branch lost every beam: roll the best pruned one back to its step start, or keep it flagged.

    The repair bans the step's first *free* token (one the steering had an
    alternative to) at its position; tokens the steering forced before it
    come back unchanged. It is kept flagged instead -- never cut -- when the
    attempts are spent, when the step has no free token (the steering wrote
    all of it: no ban could change it without breaking a hard constraint), or
    when the slab's ``room`` could not give the rolled-back beam its own
    ``max_new_tokens`` again (the steering closes open structures by then).
    """
    assert best.closes is not None
    start, end = best.closes
    attempts = pb.repairs.get(start, 0)
    position = _first_free(pb, best, start, end)
    fits = room >= config.options.max_new_tokens - start + 2
    if attempts >= config.options.max_repairs or position is None or not fits:
        stats.unrepaired += 1
        return replace(best, unrepaired=True)
    stats.repairs += 1
    banned = pb.tokens[position] if position < len(pb.tokens) else best.token
    return _Candidate(
        best.parent,
        banned,
        pb.step_score,
        0.0,
        0.0,
        pb.step_state,
        None,
        None,
        False,
        rollback_start=start,
        ban_at=position,
        abandoned=_flagged(pb, best, attempts, config),
    )


def _ended_before(
    pb: _Beam, start: int, steering: Steering, config: BeamConfig
) -> Hypothesis | None:
    """The answer of ``pb`` ended before its step starting at ``start`` -- at the last
    complete text there (a sentence longer than a step ends before its first piece) --,
    or None where it cannot end so: no complete text before the step, or a steering that
    still owes something there."""
    if start != pb.step_start or start <= 0 or start > len(pb.tokens):
        return None
    n = start
    if config.lander is not None:
        n = config.lander.complete_length(tuple(pb.tokens[:start])) or 0
    if n <= 0:
        return None
    tokens = tuple(pb.tokens[:n])
    if n == start:
        state = pb.step_state
    else:  # replayed over the kept tokens, as a landing is
        state = steering.initial_state()
        for token in tokens:
            state = steering.advance(state, token)
    if config.eos_ids:
        state = steering.advance(state, min(config.eos_ids))
    if unmet(steering, state):
        return None
    score = pb.step_score - sum(pb.logprobs[n:start])
    return Hypothesis(
        tokens=tokens,
        logprobs=tuple(pb.logprobs[:n]),
        entropies=tuple(pb.entropies[:n]),
        steps=tuple(s for s in pb.steps if s.end <= n),
        score=score,
        normalized=score / n**config.options.length_penalty,
        state=state,
        end=END_LANDED,
    )


def _first_free(pb: _Beam, best: _Candidate, start: int, end: int) -> int | None:
    """The first index of the step ``[start, end)`` whose token the steering did not force."""
    for k in range(start, end):
        forced = pb.forced[k] if k < len(pb.tokens) else best.forced
        if not forced:
            return k
    return None


def _flagged(pb: _Beam, best: _Candidate, attempts: int, config: BeamConfig) -> Hypothesis:
    """The pruned text as a hypothesis whose step carries its violation (a dead end's fallback)."""
    assert best.closes is not None
    start, end = best.closes
    grow = end > len(pb.tokens) and best.token not in config.eos_ids
    tokens = (*pb.tokens, best.token) if grow else tuple(pb.tokens)
    check = best.check or StepCheck(keep=True)
    flagged = StepCheck(keep=True, rule=check.rule, detail=check.detail, payload=check.payload)
    length = max(1, len(tokens))
    return Hypothesis(
        tokens=tokens,
        logprobs=(*pb.logprobs, best.raw) if grow else tuple(pb.logprobs),
        entropies=(*pb.entropies, best.entropy) if grow else tuple(pb.entropies),
        steps=(*pb.steps, ClosedStep(start, len(tokens), flagged, attempts, True)),
        score=best.score,
        normalized=best.score / length**config.options.length_penalty,
        state=best.state,
        end=END_MODEL if best.token in config.eos_ids and not best.forced else END_CUT,
    )


def _materialise(kept: list[_Candidate], beams: list[_Beam]) -> list[tuple[_Beam, int]]:
    """Build child beams; a parent's last child takes its lists, earlier children copy them."""
    last_use = {c.parent: i for i, c in enumerate(kept)}
    out: list[tuple[_Beam, int]] = []
    for i, cand in enumerate(kept):
        pb = beams[cand.parent]
        child = pb.child(copy=last_use[cand.parent] != i)
        if cand.rollback_start is not None:
            _roll_back(child, cand, cand.rollback_start)
        else:
            _extend(child, cand)
        out.append((child, cand.parent))
    return out


def _extend(child: _Beam, cand: _Candidate) -> None:
    """Append the candidate's token; record the step it closes and where the next one starts."""
    before_state, before_score = child.state, child.score
    n = len(child.tokens)
    child.tokens.append(cand.token)
    child.logprobs.append(cand.raw)
    child.entropies.append(cand.entropy)
    child.forced.append(cand.forced)
    child.score = cand.score
    child.state = cand.state
    if cand.closes is None:
        return
    start, end = cand.closes
    check = cand.check or StepCheck(keep=True)
    child.steps.append(ClosedStep(start, end, check, child.repairs.get(start, 0), cand.unrepaired))
    child.step_start = end
    child.abandoned = None
    if end == n:  # soft end: the new token opens the next step
        child.step_state, child.step_score = before_state, before_score
    else:
        child.step_state, child.step_score = cand.state, cand.score


def _roll_back(child: _Beam, cand: _Candidate, start: int) -> None:
    """Truncate to the step start and ban the step's first free token at its index; the row is re-fed."""
    child.rewind_column = child.cols[start - 1] if start >= 1 else -1
    child.tokens = child.tokens[:start]
    child.logprobs = child.logprobs[:start]
    child.entropies = child.entropies[:start]
    child.forced = child.forced[:start]
    child.cols = child.cols[: max(0, start - 1)]
    child.score = cand.score
    child.state = cand.state
    child.repairs[start] = child.repairs.get(start, 0) + 1
    at = max(cand.ban_at, start)
    child.banned[at] = child.banned.get(at, frozenset()) | {cand.token}
    child.abandoned = cand.abandoned


def _file_dead_end(
    live: list[_Beam], branch_hyps: list[Hypothesis], config: BeamConfig, stats: SearchStats
) -> None:
    """No finite candidate at all (e.g. a repair ban met a token the steering forces).

    The branch ends here; if the beam was being repaired, the text the repair
    replaced is filed instead, its step flagged with the violation.
    """
    alive = [bm for bm in live if bm.alive and bm.score != _NEG_INF]
    if not alive:
        return
    bm = max(alive, key=lambda x: x.score)
    if bm.abandoned is not None:
        stats.unrepaired += 1
        branch_hyps.append(bm.abandoned)
        return
    length = max(1, len(bm.tokens))
    branch_hyps.append(
        Hypothesis(
            tuple(bm.tokens),
            tuple(bm.logprobs),
            tuple(bm.entropies),
            tuple(bm.steps),
            bm.score,
            bm.score / length**config.options.length_penalty,
            bm.state,
            end=END_CUT,
        )
    )


def _dead(template: _Beam) -> _Beam:
    return _Beam.start(template.state, _NEG_INF, alive=False)


def _branch_done(live: list[_Beam], branch_hyps: list[Hypothesis], config: BeamConfig) -> bool:
    """Done when no beam lives, or ``width`` hypotheses exist and no live beam can beat the worst."""
    alive = [bm for bm in live if bm.alive and bm.score != _NEG_INF]
    if not alive:
        return True
    if len(branch_hyps) < config.options.width:
        return False
    length = max(len(bm.tokens) for bm in alive)
    best: float = max(bm.score for bm in alive) / max(1, length) ** config.options.length_penalty
    return best <= branch_hyps[-1].normalized


def _move_rows(state: BatchState, beams: list[_Beam], forks: list[tuple[int, int]]) -> None:
    """Copy forked rows (cache, mask, positions), then rewind repaired rows by masking abandoned columns."""
    state.fork([d for d, _ in forks], [s for _, s in forks])
    for row, bm in enumerate(beams):
        if bm.rewind_column is None:
            continue
        b = row // state.width
        if bm.rewind_column < 0:
            state.mask[row, state.prompt_last_column[b] :] = False
            state.positions[row] = state.prompt_lengths[b] - 1
        else:
            state.mask[row, bm.rewind_column :] = False
            state.positions[row] = state.prompt_lengths[b] + len(bm.tokens) - 1
        bm.rewind_column = None


def _finish(
    beams: list[_Beam],
    hyps: list[list[Hypothesis]],
    done: list[bool],
    config: BeamConfig,
    judge: StepJudge | None,
    steerings: Sequence[Steering],
    state: BatchState | None = None,
) -> list[BranchOutcome]:
    """Close the pending step of beams alive at the token limit (judged, never pruned); rank branches.

    A pending step the judge marks ``droppable`` (a domain answer's claim that
    breaks a rule) is left out: the answer ends before it (``_ended_before``).

    Every hypothesis a budget ended is settled by ``_land`` (landed, rolled
    back to its last complete sentence, or ``budget_cut``). Ranking: complete
    answers before ``budget_cut`` ones; then hypotheses whose steering
    reports nothing unmet (``unmet``, when the steering offers it: an open
    structure, a missing minimum); best score first within each group.
    """
    width = config.options.width
    outcomes = []
    for b, branch_hyps in enumerate(hyps):
        if not done[b]:
            alive = [
                (bm.score / max(1, len(bm.tokens)) ** config.options.length_penalty, k)
                for k, bm in enumerate(beams[b * width : (b + 1) * width])
                if bm.alive and bm.score != _NEG_INF
            ]
            for k, bm in enumerate(beams[b * width : (b + 1) * width]):
                if not bm.alive or bm.score == _NEG_INF:
                    continue
                steps = list(bm.steps)
                if bm.step_start < len(bm.tokens) and judge is not None:
                    check = judge.judge(
                        b,
                        bm.tokens,
                        bm.step_start,
                        len(bm.tokens),
                        bm.entropies,
                        True,
                        forced=bm.forced,
                        logprobs=bm.logprobs,
                        context=_row_context(state, b * width + k),
                    )
                    ended = (
                        _ended_before(bm, bm.step_start, steerings[b], config)
                        if check.rule is not None and check.droppable
                        else None
                    )
                    if ended is not None:  # a claim the answer does not need: it ends before it
                        branch_hyps.append(ended)
                        continue
                    steps.append(ClosedStep(bm.step_start, len(bm.tokens), check))
                length = max(1, len(bm.tokens))
                branch_hyps.append(
                    Hypothesis(
                        tuple(bm.tokens),
                        tuple(bm.logprobs),
                        tuple(bm.entropies),
                        tuple(steps),
                        bm.score,
                        bm.score / length**config.options.length_penalty,
                        bm.state,
                        end=END_CUT,
                    )
                )
            if alive and judge is not None:  # the best beam the limit ended: its deferred work
                best = max(alive)[1]
                judge.ended(b, beams[b * width + best].tokens, _row_context(state, b * width + best))
        settled = [_land(h, steerings[b], config) for h in branch_hyps]
        judged = config.lander is not None  # without a lander no end is known to be cut
        ranked = sorted(
            settled,
            key=lambda h: (
                judged and h.end == END_CUT,
                bool(unmet(steerings[b], h.state)),
                -h.normalized,
            ),
        )
        outcomes.append(BranchOutcome(b, tuple(ranked[:width])))
    return outcomes


def _land(h: Hypothesis, steering: Steering, config: BeamConfig) -> Hypothesis:
    """Settle how a budget-ended hypothesis ends (see the module doc).

    A rolled-back hypothesis keeps the steps up to its new end (the step
    that crosses it ends there), its score loses the dropped tokens' model
    log-probabilities, and its steering state is replayed over the kept
    tokens and finished, so ``unmet`` judges the text it now has. A rollback
    that would leave unmet what the steering had met (a closing end phrase or
    postscript) is not taken: the closed layout is the answer's landing.
    """
    if h.end != END_CUT or config.lander is None:
        return h
    n = config.lander.complete_length(h.tokens)
    if n is None:
        return h
    if n == len(h.tokens):
        return replace(h, end=END_LANDED)
    state = steering.initial_state()
    for token in h.tokens[:n]:
        state = steering.advance(state, token)
    if config.eos_ids:
        state = steering.advance(state, min(config.eos_ids))
    steps = tuple(
        step if step.end <= n else replace(step, end=n) for step in h.steps if step.start < n
    )
    score = h.score - sum(h.logprobs[n:])
    rolled = Hypothesis(
        tokens=h.tokens[:n],
        logprobs=h.logprobs[:n],
        entropies=h.entropies[:n],
        steps=steps,
        score=score,
        normalized=score / n**config.options.length_penalty,
        state=state,
        end=END_LANDED,
    )
    if unmet(steering, rolled.state) and not unmet(steering, h.state):
        # The steering closed the answer itself (an end phrase, a postscript): rolling
        # back would undo that structure, so the closed layout is where it lands.
        return replace(h, end=END_LANDED)
    return rolled


def unmet(steering: Steering, state: SteeringState | None) -> tuple[str, ...]:
    """What ``state`` still fails of the steering's controlled requirements, were it to end now.

    Steerings that do not offer ``unmet`` report their finished state's
    ``violations`` (if any); a missing state has nothing to report.
    """
    if state is None:
        return ()
    probe = getattr(steering, "unmet", None)
    if callable(probe):
        return tuple(probe(state))
    return tuple(getattr(state, "violations", ()) or ())
