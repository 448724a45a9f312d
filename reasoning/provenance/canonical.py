"""Canonical JSON and SHA-256 helpers for the hash-chained audit log.

The audit chain is only verifiable if every writer and every verifier turns an
event into exactly the same bytes. The canonical form used here is:

- JSON with keys sorted at every level and no insignificant whitespace
  (separators ``","`` and ``":"``);
- UTF-8, non-ASCII characters written as themselves (not ``\\uXXXX``);
- only JSON-native values (str, int, float, bool, None, lists and str-keyed
  dicts); NaN and infinities are refused because JSON has no spelling for them;
- timestamps as ISO 8601 in UTC with microseconds (``iso_utc``).

``normalise_json`` returns the value exactly as it will read back from a JSON
column, so what is stored is what was hashed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from reasoning.errors import InvalidInput

__all__ = [
    "GENESIS_HASH",
    "canonical_json",
    "event_digest",
    "iso_utc",
    "normalise_json",
    "sha256_hex",
]

GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first event of a chain."""


def _check(value: Any, path: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{path}: {value!r} has no JSON spelling")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{path}: key {key!r} is not a string")
            _check(item, f"{path}.{key}")
        return
    raise InvalidInput(f"{path}: {type(value).__name__} is not a JSON value")


def canonical_json(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON-native value.

    >>> canonical_json({"b": 1, "a": ["x", None]})
    b'{"a":["x",null],"b":1}'
    """
    _check(value, "$")
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def normalise_json(value: Any) -> Any:
    """The value as it reads back from JSON (tuples become lists, keys stay)."""
    return json.loads(canonical_json(value))


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with microseconds; a naive datetime is taken as UTC.

    Databases disagree on time zones (SQLite stores naive values, PostgreSQL
    returns aware ones), so both sides of the chain normalise through here.

    >>> iso_utc(datetime(2026, 1, 2, 3, 4, 5))
    '2026-01-02T03:04:05.000000+00:00'
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def event_digest(
    *,
    event_id: str,
    tenant_id: str,
    chain_seq: int,
    event_type: str,
    subject_type: str,
    subject_id: str | None,
    payload: Any,
    created_at: datetime,
    prev_hash: str,
) -> str:
    """SHA-256 of an audit event's canonical JSON, predecessor hash included.

    Every field that gives the event its meaning is covered: changing the
    payload, the subject, the time, the tenant, the position in the chain or
    the link to the predecessor changes the digest.
    """
    document = {
        "id": event_id,
        "tenant_id": tenant_id,
        "chain_seq": chain_seq,
        "event_type": event_type,
        "subject_type": subject_type,
        "subject_id": subject_id,
        "payload": payload,
        "created_at": iso_utc(created_at),
        "prev_hash": prev_hash,
    }
    return sha256_hex(canonical_json(document))
