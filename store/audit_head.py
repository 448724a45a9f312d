"""Signed audit heads: a checkpoint of a tenant's chain the operator keeps outside the database.

The hash chain (``store.audit``) detects altered, reordered and missing
events, except the newest ones: deleting the tail of a chain leaves a shorter
chain that still verifies. A *signed head* closes that gap. It names a
tenant, a chain position and the hash of the event there, and carries an
HMAC-SHA256 over those three under a key the database does not hold
(:func:`head_key`: a random 32-byte file in the data directory, mode 0600,
made on first use). Whoever keeps a head (every audit export and every
verification hands one out) can later ask whether the chain still holds it
(``store.audit.head_status``): a deleted tail answers ``missing``.

What it guarantees: a head that verifies was issued by a service holding the
key, for that tenant and position. It does not protect against someone who
holds the key file and the database together. Replicas that should accept
each other's heads must share the key file.

Token format: ``v1.<base64url(JSON {"t": tenant_id, "s": chain_seq, "h": hash})>.<hex HMAC>``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from reasoning.errors import InvalidInput

__all__ = ["HEAD_KEY_FILE", "SignedHead", "head_key", "read_head", "sign_head"]

HEAD_KEY_FILE: Final = "audit-head.key"
_VERSION: Final = "v1"


@dataclass(frozen=True)
class SignedHead:
    """A verified head: whose chain, which position, which hash there, and its token."""

    tenant_id: str
    chain_seq: int
    hash: str
    token: str


@functools.cache
def _key_at(path: Path) -> bytes:
    try:
        return bytes.fromhex(path.read_text("ascii").strip())
    except FileNotFoundError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return bytes.fromhex(path.read_text("ascii").strip())
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex())
    return key


def head_key(data_dir: Path) -> bytes:
    """The signing key in ``data_dir`` (created, mode 0600, on first use; read once per process)."""
    return _key_at(Path(data_dir).resolve() / HEAD_KEY_FILE)


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, f"{_VERSION}.{body}".encode("ascii"), hashlib.sha256).hexdigest()


def sign_head(key: bytes, tenant_id: str, chain_seq: int, head_hash: str) -> SignedHead:
    """The signed head of ``tenant_id``'s chain at ``chain_seq`` (whose event hash is ``head_hash``)."""
    payload = json.dumps({"t": tenant_id, "s": chain_seq, "h": head_hash}, separators=(",", ":"))
    body = base64.urlsafe_b64encode(payload.encode("utf-8")).decode("ascii").rstrip("=")
    return SignedHead(tenant_id, chain_seq, head_hash, f"{_VERSION}.{body}.{_mac(key, body)}")


def read_head(key: bytes, token: str) -> SignedHead:
    """The head ``token`` names; InvalidInput when it is malformed or its signature does not verify."""
    version, _, rest = token.strip().partition(".")
    body, _, mac = rest.partition(".")
    if version != _VERSION or not body or not mac:
        raise InvalidInput("the signed head is not a token this service issued", field="head")
    if not hmac.compare_digest(mac, _mac(key, body)):
        raise InvalidInput("the signed head's signature does not verify (altered, or signed "
                           "with another key)", field="head")
    try:
        fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        head = SignedHead(str(fields["t"]), int(fields["s"]), str(fields["h"]), token.strip())
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise InvalidInput("the signed head is not a token this service issued",
                           field="head") from None
    return head
