"""The counterfactual checks of one request: which claims are scored, with how many variants, when.

The pruning judge asks ``CheckScheduler.check`` for every claim that states
a fact (``states_fact``: it names a label, a number or a date and is no junk)
and is complete, or is the answer's last text; the scheduler owns the FLOPs
share (``DecodeOptions.counterfactual_flops_share`` of every other FLOPs
purpose the runner counted: prefill, decode, forced runs) and spends it so
that the answer's claims get a contrast:

- a claim is one check per (branch, claim text): the beams that meet it
  again reuse its contrast (``reused``), and ``wanted`` / ``skipped`` count
  distinct claims, not meetings;
- a check costs only what is new: over the beam's own row of the KV slab
  (``contrast.row_contrast``) each variant runs its changed window, all of a
  claim's variants in one ragged batch, the claim's log-probabilities taken
  from the decode (``window_contrast``, which re-runs the claim over the
  branch prompt, is the fallback without a row);
- a claim takes as many of its ranked variants as a quarter of the share
  left pays for, and one when a quarter would not buy one (so the claims
  after it still find some), instead of being skipped when all would not;
- a ``deferrable`` claim (pruning off: a contrast only informs the step's
  confidence) waits for its beam's end: when the search files a hypothesis
  that is its branch's best so far, or the token limit ends the best live
  beam, ``ended`` scores every claim that answer holds over its row (the row
  holds the whole answer, so each claim's variants see the text before it),
  so the share is not spent on the many candidates the search never keeps;
  a claim no such answer held is reported ``dropped`` and not counted as
  wanted, one the share cannot pay for yet stays deferred;
- with pruning on every claim is checked when it closes (a contrast may
  prune it); a claim skipped for budget is tried again whenever it is met
  later (the share grows with the decode), and ``settle`` gives the chosen
  answer's steps the contrasts computed for the same claims, then scores the
  rest, most informative first (``claim_rank``), with what is left;
- every claim still unscored carries the reason (``skip_reasons``).

Variants (``reasoning.counterfactual``) are ranked by what they change: a
stated value first (the other side of a threshold the domain's rules read,
``thresholds``; a number; a date), then an entity (a sibling of the same
ontology class, ``lexicon``), then the negated action.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from inference.decoder.contrast import (
    RowClaim,
    RowContext,
    row_contrast,
    row_cost,
    rows_contrast,
    window_contrast,
    window_cost,
)
from inference.decoder.kv_slab import PrefixKV
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from reasoning.counterfactual import Threshold, Variant, variants
from reasoning.errors import InvalidInput

__all__ = [
    "DROPPED",
    "SKIP_BUDGET",
    "SKIP_NO_VARIANT",
    "CheckScheduler",
    "Checked",
    "ClaimTokens",
    "PromptOf",
    "claim_rank",
    "states_fact",
]

SKIP_BUDGET = "budget"  # no variant fitted in what was left of the share
SKIP_NO_VARIANT = "no variant"  # the claim has no minimal variant to contrast with
DROPPED = "dropped with its beam"  # deferred, and the search kept no beam that holds it
_COUNTERFACTUAL = "counterfactual"
_LOOKAHEAD = 2
_VARIANT_ORDER = {"number": 0, "date": 0, "threshold": 0, "entity": 1, "negation": 2}
_QUANTITY = re.compile(r"(?<![\w.])(?<!\w-)\d")  # a number or date, not an id's digit ('E2', 'R-024')
_WORD = re.compile(r"[^\W\d_]", re.UNICODE)


class PromptOf(Protocol):
    """What a branch's prompt gives a check without a row: its KV, length and first log-probs."""

    @property
    def prompt_kv(self) -> PrefixKV: ...

    @property
    def prompt_len(self) -> int: ...

    @property
    def first_logprobs(self) -> torch.Tensor: ...


@dataclass(frozen=True)
class ClaimTokens:
    """The claim as the decode holds it: ``tokens[start:end]``, the model's log-probability
    of each chosen token (``logprobs``, empty when unknown) and the beam's row (or None);
    ``deferrable``: its contrast may wait until its beam is kept (pruning off, not final)."""

    tokens: Sequence[int]
    start: int
    end: int
    logprobs: Sequence[float] = ()
    context: RowContext | None = None
    deferrable: bool = False


@dataclass(frozen=True)
class Checked:
    """A scored claim: its contrast (nats per token) against its best variant."""

    value: float
    variant: Variant
    variants: int  # how many variants were scored


