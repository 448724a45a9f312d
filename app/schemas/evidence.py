"""Schemas of ``POST /v1/evidence/query``."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

import msgspec

from reasoning.evidence.model import EvidenceSubgraph, LinkedEntity

__all__ = ["EvidenceFormat", "EvidenceQuery", "EvidenceResponse"]

EvidenceFormat = Literal["json", "turtle"]


class EvidenceQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Link ``text`` to the domain's ontology and expand evidence subgraphs.

    ``hops`` (default 2) and ``token_budget`` (per view, default 512) bound
    the expansion; ``views`` restricts it to named views (default: all the
    ontology declares). ``today`` is the reference date for staleness hints
    (default: the current UTC date); ``lang`` the language of fact texts
    (default: Chinese when the text is mostly Chinese, else English).
    """

    text: Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    hops: Annotated[int, msgspec.Meta(ge=1, le=4)] = 2
    views: Annotated[list[str], msgspec.Meta(min_length=1, max_length=32)] | None = None
    token_budget: Annotated[int, msgspec.Meta(ge=8, le=16_384)] = 512
    format: EvidenceFormat = "json"
    lang: Literal["en", "zh"] | None = None
    today: date | None = None
    stale_after_days: Annotated[int, msgspec.Meta(ge=1, le=36_500)] = 365


class EvidenceResponse(msgspec.Struct, frozen=True, kw_only=True):
    """Linked entities and the ranked subgraph of each view (or their Turtle)."""

    domain: str
    ontology_version: str
    format: EvidenceFormat
    linked: list[LinkedEntity]
    subgraphs: list[EvidenceSubgraph]
    turtle: str | None = None
    timings: dict[str, float] = msgspec.field(default_factory=dict)
