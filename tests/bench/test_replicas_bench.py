"""bench.replicas --quick on the local PostgreSQL and Redis: its JSON report and what it promises."""

from __future__ import annotations

import asyncio
import socket

import pytest

from bench.replicas import DEFAULT_REDIS, main_async
from tests.conftest import POSTGRES_URL, postgres_available

pytestmark = pytest.mark.postgres


def test_quick_report() -> None:
    if not postgres_available():
        pytest.skip(f"PostgreSQL does not answer at {POSTGRES_URL}")
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError:
        pytest.skip("no Redis answers at 127.0.0.1:6379")
    report = asyncio.run(main_async(POSTGRES_URL, DEFAULT_REDIS, quick=True))
    assert set(report) == {"revocation_ms", "limit_check_ms", "audit_append"}
    assert 0 < report["revocation_ms"]["p50"] <= report["revocation_ms"]["max"] < 1000
    assert report["limit_check_ms"]["memory"] > 0 and report["limit_check_ms"]["redis"] > 0
    assert report["audit_append"]["chain_intact"] is True
    assert report["audit_append"]["events"] == 40  # 8 writers x 5 appends, none lost