def states_fact(text: str, mentions: Sequence[str], degenerate: str | None) -> bool:
    """Whether a step states a fact, what a counterfactual check is for: it names one
    (``mentions``: a label of the case or its evidence, a number, a date), holds a word,
    and is no junk (``degenerate``: a fragment, a repetition, an echo states nothing the
    answer stands on). The judge asks it of every complete claim and of the answer's last
    text; the benches count an answer's fact steps with it."""
    return bool(mentions) and degenerate is None and bool(_WORD.search(text))


def claim_rank(text: str, relied: Sequence[str]) -> int:
    """How informative a check of ``text`` is (lower first): 0 a fact the decision or its
    grounds rely on (it names one of ``relied``), 1 a number or date (not an id's digit,
    as in a citation '[E2]'), 2 an entity."""
    lowered = text.lower()
    if any(r and r.lower() in lowered for r in relied):
        return 0
    return 1 if _QUANTITY.search(text) else 2


@dataclass
class CheckScheduler:
    """One request's counterfactual checks (see the module doc)."""

    runner: ModelRunner
    options: DecodeOptions
    encode: Callable[[str], list[int]]
    decode: Callable[[Sequence[int]], str]
    prompts: Sequence[PromptOf]
    lexicon: Mapping[str, str] = field(default_factory=dict)
    pad_id: int = 0
    thresholds: Sequence[Threshold] = ()  # the rules' compared constants (threshold-side variants)
    scored: int = 0  # distinct claims scored
    reused: int = 0  # meetings answered by a claim already scored
    _results: dict[tuple[int, str], Checked] = field(default_factory=dict)
    _skipped: dict[tuple[int, str], str] = field(default_factory=dict)
    _variants: dict[str, tuple[Variant, ...]] = field(default_factory=dict)
    #: Deferred claims: (branch, claim) -> (the answer up to the claim's end, its start, the
    #: decode's log-probabilities of those tokens).
    _pending: dict[tuple[int, str], tuple[tuple[int, ...], int, tuple[float, ...]]] = field(
        default_factory=dict
    )
    _need: dict[tuple[int, str], float] = field(default_factory=dict)  # FLOPs a retry needs
    _short: float = 0.0  # what the last check that did not fit needed for one variant

    @property
    def wanted(self) -> int:
        """Distinct claims that wanted a check."""
        return self.scored + len(self._skipped)

    @property
    def skipped(self) -> int:
        """Distinct claims still without a contrast."""
        return len(self._skipped)

    @property
    def skip_reasons(self) -> dict[str, int]:
        """Why each unscored claim is unscored: reason -> claims (``DROPPED``: deferred
        claims no kept beam held, not counted as wanted)."""
        reasons = dict(Counter(self._skipped.values()))
        dropped = sum(1 for key in self._pending if key not in self._skipped)
        if dropped:
            reasons[DROPPED] = dropped
        return reasons

    def left(self) -> float:
        """FLOPs of the share still unspent."""
        flops = self.runner.counters.flops
        base = sum(v for k, v in flops.items() if k != _COUNTERFACTUAL)
        return self.options.counterfactual_flops_share * base - flops.get(_COUNTERFACTUAL, 0.0)

    def known(self, branch: int, text: str) -> Checked | None:
        """The contrast already computed for this claim of ``branch``, if any."""
        return self._results.get((branch, text.strip()))

    def check(self, branch: int, text: str, claim: ClaimTokens | None) -> Checked | None:
        """Score the claim ``text`` (a step of ``branch``) or say why not (``skip_reasons``);
        a ``deferrable`` claim is held until a kept beam is seen to extend it (``observe``)."""
        key = (branch, text.strip())
        hit = self._results.get(key)
        if hit is not None:
            self.reused += 1
            return hit
        found = self._ranked(key[1])
        if not found:
            self._pending.pop(key, None)
            self._skipped[key] = SKIP_NO_VARIANT
            return None
        usable = (
            claim is not None
            and claim.context is not None
            and len(claim.logprobs) >= claim.end > claim.start
        )
        if usable and claim is not None and claim.deferrable:
            if key not in self._pending:
                end = claim.end
                self._pending[key] = (
                    tuple(claim.tokens[:end]),
                    claim.start,
                    tuple(float(x) for x in claim.logprobs[:end]),
                )
            return None
        if claim is None and key in self._pending:
            # Its beam ended right after it (no later judge call saw it): the tokens are known.
            tokens, start, logprobs = self._pending[key]
            claim = ClaimTokens(tokens, start, len(tokens), logprobs, None)
        self._pending.pop(key, None)
        scored = (
            self._over_row(branch, found, claim)
            if usable and claim is not None
            else self._over_prompt(branch, key[1], found)
        )
        if scored is None:
            self._skipped[key] = SKIP_BUDGET
            return None
        self._skipped.pop(key, None)
        self._results[key] = scored
        self.scored += 1
        return scored

    def observe(self, branch: int, claim: ClaimTokens, *, skip: bool = True) -> None:
        """A judge call on a beam whose answer is ``claim.tokens[:claim.start]``: every deferred
        claim of ``branch`` that answer extends is scored now, over that beam's row, all of
        them in one ragged batch (``contrast.rows_contrast``); one the share cannot pay for
        yet stays deferred, counted skipped for budget unless ``skip`` is False."""
        if not self._pending or claim.context is None:
            return
        tokens = claim.tokens
        left = self.left()
        per_token = 2.0 * self.runner.parameters
        planned: list[tuple[tuple[int, str], RowClaim, list[Variant]]] = []
        logprobs: tuple[float, ...] = ()
        for key, (prefix, start, lps) in list(self._pending.items()):
            end = len(prefix)
            if (
                key[0] != branch
                or end > claim.start
                or self._need.get(key, 0.0) > left
                or tokens[end - 1] != prefix[-1]
                or tuple(tokens[:end]) != prefix
            ):
                continue
            ids = list(prefix[start:end])
            aligned = _aligned(ids, self.decode, self.encode, self._ranked(key[1]))
            costs = _prefix_costs(ids, aligned)
            take = self._take(costs, left)
            if take == 0:
                # Still short (or nothing aligns over the row): it stays deferred.
                if skip:
                    self._skipped[key] = SKIP_BUDGET
                self._need[key] = self._short
                continue
            chosen = aligned[:take]
            planned.append((key, RowClaim(start, end, tuple(tuple(t) for _, t in chosen)),
                            [v for v, _ in chosen]))
            left -= costs[take - 1] * per_token
            logprobs = lps if len(lps) > len(logprobs) else logprobs
        if not planned:
            return
        claims = [c for _, c, _ in planned]
        answer = list(tokens[: max(c.end for c in claims)])
        try:
            results = rows_contrast(
                self.runner, claim.context, answer, logprobs, claims,
                lookahead=_LOOKAHEAD, pad_id=self.pad_id,
            )
        except InvalidInput:
            return  # the row has not been fed some claim's change: they wait for another
        for (key, _, chosen_variants), result in zip(planned, results):
            del self._pending[key]
            self._need.pop(key, None)
            self._skipped.pop(key, None)
            self._results[key] = Checked(result.value, chosen_variants[result.best - 1], len(chosen_variants))
            self.scored += 1

    def ended(self, branch: int, tokens: Sequence[int], context: RowContext | None) -> None:
        """A beam ended with the answer ``tokens`` (filed as a hypothesis, or alive at the
        token limit) on the row ``context``: no later judge call will see its deferred claims,
        so they are scored now, over that row (not re-run over the prompt after the search)."""
        # A claim the share cannot pay for now is not yet wanted: it is, if the answer keeps it.
        self.observe(branch, ClaimTokens(tokens, len(tokens), len(tokens), (), context), skip=False)

    def settle(self, branch: int, text: str) -> Checked | None:
        """A claim of the chosen answer: its known contrast, else one scored now over the
        branch prompt with what is left of the share (None: skipped, reason kept)."""
        return self.check(branch, text, None)

    def _ranked(self, claim: str) -> tuple[Variant, ...]:
        if claim not in self._variants:
            found = variants(claim, self.lexicon, limit=len(_VARIANT_ORDER), thresholds=self.thresholds)
            ordered = sorted(found, key=lambda v: _VARIANT_ORDER.get(v.kind, 3))
            self._variants[claim] = tuple(ordered[: self.options.max_variants])
        return self._variants[claim]

    def _take(self, costs: Sequence[int], left: float | None = None) -> int:
        """How many of the ranked variants (costs: token positions of the first k) to score
        with ``left`` FLOPs (default: what is left of the share)."""
        per_token = 2.0 * self.runner.parameters
        left = self.left() if left is None else left
        self._short = costs[0] * per_token if costs else 0.0
        if not costs or costs[0] * per_token > left:
            return 0
        if costs[0] * per_token > left / 4:
            return 1  # scarce: one variant, so the claims after this one still find some
        take = 0
        for k, cost in enumerate(costs, start=1):
            if cost * per_token > left / 4:
                break
            take = k
        return take

    def _over_row(
        self, branch: int, found: Sequence[Variant], claim: ClaimTokens
    ) -> Checked | None:
        ids = list(claim.tokens[claim.start : claim.end])
        aligned = _aligned(ids, self.decode, self.encode, found)
        if not aligned:
            return self._over_prompt(branch, self.decode(ids).strip(), found)
        costs = _prefix_costs(ids, aligned)
        take = self._take(costs)
        if take == 0:
            return None
        chosen = aligned[:take]
        assert claim.context is not None
        result = row_contrast(
            self.runner,
            claim.context,
            list(claim.tokens[: claim.end]),
            claim.start,
            list(claim.logprobs[: claim.end]),
            [v for _, v in chosen],
            lookahead=_LOOKAHEAD,
            pad_id=self.pad_id,
        )
        return Checked(result.value, chosen[result.best - 1][0], take)

    def _over_prompt(self, branch: int, text: str, found: Sequence[Variant]) -> Checked | None:
        if branch >= len(self.prompts):
            return None
        ids = self.encode(text)
        pairs = [(v, self.encode(v.text)) for v in found]
        pairs = [(v, p) for v, p in pairs if p and p != ids]
        if not ids or not pairs:
            return None
        costs = [window_cost(ids, [p for _, p in pairs[:k]]) for k in range(1, len(pairs) + 1)]
        take = self._take(costs)
        if take == 0:
            return None
        prompt = self.prompts[branch]
        result = window_contrast(
            self.runner,
            prompt.prompt_kv,
            prompt.prompt_len,
            prompt.first_logprobs,
            ids,
            [p for _, p in pairs[:take]],
            pad_id=self.pad_id,
        )
        return Checked(result.value, pairs[result.best - 1][0], take)


