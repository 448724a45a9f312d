"""The relational schema: every table of the product, in one declarative base.

All primary keys are string UUIDs (except ``audit_events.seq``, whose
monotonic order the hash chain relies on); every row carries its
``tenant_id`` so each query can filter by tenant; timestamps are
timezone-aware UTC. Feature repositories (``store/<feature>.py``) query these
classes; the first Alembic revision creates exactly this schema.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

__all__ = [
    "CONFIRMATION_KINDS",
    "CONFIRMATION_STATUSES",
    "PREMISE_STATUSES",
    "RUN_KINDS",
    "RUN_STATUSES",
    "ApiKey",
    "AuditEvent",
    "Base",
    "Confirmation",
    "OntologyVersion",
    "Premise",
    "ProvenanceBundle",
    "Run",
    "RunStep",
    "Session",
    "Tenant",
    "UTCDateTime",
    "new_id",
    "utcnow",
]

RUN_KINDS = ("reason", "constraints", "reinference", "ontology_upload", "chat")
RUN_STATUSES = ("ok", "needs_confirmation", "failed")
PREMISE_STATUSES = ("active", "retracted", "amended")
CONFIRMATION_KINDS = ("constraint_conflict", "premise_ambiguity")
CONFIRMATION_STATUSES = ("pending", "resolving", "resolved")

# Stable constraint names, so migrations generated on SQLite and PostgreSQL agree.
_NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def new_id() -> str:
    """A new random UUID as a 36-character string."""
    return str(uuid.uuid4())


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python.

    PostgreSQL stores ``timestamptz``; SQLite has no time zones and returns
    naive values, which this type marks as UTC on the way out. Naive values
    on the way in are refused: they are a bug at the caller.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; use store.models.utcnow()")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=_NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON,
        list[Any]: JSON,
    }


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiKey(Base):
    """An API key. Only the SHA-256 of its secret is stored.

    The secret is 32 random bytes, so it cannot be guessed or brute-forced
    from its hash; a slow password hash (bcrypt, argon2) buys nothing here
    and would cost milliseconds on every request.
    """

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    secret_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)

    tenant: Mapped[Tenant] = relationship(lazy="raise")


class OntologyVersion(Base):
    """One immutable uploaded version of a tenant's domain ontology."""

    __tablename__ = "ontology_versions"
    __table_args__ = (UniqueConstraint("tenant_id", "domain", "content_hash"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    domain: Mapped[str] = mapped_column(String(200))
    content_hash: Mapped[str] = mapped_column(String(64))
    media_type: Mapped[str] = mapped_column(String(100))
    filename: Mapped[str | None] = mapped_column(String(500), default=None)
    size_bytes: Mapped[int] = mapped_column(Integer)
    triples_asserted: Mapped[int] = mapped_column(Integer, default=0)
    triples_materialised: Mapped[int] = mapped_column(Integer, default=0)
    report: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    views: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    materialised: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(default=None)


class Session(Base):
    """A multi-turn reasoning session and its reasoning DAG."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    domain: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_active_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(default=None)
    dag: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Run(Base):
    """One request the service answered (or failed to), with its result."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_tenant_id_created_at", "tenant_id", "created_at"),
        CheckConstraint(_in("kind", RUN_KINDS), name="kind"),
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    key_id: Mapped[str | None] = mapped_column(
        ForeignKey("api_keys.id", ondelete="SET NULL"), default=None
    )
    session_id: Mapped[str | None] = mapped_column(
        ForeignKey("sessions.id", ondelete="SET NULL"), default=None, index=True
    )
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(32))
    prompt: Mapped[str] = mapped_column(Text, default="")
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    model: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    duration_ms: Mapped[float | None] = mapped_column(Float, default=None)

    steps: Mapped[list[RunStep]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="RunStep.idx",
        lazy="raise",
    )


class RunStep(Base):
    """One step of a run's reasoning path, in one evidence branch."""

    __tablename__ = "run_steps"
    __table_args__ = (UniqueConstraint("run_id", "branch", "idx"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    branch: Mapped[str] = mapped_column(String(200), default="")
    text: Mapped[str] = mapped_column(Text, default="")
    confidence: Mapped[float] = mapped_column(Float, default=0.0)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    run: Mapped[Run] = relationship(back_populates="steps", lazy="raise")


class Premise(Base):
    """A user's stated assumption, a node of the session's reasoning DAG."""

    __tablename__ = "premises"
    __table_args__ = (CheckConstraint(_in("status", PREMISE_STATUSES), name="status"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL"), default=None
    )
    text: Mapped[str] = mapped_column(Text)
    topic: Mapped[str] = mapped_column(String(200), default="")
    value: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[str] = mapped_column(String(32), default="active")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class AuditEvent(Base):
    """One append-only, hash-chained audit event (chain logic: ``store/audit.py``).

    ``seq`` gives the total order of the chain; ``prev_hash`` is the ``hash`` of
    the event with the next-lower ``seq`` (of the same chain, as the audit
    module defines it).
    """

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_tenant_id_created_at", "tenant_id", "created_at"),
        UniqueConstraint("tenant_id", "chain_seq"),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(36), unique=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(36))
    # Position in the tenant's chain (1, 2, ...); unique per tenant, so two racing
    # appends can never both extend the same head (see store/audit.py).
    chain_seq: Mapped[int] = mapped_column(Integer)
    event_type: Mapped[str] = mapped_column(String(100))
    subject_type: Mapped[str] = mapped_column(String(100))
    subject_id: Mapped[str] = mapped_column(String(200))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class ProvenanceBundle(Base):
    """The PROV document of one run, serialised as PROV-JSON."""

    __tablename__ = "provenance_bundles"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(36), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    prov_json: Mapped[str] = mapped_column(Text)


class Confirmation(Base):
    """A run left in ``needs_confirmation``, waiting for a person to choose what stands.

    ``request`` is what re-running needs (prompt, domain, profile, options, or
    the session turn); ``choices`` are the candidates with their source spans.
    ``run_id`` and ``session_id`` are plain references, not foreign keys: the
    confirmation outlives a deleted run or session as an audit fact.
    """

    __tablename__ = "confirmations"
    __table_args__ = (
        Index("ix_confirmations_tenant_id_status_created_at", "tenant_id", "status", "created_at"),
        CheckConstraint(_in("kind", CONFIRMATION_KINDS), name="kind"),
        CheckConstraint(_in("status", CONFIRMATION_STATUSES), name="status"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(32), default="pending")
    origin: Mapped[str] = mapped_column(String(32))
    run_id: Mapped[str | None] = mapped_column(String(36), default=None)
    session_id: Mapped[str | None] = mapped_column(String(36), default=None)
    prompt: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[str] = mapped_column(Text, default="")
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    choices: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(default=None)
    resolved_by_key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    chosen: Mapped[str | None] = mapped_column(String(200), default=None)
    resolution_run_id: Mapped[str | None] = mapped_column(String(36), default=None)
