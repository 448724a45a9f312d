"""Confirmations: runs left in needs_confirmation, waiting for a person's choice.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 17:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "confirmations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("key_id", sa.String(length=36), nullable=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("origin", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=True),
        sa.Column("session_id", sa.String(length=36), nullable=True),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("choices", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_by_key_id", sa.String(length=36), nullable=True),
        sa.Column("chosen", sa.String(length=200), nullable=True),
        sa.Column("resolution_run_id", sa.String(length=36), nullable=True),
        sa.CheckConstraint(
            "kind IN ('constraint_conflict', 'premise_ambiguity')",
            name=op.f("ck_confirmations_kind"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'resolving', 'resolved')",
            name=op.f("ck_confirmations_status"),
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_confirmations_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_confirmations")),
    )
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_confirmations_tenant_id_status_created_at",
            ["tenant_id", "status", "created_at"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.drop_index("ix_confirmations_tenant_id_status_created_at")
    op.drop_table("confirmations")