def _aligned(
    ids: Sequence[int],
    decode: Callable[[Sequence[int]], str],
    encode: Callable[[str], list[int]],
    found: Sequence[Variant],
) -> list[tuple[Variant, list[int]]]:
    """Each variant as tokens: the claim's own tokens before and after its change, the
    changed text between them tokenised.

    The claim's tokens are the decode's, which need not be how the tokenizer
    would split its text; keeping them on both sides of the change makes the
    variant depart from the claim, and rejoin it, where its text does, so its
    window (``contrast._windows``) is the change and not the rest of the
    claim. A variant that tokenises back to the claim is left out.
    """
    text = decode(ids)
    lead = len(text) - len(text.lstrip())
    trail = text[len(text.rstrip()) :]
    ends: list[int] = [0]  # ends[g]: characters the first g tokens decode to (-1: not a prefix)
    for g in range(1, len(ids) + 1):
        piece = decode(ids[:g])
        ends.append(len(piece) if text.startswith(piece) else -1)
    out: list[tuple[Variant, list[int]]] = []
    for variant in found:
        full = text[:lead] + variant.text + trail
        change = 0
        while change < min(len(text), len(full)) and text[change] == full[change]:
            change += 1
        same = 0  # characters both end with, not reaching into the shared start
        while (
            same < min(len(text), len(full)) - change
            and text[len(text) - 1 - same] == full[len(full) - 1 - same]
        ):
            same += 1
        g = max((k for k, e in enumerate(ends) if 0 <= e <= change), default=0)
        after = len(text) - same  # the claim's text from here on is the variant's too
        h = min(
            (k for k in range(g, len(ids) + 1) if ends[k] >= after and _suffix(decode, ids, k, text)),
            default=len(ids),
        )
        tail = len(text) - ends[h] if h < len(ids) else 0
        middle = full[ends[g] : len(full) - tail]
        tokens = list(ids[:g]) + (encode(middle) if middle else []) + list(ids[h:])
        if tokens and tokens != list(ids):
            out.append((variant, tokens))
    return out


def _suffix(decode: Callable[[Sequence[int]], str], ids: Sequence[int], k: int, text: str) -> bool:
    """The claim's tokens from ``k`` on decode to the end of its text (a clean token boundary)."""
    return k == len(ids) or text.endswith(decode(ids[k:]))


def _prefix_costs(ids: Sequence[int], aligned: Sequence[tuple[Variant, list[int]]]) -> list[int]:
    """The cost of scoring the first 1, 2, ... of ``aligned``'s variants over the claim ``ids``
    (``row_cost`` is a sum over variants, so the costs accumulate)."""
    return list(itertools.accumulate(row_cost(ids, [v], _LOOKAHEAD) for _, v in aligned))
