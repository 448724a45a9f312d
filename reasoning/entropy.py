"""Cognitive entropy: how demanding a request is, as a score in [0, 1] with its breakdown.

The score is a weighted sum of seven features, each first mapped to [0, 1]:

==========================  =============================================
feature                     raw value
==========================  =============================================
``length``                  tokens in the prompt
``entity_density``          named entities per token
``conditionals_negations``  conditional clauses + negations
``constraints``             constraints in the graph
``soft_constraints``        soft constraints (trade-offs to weigh)
``conflicts``               unresolved conflicts
``unlinked_terms``          domain terms the ontology could not link
==========================  =============================================

Normalisation. A feature that varies over IFEval's 541 prompts is mapped
through its empirical distribution there (the share of prompts with a lower
value, piecewise linear between stored quantiles, reaching 1 at twice the
largest value seen), so 0.5 means "more demanding than half of IFEval on
this feature". Features IFEval barely exercises (soft constraints,
conflicts, unlinked domain terms) saturate as ``x / (x + half)``.

Weights are non-negative and sum to 1, hence the score lies in [0, 1] and is
monotone non-decreasing in every feature; ``breakdown[f] = weight[f] *
normalised[f]`` and the breakdown sums to the score. The normalisers and
weights are *fitted* by ``python -m bench.entropy_fit`` (``docs/entropy.md``
explains the fit and its figures) and stored in ``entropy_model.json`` next
to this module; nothing here is hand-tuned.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import msgspec

from reasoning.constraints.model import Hardness
from reasoning.errors import InvalidInput

__all__ = [
    "FEATURES",
    "MODEL_PATH",
    "Entropy",
    "EntropyModel",
    "Normaliser",
    "Signals",
    "cognitive_entropy",
    "load_model",
    "score_signals",
    "signals_from",
]

FEATURES: tuple[str, ...] = (
    "length",
    "entity_density",
    "conditionals_negations",
    "constraints",
    "soft_constraints",
    "conflicts",
    "unlinked_terms",
)

MODEL_PATH = Path(__file__).with_name("entropy_model.json")


class Signals(msgspec.Struct, frozen=True, kw_only=True):
    """The raw counts entropy is computed from."""

    tokens: int
    entities: int = 0
    conditionals: int = 0
    negations: int = 0
    constraints: int = 0
    soft_constraints: int = 0
    conflicts: int = 0
    unlinked_terms: int = 0

    def raw(self) -> dict[str, float]:
        """The raw value of every feature of :data:`FEATURES`."""
        return {
            "length": float(self.tokens),
            "entity_density": self.entities / self.tokens if self.tokens > 0 else 0.0,
            "conditionals_negations": float(self.conditionals + self.negations),
            "constraints": float(self.constraints),
            "soft_constraints": float(self.soft_constraints),
            "conflicts": float(self.conflicts),
            "unlinked_terms": float(self.unlinked_terms),
        }


class Entropy(msgspec.Struct, frozen=True, kw_only=True):
    """``score`` in [0, 1]; ``breakdown`` per feature sums to ``score``; ``features`` are raw values."""

    score: float
    breakdown: dict[str, float]
    features: dict[str, float]


class Normaliser(msgspec.Struct, frozen=True, kw_only=True):
    """Maps a raw value to [0, 1], monotone non-decreasing.

    With ``points`` (sorted ``[x, F(x)]`` pairs of an empirical CDF): linear
    interpolation, 0 below the first point's x, 1 above the last. With
    ``half`` instead: ``x / (x + half)`` for x >= 0.
    """

    points: list[tuple[float, float]] | None = None
    half: float | None = None

    def __call__(self, x: float) -> float:
        if self.points:
            xs = [p[0] for p in self.points]
            if x <= xs[0]:
                return self.points[0][1] if x == xs[0] else 0.0
            if x >= xs[-1]:
                return 1.0
            i = bisect.bisect_right(xs, x)
            (x0, y0), (x1, y1) = self.points[i - 1], self.points[i]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        half = self.half or 1.0
        return x / (x + half) if x > 0 else 0.0


class EntropyModel(msgspec.Struct, frozen=True, kw_only=True):
    """Normalisers and weights (fitted by ``bench.entropy_fit``) plus the fit's provenance."""

    weights: dict[str, float]
    normalisers: dict[str, Normaliser]
    fit: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if set(self.weights) != set(FEATURES) or set(self.normalisers) != set(FEATURES):
            raise InvalidInput(f"an entropy model needs weights and normalisers for {FEATURES}")
        if (
            any(w < 0 for w in self.weights.values())
            or abs(sum(self.weights.values()) - 1.0) > 1e-6
        ):
            raise InvalidInput("entropy weights must be non-negative and sum to 1")


@lru_cache(maxsize=1)
def load_model(path: Path = MODEL_PATH) -> EntropyModel:
    """The fitted model shipped with the package (read once)."""
    return msgspec.json.decode(path.read_bytes(), type=EntropyModel)


def score_signals(signals: Signals, model: EntropyModel | None = None) -> Entropy:
    """Entropy of raw signals under ``model`` (default: the shipped fit).

    >>> e = score_signals(Signals(tokens=40, constraints=2))
    >>> 0.0 <= e.score <= 1.0 and abs(sum(e.breakdown.values()) - e.score) < 1e-9
    True
    """
    model = model or load_model()
    raw = signals.raw()
    breakdown = {f: model.weights[f] * model.normalisers[f](raw[f]) for f in FEATURES}
    score = min(1.0, max(0.0, sum(breakdown.values())))
    return Entropy(score=score, breakdown=breakdown, features=raw)


class _Extraction(Protocol):
    @property
    def features(self) -> Mapping[str, float]: ...


class _Graph(Protocol):
    @property
    def constraints(self) -> tuple[Any, ...]: ...

    @property
    def conflicts(self) -> tuple[Any, ...]: ...


def signals_from(extraction: _Extraction, graph: _Graph, *, unlinked_terms: int = 0) -> Signals:
    """Collect the signals from an extraction result and its constraint graph.

    Reads the extraction's document statistics ``tokens``, ``entities``,
    ``conditionals`` and ``negations``; missing statistics count as 0.
    """
    feats = extraction.features

    def count(name: str) -> int:
        value = feats.get(name, 0)
        return int(value) if isinstance(value, (int, float)) and value > 0 else 0

    return Signals(
        tokens=count("tokens"),
        entities=count("entities"),
        conditionals=count("conditionals"),
        negations=count("negations"),
        constraints=len(graph.constraints),
        soft_constraints=sum(1 for c in graph.constraints if c.hardness is Hardness.SOFT),
        conflicts=len(graph.conflicts),
        unlinked_terms=max(unlinked_terms, 0),
    )


def cognitive_entropy(
    extraction: _Extraction, graph: _Graph, *, unlinked_terms: int = 0
) -> Entropy:
    """The request's cognitive entropy (see the module docstring)."""
    return score_signals(signals_from(extraction, graph, unlinked_terms=unlinked_terms))
