"""``decode``: the steered decode of one request, from a prompt plan to a ``DecodeResult``.

Stages, in order: the shared prefix is prefilled once (or taken from the
tenant's prefix cache), the evidence the branches share once more
(``PromptPlan.shared``; kept in the tenant's prefix cache too,
``DecodeOptions.reuse_parts``), the branch suffixes together in one ragged batch,
the beam search runs all branches in one batched forward per
step with pruning at step boundaries, then each branch's best hypothesis is
cut into ``Step``s with confidence and hints, and the branches are aggregated.

Aggregation (kept simple, documented): a branch's weight is its view's
relevance times the mean confidence of its steps; the answer is the text of
the heaviest branch; every other branch is recorded as agreeing when its
conclusion (last step) shares at least half of its content words with the
answer's conclusion (Jaccard >= 0.5).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import msgspec
import torch

from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import (
    BeamConfig,
    BranchOutcome,
    ClosedStep,
    Hypothesis,
    SearchStats,
    generate,
    unmet,
)
from inference.decoder.boundaries import boundary_table
from inference.decoder.drafts import PromptLookup
from inference.decoder.endings import END_MODEL, End, Lander, required_closing
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import (
    BranchEvidence,
    ClaimGuard,
    PruningJudge,
    StepFacts,
    SupportBasis,
)
from inference.decoder.runner import ModelRunner
from inference.decoder.steering_protocol import Steering
from inference.decoder.stream import StepEvent, StepStream, is_layout, step_text
from inference.decoder.unsteered import Unsteered
from inference.prefix_cache import PrefixScope
from inference.prompting import PromptPlan
from reasoning.confidence import ConfidenceInputs, lowest_window_probability, step_confidence
from reasoning.constraints.model import Constraint, Premise
from reasoning.constraints.verifiers import verify as verify_constraint
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.evidence.model import EvidenceFact
from reasoning.steps import Step, TokenSummary, step_id

__all__ = [
    "BranchResult",
    "DecodeResult",
    "DecodeTimings",
    "PruningStats",
    "choose_answer",
    "decode",
]

_WORD = re.compile(r"\w+")
_DEFAULT_OPTIONS = DecodeOptions()


class BranchResult(msgspec.Struct, frozen=True, kw_only=True):
    view: str
    relevance: float
    text: str
    score: float
    confidence: float
    weight: float
    agrees: bool
    steps: tuple[Step, ...]
    violations: tuple[str, ...] = ()
    end: End = END_MODEL  # how the text ended: model | landed | budget_cut (``endings``)


def choose_answer(branches: Sequence[BranchResult]) -> int:
    """The index of the branch that answers: among the branches with no
    violation (when any), the highest weight, the first on a tie.

    A branch that broke a constraint never answers while another kept them
    all, whatever their weights. The one rule for it: the decoder applies it
    to the branches it decoded and the pipeline to a run's branches (reused
    ones included). ``branches`` must not be empty: a run that decoded
    nothing has no answer branch.
    """
    return max(range(len(branches)), key=lambda b: (not branches[b].violations, branches[b].weight))


class PruningStats(msgspec.Struct, frozen=True, kw_only=True):
    pruned: dict[str, int]
    steps_checked: int
    repairs: int
    unrepaired: int
    counterfactual_scored: int
    counterfactual_skipped: int
    counterfactual_reused: int = 0  # checks answered by a claim another beam already had scored
    #: Distinct (branch, claim) checks wanted (scored + skipped), and why each skipped one was.
    counterfactual_wanted: int = 0
    counterfactual_skip_reasons: dict[str, int] = msgspec.field(default_factory=dict)
    #: Complete claims checked against the decision (every one, pruning on or off),
    #: and how many of them contradicted it.
    claims_checked: int = 0
    claims_contradicted: int = 0


class DecodeTimings(msgspec.Struct, frozen=True, kw_only=True):
    prefill_s: float
    decode_s: float
    constraint_check_s: float
    #: Of ``decode_s``, host seconds inside the model's decode forwards (the rest
    #: is selection, steering, pruning and bookkeeping; see ``beam.SearchStats``).
    forward_s: float = 0.0


class DecodeResult(msgspec.Struct, frozen=True, kw_only=True):
    """The answer and everything needed to explain and audit it.

    ``steps`` / ``reasoning_path`` are the answer branch's. Step ids are
    ``<view>.S<k>`` (``reasoning.steps.step_id``) wherever a step is named,
    ``violations`` included. ``violations`` lists
    what the answer still breaks: steps whose pruning rule could not be
    repaired (or that hit the token limit while breaking one, or every rule
    break when pruning is off) and what the steering reports in its final
    state (e.g. a forced exit). ``counterfactual_flops_share`` is
    counterfactual FLOPs / every other FLOPs counted (prefill, decode, forced
    runs); ``constraint_check_share``
    is seconds in steering and partial verification / decode seconds.
    """

    answer: str
    answer_branch: int
    steps: tuple[Step, ...]
    reasoning_path: tuple[str, ...]
    branches: tuple[BranchResult, ...]
    pruning: PruningStats
    timings: DecodeTimings
    prompt_tokens: int
    generated_tokens: int
    decode_steps: int
    #: Forward passes of the decode; fewer than ``decode_steps`` where forced runs were fed
    #: several positions at once (``forced_runs.py``), with ``forced_tokens`` such positions
    #: the steering forced and ``draft_tokens`` such positions prompt lookup guessed
    #: (``drafts.py``) of ``draft_fed`` guessed positions fed ahead.
    decode_forwards: int = 0
    forced_tokens: int = 0
    draft_tokens: int = 0
    draft_fed: int = 0
    flops: dict[str, float]
    counterfactual_flops_share: float
    constraint_check_share: float
    prefix_cache_hit: bool
    violations: tuple[str, ...]
    end: End = END_MODEL  # how the answer ended: model | landed | budget_cut (``endings``)


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), tokenizer):
        value = getattr(source, "eos_token_id", None)
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return frozenset(ids)


def decode(
    model: Any,
    tokenizer: Any,
    plan: PromptPlan,
    options: DecodeOptions = _DEFAULT_OPTIONS,
    *,
    steering: Steering | Sequence[Steering] | None = None,
    constraints: Sequence[Constraint] = (),
    premises: Sequence[Premise] = (),
    lexicon: Mapping[str, str] | None = None,
    request_text: str = "",
    prefix: PrefixScope | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    batcher: MicroBatcher | None = None,
    claims: ClaimGuard | None = None,
    basis: SupportBasis | None = None,
) -> DecodeResult:
    """Decode every branch of ``plan`` in one batched beam search; see the module docstring.

    Every setting is ``options``'; the other arguments are what is decoded
    and checked. ``steering`` None decodes the model plain (the comparison
    mode); one ``Steering`` steers every branch alike; a sequence gives one
    per branch of ``plan``, in order (``compile.branch_steerings`` binds each
    branch's citations to the evidence its prompt shows), and each branch's
    result reports what its own steering left unmet. ``constraints`` are
    checked on partial answers (pruning), ``premises`` attributed to the
    steps that mention them; ``lexicon`` (label -> class) and
    ``request_text`` feed the evidence-chain and counterfactual rules.
    ``claims`` is the decision's claim check: every complete claim that
    contradicts the decision is pruned (with pruning off, flagged, so its
    branch ranks below the others), steered or not. ``basis`` is what a
    domain answer rests on beside its evidence and request (the decision and
    its grounds, the ontology's rule-id shapes): every complete sentence of
    the model's is checked for support against them (pruning off: flagged).
    The shared prefix is read from and stored in ``prefix`` (one tenant's
    entries for this model) when given, else prefilled every time.
    ``on_step`` hears every branch's steps as ``StepEvent``s (for streaming):
    each as soon as the search has decided it, the rest before ``decode``
    returns; per branch they are exactly that branch's ``steps`` in the
    result (``stream.py``). It runs on the decoding thread and must be quick.
    With a ``batcher`` the model calls go through it, merged step by step with
    the other decodes running at the same time.

    Raises:
        InvalidInput: a steering sequence whose length is not the branch count.
        LimitExceeded: the prompt plus ``options.max_new_tokens`` exceeds the model's window.
    """
    torch.manual_seed(options.seed)
    steerings = _per_branch(steering, len(plan.suffixes))
    with batcher.lane() if batcher is not None else nullcontext() as lane:
        runner = ModelRunner(model, lane=lane, packed=options.packed_forward)
        longest = len(plan.prefix_ids) + max(len(s) for s in plan.suffixes) + options.max_new_tokens
        limit = getattr(runner.config, "max_position_embeddings", None)
        if limit is not None and longest > int(limit):
            raise LimitExceeded(
                f"prompt plus max_new_tokens is {longest} tokens; the model's window is {limit}"
            )
        pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        with torch.inference_mode():
            t0 = time.perf_counter()
            prefix_kv, hit = _prefix(runner, plan, prefix)
            state, first = prefill_branches(
                runner,
                len(plan.prefix_ids),
                prefix_kv,
                plan.suffixes,
                width=options.width,
                max_new_tokens=options.max_new_tokens,
                slack=options.repair_slack,
                pad_id=pad_id,
                shared=plan.shared,
                parts_store=prefix if options.reuse_parts else None,
                prefix_ids=plan.prefix_ids,
            )
            prefill_s = time.perf_counter() - t0
            stats = SearchStats()
            judge = PruningJudge(
                tokenizer=tokenizer,
                runner=runner,
                constraints=constraints,
                branches=[
                    BranchEvidence(
                        view,
                        facts,
                        state.branch_kv[b],
                        state.prompt_lengths[b],
                        torch.log_softmax(first[b], -1),
                    )
                    for b, (view, facts) in enumerate(zip(plan.views, plan.facts))
                ],
                options=options,
                stats=stats,
                verify=verify_constraint,
                lexicon=dict(lexicon or {}),
                request_text=request_text,
                language=plan.language,
                pad_id=pad_id,
                claims=claims,
                instructions=plan.instructions,
                basis=basis,
            )
            config = BeamConfig(
                options,
                eos_ids=_eos_ids(model, tokenizer),
                lander=Lander(
                    lambda ids: str(tokenizer.decode(list(ids), skip_special_tokens=True)),
                    closing=required_closing(constraints),
                ),
                lookup=_lookup(plan, options),
            )
            table = boundary_table(tokenizer, int(first.shape[-1]))
            stream = StepStream(plan.views, tokenizer, on_step) if on_step is not None else None
            outcomes = generate(
                runner, state, first, steerings, config, table, judge, stats,
                on_decided=stream.decided if stream is not None else None,
            )
        result = _result(
            plan, tokenizer, outcomes, premises, runner, stats, judge, prefill_s, hit, steerings
        )
    if stream is not None:
        stream.finish([branch.steps for branch in result.branches])
    return result


def _lookup(plan: PromptPlan, options: DecodeOptions) -> PromptLookup | None:
    """The branch's prompt for drafting guesses (``drafts.py``), where guesses pay: one row
    (a greedy decode of one branch) with the forced-run feed on and ``draft_tokens`` to
    guess (see ``DecodeOptions``: a run is followed only while every row takes its guess,
    in lockstep, and over several rows they seldom all do)."""
    if not (options.forced_runs and options.draft_tokens and options.width == 1 and len(plan.suffixes) == 1):
        return None
    return PromptLookup([[*plan.prefix_ids, *suffix] for suffix in plan.suffixes])


def _per_branch(steering: Steering | Sequence[Steering] | None, n: int) -> list[Steering]:
    """One steering per branch: the one given for all, or the sequence checked against ``n``."""
    if steering is None:
        return [Unsteered()] * n
    if isinstance(steering, Sequence):
        if len(steering) != n:
            raise InvalidInput(f"{len(steering)} steerings were given for {n} branches")
        return list(steering)
    return [steering] * n


def _prefix(runner: ModelRunner, plan: PromptPlan, scope: PrefixScope | None) -> tuple[Any, bool]:
    """The prefix KV from the scope's cache, or prefilled now (and stored there)."""
    usable = scope is not None and bool(plan.prefix_ids)
    if usable and scope is not None:
        kv = scope.get(plan.prefix_ids)
        if kv is not None:
            return kv, True
    kv = prefill_prefix(runner, plan.prefix_ids)
    if usable and scope is not None:
        scope.put(plan.prefix_ids, kv)
    return kv, False


def _result(
    plan: PromptPlan,
    tokenizer: Any,
    outcomes: list[BranchOutcome],
    premises: Sequence[Premise],
    runner: ModelRunner,
    stats: SearchStats,
    judge: PruningJudge,
    prefill_s: float,
    hit: bool,
    steerings: Sequence[Steering],
) -> DecodeResult:
    branches = [_branch(plan, tokenizer, o, premises, steerings[o.branch]) for o in outcomes]
    answer_branch = choose_answer(branches)
    # The chosen answer's claims whose own check was skipped get the contrast now.
    branches[answer_branch] = _branch(
        plan,
        tokenizer,
        _settled(outcomes[answer_branch], judge),
        premises,
        steerings[outcomes[answer_branch].branch],
    )
    answer = branches[answer_branch]
    conclusion = _content(answer.steps[-1].text if answer.steps else answer.text)
    branches = [
        msgspec.structs.replace(
            br,
            agrees=b == answer_branch
            or _jaccard(_content(br.steps[-1].text if br.steps else br.text), conclusion) >= 0.5,
        )
        for b, br in enumerate(branches)
    ]
    flops = dict(runner.counters.flops)
    base = sum(v for k, v in flops.items() if k != "counterfactual")
    violations = branches[answer_branch].violations
    return DecodeResult(
        answer=answer.text,
        answer_branch=answer_branch,
        steps=answer.steps,
        reasoning_path=tuple(s.id for s in answer.steps),
        branches=tuple(branches),
        pruning=PruningStats(
            pruned=dict(stats.pruned),
            steps_checked=stats.steps_checked,
            repairs=stats.repairs,
            unrepaired=stats.unrepaired,
            counterfactual_scored=judge.counterfactual_scored,
            counterfactual_skipped=judge.counterfactual_skipped,
            counterfactual_reused=judge.counterfactual_reused,
            counterfactual_wanted=judge.checks.wanted,
            counterfactual_skip_reasons=judge.checks.skip_reasons,
            claims_checked=judge.claims_checked,
            claims_contradicted=judge.claims_contradicted,
        ),
        timings=DecodeTimings(
            prefill_s=prefill_s,
            decode_s=stats.decode_seconds,
            constraint_check_s=stats.check_seconds,
            forward_s=stats.forward_seconds,
        ),
        prompt_tokens=len(plan.prefix_ids) + sum(len(s) for s in plan.suffixes),
        generated_tokens=sum(len(o.best.tokens) for o in outcomes if o.hypotheses),
        decode_steps=stats.steps_decoded,
        decode_forwards=stats.forwards,
        forced_tokens=stats.forced_taken,
        draft_tokens=stats.draft_taken,
        draft_fed=stats.draft_fed,
        flops=flops,
        counterfactual_flops_share=flops.get("counterfactual", 0.0) / base if base else 0.0,
        constraint_check_share=stats.check_seconds / stats.decode_seconds
        if stats.decode_seconds
        else 0.0,
        prefix_cache_hit=hit,
        violations=violations,
        end=answer.end,
    )


def _settled(outcome: BranchOutcome, judge: PruningJudge) -> BranchOutcome:
    """The outcome whose answering hypothesis' steps the judge settled (``settle_answer``)."""
    if not outcome.hypotheses:
        return outcome
    best = _answering(outcome)
    checks = judge.settle_answer(outcome.branch, [s.check for s in best.steps])
    steps = tuple(
        step if step.check is check else dataclasses.replace(step, check=check)
        for step, check in zip(best.steps, checks)
    )
    settled = dataclasses.replace(best, steps=steps)
    return BranchOutcome(
        outcome.branch, tuple(settled if h is best else h for h in outcome.hypotheses)
    )


def _branch(
    plan: PromptPlan,
    tokenizer: Any,
    outcome: BranchOutcome,
    premises: Sequence[Premise],
    steering: Steering,
) -> BranchResult:
    b = outcome.branch
    view, relevance = plan.views[b], plan.relevance[b]
    if not outcome.hypotheses:
        return BranchResult(
            view=view,
            relevance=relevance,
            text="",
            score=float("-inf"),
            confidence=0.0,
            weight=0.0,
            agrees=False,
            steps=(),
        )
    best = _answering(outcome)
    facts_by_id = {f.id: f for f in plan.facts[b]}
    visible = [  # a blank line between two steps is layout, not a step
        closed
        for closed in best.steps
        if not is_layout(step_text(tokenizer, best.tokens[closed.start : closed.end]))
    ]
    steps = tuple(
        _step(
            step_id(view, k),
            view,
            tokenizer,
            best,
            closed,
            facts_by_id,
            premises,
            bool(plan.facts[b]),
        )
        for k, closed in enumerate(visible, start=1)
    )
    confidence = sum(s.confidence for s in steps) / len(steps) if steps else 0.0
    violations = tuple(f"{s.id}: {s.violation}" for s in steps if s.violation)
    # ``unmet`` also reports what an answer cut by the token limit leaves open.
    violations += tuple(f"steering: {v}" for v in unmet(steering, best.state))
    return BranchResult(
        view=view,
        relevance=relevance,
        text=tokenizer.decode(list(best.tokens), skip_special_tokens=True),
        score=best.normalized,
        confidence=confidence,
        weight=relevance * confidence,
        agrees=False,
        steps=steps,
        violations=violations,
        end=best.end,
    )


def _answering(outcome: BranchOutcome) -> Hypothesis:
    """The branch's best hypothesis that contradicts no conclusion of the decision, else its best.

    With pruning off (``steering: false``) a claim that contradicts the
    rules' decision is kept, flagged; it does not answer for its branch
    while another hypothesis of the branch keeps the decision.
    """
    for hyp in outcome.hypotheses:
        if not any(
            isinstance(s.check.payload, StepFacts) and s.check.payload.contradiction
            for s in hyp.steps
        ):
            return hyp
    return outcome.best


def _step(
    step_id: str,
    view: str,
    tokenizer: Any,
    hyp: Hypothesis,
    closed: ClosedStep,
    facts_by_id: Mapping[str, EvidenceFact],
    premises: Sequence[Premise],
    has_evidence: bool,
) -> Step:
    facts = closed.check.payload if isinstance(closed.check.payload, StepFacts) else None
    text = facts.text if facts else step_text(tokenizer, hyp.tokens[closed.start : closed.end])
    logprobs = hyp.logprobs[closed.start : closed.end]
    window = lowest_window_probability(logprobs)
    mentions = facts.mentions if facts else ()
    unsupported = facts.unsupported if facts else ()
    cited = facts.evidence_cited if facts else ()
    used = facts.evidence_used if facts else ()
    stale = tuple(
        f"evidence {fid}: {facts_by_id[fid].stale_hint}"
        for fid in dict.fromkeys((*cited, *used))
        if fid in facts_by_id and facts_by_id[fid].stale_hint
    )
    checked = facts.supported if facts else None
    # A claim that restates a conclusion but writes what no source holds has no full support.
    restates = bool(facts and facts.restates) and checked is not False
    if checked is None:
        # Not a domain answer's sentence: the share of its mentions its evidence holds.
        support = (1 - len(unsupported) / len(mentions)) if (mentions and has_evidence) else None
    else:
        support = 1.0 if checked else 0.0
    flagged = checked is False and not restates
    inputs = ConfidenceInputs(
        window_prob=window,
        # A claim that states what the rules concluded has their full support.
        support=1.0 if restates else support,
        unsupported=unsupported if not restates else (),
        contrast=facts.contrast if facts else None,
        contrast_kind=facts.contrast_kind if facts else None,
        stale_hints=stale,
        contradiction=facts.contradiction if facts else None,
        undecided=facts.undecided if facts else None,
        flagged=flagged,
    )
    conf = step_confidence(inputs)
    words = {w for w in _WORD.findall(text.lower()) if len(w) > 2}
    premise_ids = tuple(
        p.id for p in premises if words & {w for w in _WORD.findall(p.topic.lower()) if len(w) > 2}
    )
    ents = hyp.entropies[closed.start : closed.end]
    return Step(
        id=step_id,
        branch=view,
        text=text,
        token_start=closed.start,
        token_end=closed.end,
        evidence_cited=cited,
        evidence_used=used,
        premise_ids=premise_ids,
        verdicts=facts.verdicts if facts else (),
        tokens=TokenSummary(
            count=len(logprobs),
            mean_logprob=sum(logprobs) / len(logprobs) if logprobs else 0.0,
            min_window_prob=window,
        ),
        entropy=sum(ents) / len(ents) if ents else 0.0,
        contrast=facts.contrast if facts else None,
        contrast_variant=facts.contrast_variant if facts else None,
        confidence=conf.value,
        calibration_hint=conf.hint,
        violation=f"{closed.check.rule}: {closed.check.detail}" if closed.check.rule else None,
        repaired=closed.repaired,
        # A step kept although a pruning rule judged it (pruning off, or its repair failed)
        # is flagged; the decision and its grounds are marked by the pipeline.
        kind="flagged" if closed.check.rule or flagged else "supported",
        support=(facts.support if facts else ()) or tuple(dict.fromkeys((*cited, *used))),
    )


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0
