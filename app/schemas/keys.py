"""API key management schemas. The secret appears only in :class:`KeyCreated`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

__all__ = ["Key", "KeyCreate", "KeyCreated", "KeyList"]


class KeyCreate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scopes: Annotated[list[str], msgspec.Meta(min_length=1, max_length=5)]
    tenant: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    name: Annotated[str, msgspec.Meta(max_length=200)] = ""


class Key(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    tenant_id: str
    tenant: str
    name: str
    prefix: str
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class KeyCreated(Key, frozen=True, kw_only=True):
    key: str


class KeyList(msgspec.Struct, frozen=True, kw_only=True):
    data: list[Key]
    next_cursor: str | None = None
    """Pass as ``cursor`` for the next page; None on the last page."""
