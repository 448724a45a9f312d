"""Schemas of ``POST /v1/constraints``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from reasoning.budget import Budget
from reasoning.constraints.model import Constraint, Hardness, Kind, Premise, Span
from reasoning.entropy import Entropy
from reasoning.evidence.model import LinkedEntity

__all__ = [
    "ConflictOut",
    "ConstraintsRequest",
    "ConstraintsResponse",
    "EntropyOut",
    "GraphFormat",
    "Profile",
    "ProfileDefault",
]

GraphFormat = Literal["json", "turtle", "jsonld"]


class ProfileDefault(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A profile default: applies unless the user's own instructions say otherwise."""

    kind: Kind
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    hardness: Hardness = Hardness.HARD


class Profile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    defaults: Annotated[list[ProfileDefault], msgspec.Meta(max_length=64)] = msgspec.field(
        default_factory=list
    )


class ConstraintsRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    prompt: str
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    profile: Profile | None = None
    graph_format: GraphFormat = "json"


class ConflictOut(msgspec.Struct, frozen=True, kw_only=True):
    a: str
    b: str
    reason: str
    spans: list[Span | None]


class EntropyOut(msgspec.Struct, frozen=True, kw_only=True):
    score: float
    breakdown: dict[str, float]
    features: dict[str, float]

    @classmethod
    def of(cls, entropy: Entropy) -> EntropyOut:
        return cls(score=entropy.score, breakdown=entropy.breakdown, features=entropy.features)


class ConstraintsResponse(msgspec.Struct, frozen=True, kw_only=True):
    """``graph`` is a node-link object for ``json``, else a Turtle or JSON-LD string.

    ``linked`` / ``unlinked_terms`` are filled when the request names a domain.
    """

    status: Literal["ok", "needs_confirmation"]
    language: str
    constraints: list[Constraint]
    premises: list[Premise]
    graph: dict[str, Any] | str
    graph_format: GraphFormat
    conflicts: list[ConflictOut]
    inactive: list[str]
    entropy: EntropyOut
    budget: Budget
    timings: dict[str, float]
    cached: bool
    linked: list[LinkedEntity]
    unlinked_terms: int
