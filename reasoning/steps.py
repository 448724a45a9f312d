"""A reasoning step of a decoded answer: what was said, on what grounds, how sure.

Steps are produced by the steered decoder (one per sentence, list item or
line of the chosen branch) and consumed by the reasoning DAG, the HTTP layer
(``reasoning_path``, ``confidence_by_step``) and provenance. Frozen, so a step
can be cached and referenced by id.
"""

from __future__ import annotations

import msgspec

from reasoning.constraints.model import Verdict

__all__ = ["STEP_KINDS", "Step", "TokenSummary", "step_id"]

#: What a step is (``Step.kind``): the stated decision, a sentence of its grounds (both forced
#: by the steering from the rules), a claim of the model the evidence supports, or one kept
#: with what it lacks flagged (pruning off, or the last beam's repair failed).
STEP_KINDS = ("decision", "grounds", "supported", "flagged")


def step_id(view: str, k: int) -> str:
    """The id of the ``k``-th step (from 1) of the branch decoded for ``view``: ``"<view>.S<k>"``.

    The one scheme for step ids: ``steps``, ``reasoning_path``, ``violations``
    and the streamed ``step`` events all use it, so a client can join any of
    them to a step. Scoped by view, ids stay unique across the branches of a
    run, reused branches of a session re-run included. A branch without a
    view (a bare decoder call; the pipeline always names its views) gets
    ``"S<k>"``.
    """
    return f"{view}.S{k}" if view else f"S{k}"


class TokenSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Token-level figures of a step: mean log-probability, lowest window mean probability."""

    count: int
    mean_logprob: float
    min_window_prob: float


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One step of the answer.

    ``token_start``/``token_end`` index the branch's generated tokens.
    ``evidence_cited``: ids written in the text ("[E3]"); ``evidence_used``:
    facts that lexically support it. ``contrast`` is the mean per-token
    log-likelihood of the claim minus that of its most likely counterfactual
    variant given the evidence (None when not scored). ``violation`` names a
    pruning rule the step still breaks after repair failed.
    ``kind`` is one of :data:`STEP_KINDS` (``supported`` unless the step is the forced
    statement or flagged); ``support`` the evidence ids that support it (for the
    decision and its grounds: the ids they cite).
    """

    id: str
    branch: str
    text: str
    token_start: int
    token_end: int
    evidence_cited: tuple[str, ...] = ()
    evidence_used: tuple[str, ...] = ()
    premise_ids: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    tokens: TokenSummary | None = None
    entropy: float = 0.0
    contrast: float | None = None
    contrast_variant: str | None = None
    confidence: float = 0.0
    calibration_hint: str | None = None
    violation: str | None = None
    repaired: int = 0
    kind: str = "supported"
    support: tuple[str, ...] = ()
