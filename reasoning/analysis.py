"""Stages 1-3 of the pipeline as one call: parse + extract, graph, entropy and budget.

``POST /v1/constraints`` returns an :class:`Analysis` as is; ``POST /v1/reason``
runs the same function before it spends a generation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from enum import StrEnum

import msgspec

from reasoning.budget import DEFAULT_LIMITS, Budget, BudgetLimits, budget_for
from reasoning.constraints.extraction import extract
from reasoning.constraints.model import Constraint, Premise, Span
from reasoning.entropy import Entropy, cognitive_entropy
from reasoning.graph import ConstraintGraph, DomainHook, build_graph
from reasoning.graph.facets import facets_of

__all__ = ["Status", "Analysis", "analyse", "required_tokens"]

#: Tokens per word and per sentence the bundled tokenizer needs on average
#: (English prose); used only to keep a budget from cutting a length
#: requirement short.
TOKENS_PER_WORD = 1.5
TOKENS_PER_SENTENCE = 20
_HEADROOM = 32


class Status(StrEnum):
    OK = "ok"
    NEEDS_CONFIRMATION = "needs_confirmation"


class Analysis(msgspec.Struct, frozen=True, kw_only=True):
    """Everything stages 1-3 know about a prompt.

    ``status`` is ``needs_confirmation`` exactly when ``graph.conflicts`` is
    non-empty. ``timings`` holds wall milliseconds of ``parse``, ``extract``
    and ``graph`` (graph includes entropy and budget).
    """

    status: Status
    language: str
    constraints: tuple[Constraint, ...]
    premises: tuple[Premise, ...]
    sentences: tuple[Span, ...]
    graph: ConstraintGraph
    entropy: Entropy
    budget: Budget
    timings: dict[str, float]


def required_tokens(constraints: Sequence[Constraint]) -> int:
    """New tokens the active length constraints need at least (0 when none)."""
    need = 0.0
    for c in constraints:
        bounds = facets_of(c).bounds
        if ("words",) in bounds:
            need = max(need, bounds[("words",)].lo * TOKENS_PER_WORD)
        if ("sentences",) in bounds:
            need = max(need, bounds[("sentences",)].lo * TOKENS_PER_SENTENCE)
    return math.ceil(need) + _HEADROOM if need > 0 else 0


def analyse(
    prompt: str,
    *,
    defaults: Sequence[Constraint] = (),
    domain_hook: DomainHook | None = None,
    unlinked_terms: int = 0,
    limits: BudgetLimits = DEFAULT_LIMITS,
) -> Analysis:
    """Extract, build the graph, score entropy and set the budget.

    Args:
        prompt: the user's prompt (extraction enforces its own size cap).
        defaults: profile defaults (``origin=profile``), see ``extract``.
        domain_hook: contributes ontology edges for the extracted constraints.
        unlinked_terms: domain terms entity linking could not resolve.
        limits: the range the budget moves in.

    Raises:
        InvalidInput / LimitExceeded: from extraction (empty or oversized prompt)
            or from a domain edge naming an unknown constraint.
    """
    t0 = time.perf_counter()
    result = extract(prompt, defaults=defaults)
    t1 = time.perf_counter()
    extra = tuple(domain_hook(result.constraints)) if domain_hook is not None else ()
    graph = build_graph(result.constraints, prompt=prompt, extra_edges=extra)
    entropy = cognitive_entropy(result, graph, unlinked_terms=unlinked_terms)
    budget = budget_for(entropy.score, limits, required_tokens=required_tokens(graph.active()))
    t2 = time.perf_counter()
    parse_ms = float(result.features.get("parse_ms", 0.0))
    extract_ms = (t1 - t0) * 1000
    return Analysis(
        status=Status.NEEDS_CONFIRMATION if graph.conflicts else Status.OK,
        language=result.language,
        constraints=result.constraints,
        premises=result.premises,
        sentences=result.sentences,
        graph=graph,
        entropy=entropy,
        budget=budget,
        timings={
            "parse": round(parse_ms, 3),
            "extract": round(max(extract_ms - parse_ms, 0.0), 3),
            "graph": round((t2 - t1) * 1000, 3),
        },
    )
