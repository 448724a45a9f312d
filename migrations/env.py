"""Alembic environment: runs on the connection the runner hands in.

``migrations.upgrade``/``downgrade`` always pass a connection through
``config.attributes["connection"]``; offline (SQL script) mode renders
against the configured URL. ``render_as_batch`` lets the same revisions alter
tables on SQLite, which has no ALTER for most changes.
"""

from __future__ import annotations

from alembic import context

from store.models import Base

target_metadata = Base.metadata


def _run_offline() -> None:
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through migrations.upgrade()/downgrade() (tenet db ...)")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    _run_offline()
else:
    _run_online()
