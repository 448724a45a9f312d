"""Replicas migrating one PostgreSQL database at the same moment: the revisions apply once.

Without the advisory lock around Alembic, two upgrades of an empty database race to create
the same tables and one fails (a duplicate-key error on ``pg_type``); with it the second
waits, finds the database at head and applies nothing.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import migrations

pytestmark = pytest.mark.postgres


def test_concurrent_upgrades_of_an_empty_database_both_succeed(postgres_url: str) -> None:
    ready = threading.Barrier(3)

    def upgrade() -> None:
        ready.wait()
        migrations.upgrade(postgres_url)

    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = [pool.submit(upgrade) for _ in range(3)]
        for run in runs:
            run.result(timeout=120)  # re-raises a failed upgrade
    assert migrations.current_revision(postgres_url) == migrations.head_revision()
