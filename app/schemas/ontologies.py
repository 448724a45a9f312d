"""Schemas of ``/v1/ontologies``: one uploaded version, lists and reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

__all__ = ["OntologyList", "OntologyReportOut", "OntologyVersionOut"]


class OntologyVersionOut(msgspec.Struct, frozen=True, kw_only=True):
    """One immutable ontology version.

    ``current`` tells whether it is the version in service for its domain
    (the newest one not deleted). ``views`` are the views it declares;
    ``report`` is the validation report made at upload.
    """

    id: str
    domain: str
    content_hash: str
    media_type: str
    filename: str | None
    size_bytes: int
    triples_asserted: int
    triples_materialised: int
    views: list[dict[str, Any]]
    report: dict[str, Any]
    created_at: datetime
    deleted_at: datetime | None
    current: bool


class OntologyList(msgspec.Struct, frozen=True, kw_only=True):
    data: list[OntologyVersionOut]


class OntologyReportOut(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    domain: str
    content_hash: str
    report: dict[str, Any]
