"""``DecodeOptions``: every setting of one steered decode, defined and validated once.

The beam search (``beam.py``), the pruning judge (``pruning.py``) and the
decoder (``decode.py``) read their settings from this one object; the HTTP
request's ``options`` (``inference.pipeline.ReasonOptions``) check their
values against the same ``Limit``s, so a value the API accepts is one the
decoder accepts. A ``DecodeOptions`` that exists is valid: construction
raises ``InvalidInput`` naming the field and its range.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from reasoning.budget import Budget
from reasoning.errors import InvalidInput

__all__ = ["BEAMS", "DRAFTS", "NEW_TOKENS", "SEEDS", "DecodeOptions", "Limit"]


class Limit(msgspec.Struct, frozen=True):
    """An inclusive integer range a setting must lie in; ``shown`` spells the upper bound in messages."""

    low: int
    high: int
    shown: str = ""

    def check(self, value: int, name: str, *, field: str | None = None) -> None:
        """Raise ``InvalidInput`` (``field`` as given, else ``name``) unless ``low <= value <= high``."""
        if not self.low <= value <= self.high:
            high = self.shown or str(self.high)
            raise InvalidInput(f"{name} must be between {self.low} and {high}", field=field or name)


#: Beams per branch (1: greedy decoding).
BEAMS = Limit(1, 16)
#: New tokens of one branch's answer.
NEW_TOKENS = Limit(1, 4096)
#: Tokens prompt lookup may guess ahead in one forward (0: none; ``forced_runs.MAX_RUN`` feeds
#: at most 48 positions in one pass).
DRAFTS = Limit(0, 48)
#: ``torch.manual_seed`` values.
SEEDS = Limit(0, 2**32 - 1, "2**32 - 1")


class DecodeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How to decode: search, token limits, pruning rules and counterfactual checks.

    Search: ``width`` beams per branch; ``max_new_tokens`` / ``min_new_tokens``
    per branch's answer (EOS is masked below the minimum); finished hypotheses
    rank by ``score / tokens ** length_penalty``; a step that breaks a pruning
    rule is re-decoded at most ``max_repairs`` times; a step is closed and
    judged after ``max_step_tokens`` tokens even without a boundary, and a
    pending step is judged every ``probe_every`` tokens.

    Pruning (DESIGN.md section 6): ``prune`` False measures and reports every
    step but never prunes (the plain comparison mode); a step is pruned when
    its mean normalised entropy exceeds ``entropy_bound``, when at least
    ``min_violations`` hard constraints are certainly violated, or when a
    counterfactual variant (at most ``max_variants`` per claim) beats the
    claim by more than ``contrast_margin`` nats per token.
    ``counterfactual_checks`` turns that scoring on; it spends at most
    ``counterfactual_flops_share`` of the decode's own FLOPs (above 1: in effect no cap).

    ``packed_forward`` False runs the model's library forward even when the
    model is packed for the lean CPU forward (``packed_llama``), for the
    benchmarks' comparisons. ``forced_runs`` False feeds a run of tokens the
    steering forces one forward per token instead of in one pass
    (``forced_runs.py``; the same tokens either way): the reference path.
    ``shared_evidence`` False renders each branch's evidence in its view's
    order, with no block of the facts every branch shows, so each branch
    prefills all its evidence itself (``inference.prompting``): the
    reference layout (the same facts, in another order).
    ``drop_finished`` True leaves the rows of branches that are done (every
    beam finished) out of the one-token decode forwards, which then feed the
    slice of rows from the first unfinished branch to the last
    (``beam.decode_step``); False feeds every row every step, as before: the
    same selects either way.
    ``reuse_parts`` True keeps the evidence a group of branches shares
    (``PromptPlan.shared``), prefilled on the request's prefix, in the
    tenant's prefix cache beside the prefix itself, so a later decode of the
    same prompt skips it as it skips the prefix (``batch.prefill_branches``);
    False prefills it every time: the same keys and values either way.
    ``draft_tokens`` is how many tokens prompt lookup may guess ahead in one
    forward where the steering leaves a choice (``drafts.py``: the answer's
    tail matched in the branch's prompt; 0: only forced text is fed ahead);
    every guess is verified by the search's own select, so the tokens are
    the same either way. It rides on the forced-run feed: ``forced_runs``
    False turns it off too. Guesses are drafted for one row only (a greedy
    decode, ``width`` 1, of one branch): a run is followed while every row
    of every branch takes its guess, in lockstep, with no fork, and over
    several rows they seldom all do (measured on the analyst's question,
    2 beams x 4 branches: 10 guessed positions fed, none taken; 1 beam x 4
    branches: 29 fed, 3 taken; width 4 on copying prompts: 0-26 % taken,
    decode no faster; one greedy row copying its prompt: 70 % taken, 35 ->
    16 forwards), so elsewhere only forced text is fed ahead. The tokens are
    the search's own up to the floating-point difference between a
    multi-token and a one-token forward (``forced_runs.py``).

    Raises:
        InvalidInput: a value out of its range (the message names the field).
    """

    width: int = 4
    max_new_tokens: int = 64
    min_new_tokens: int = 0
    seed: int = 0
    length_penalty: float = 1.0
    max_repairs: int = 3
    max_step_tokens: int = 48
    probe_every: int = 16
    prune: bool = True
    entropy_bound: float = 0.85
    min_violations: int = 2
    contrast_margin: float = 0.5
    counterfactual_checks: bool = False
    counterfactual_flops_share: float = 0.05
    max_variants: int = 3
    packed_forward: bool = True
    forced_runs: bool = True
    shared_evidence: bool = True
    draft_tokens: int = 8
    drop_finished: bool = True
    reuse_parts: bool = True

    def __post_init__(self) -> None:
        BEAMS.check(self.width, "width")
        NEW_TOKENS.check(self.max_new_tokens, "max_new_tokens")
        if not 0 <= self.min_new_tokens <= self.max_new_tokens:
            raise InvalidInput(
                "min_new_tokens must be between 0 and max_new_tokens", field="min_new_tokens"
            )
        SEEDS.check(self.seed, "seed")
        _at_least(self.max_repairs, 0, "max_repairs")
        _at_least(self.max_step_tokens, 1, "max_step_tokens")
        _at_least(self.probe_every, 1, "probe_every")
        _at_least(self.min_violations, 1, "min_violations")
        _at_least(self.max_variants, 0, "max_variants")
        DRAFTS.check(self.draft_tokens, "draft_tokens")
        _within(self.length_penalty, -math.inf, math.inf, "length_penalty")
        _within(self.entropy_bound, 0.0, 1.0, "entropy_bound")
        _within(self.contrast_margin, 0.0, math.inf, "contrast_margin")
        _within(self.counterfactual_flops_share, 0.0, math.inf, "counterfactual_flops_share")

    @classmethod
    def from_budget(cls, budget: Budget, **overrides: Any) -> DecodeOptions:
        """The options a request's budget buys (beam width, tokens, counterfactual checks).

        ``overrides`` (any other field, or a request's own value for one of
        those three) win over the budget.
        """
        values: dict[str, Any] = {
            "width": budget.beam_width,
            "max_new_tokens": budget.max_new_tokens,
            "counterfactual_checks": budget.counterfactual_checks,
        }
        values.update(overrides)
        return cls(**values)

    @property
    def repair_slack(self) -> int:
        """KV columns a branch keeps beyond ``max_new_tokens`` for re-decoded steps."""
        return self.max_repairs * self.max_step_tokens + 2


def _at_least(value: int, low: int, name: str) -> None:
    if value < low:
        raise InvalidInput(f"{name} must be at least {low}, got {value}", field=name)


def _within(value: float, low: float, high: float, name: str) -> None:
    """Finite and inside ``[low, high]`` (NaN fails every comparison, so it is refused too)."""
    if not (low <= value <= high and math.isfinite(value)):
        raise InvalidInput(f"{name} must be a finite number in [{low}, {high}], got {value}", field=name)
