"""Two API replicas on one PostgreSQL database sharing one Ray cluster of two workers.

The scale-out benchmark's own phase (``bench.scaleout.run_two_apis``), at a small
size: concurrent runs sent round robin through both APIs all answer, and the
tenant's audit chain, appended to by both, verifies from either replica.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scaleout import run_two_apis
from inference.loader import LoadedModel
from tests.conftest import postgres_available

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.model, pytest.mark.ray, pytest.mark.slow, pytest.mark.postgres]


async def test_concurrent_runs_through_two_api_replicas_keep_one_unbroken_chain(
    tmp_path: Path, loaded_model: LoadedModel
) -> None:
    if not postgres_available():
        pytest.skip("PostgreSQL does not answer")
    report, intact = await run_two_apis(tmp_path, loaded_model, requests=12, concurrency=6)
    assert report["errors"] == 0, report
    assert report["answered"] == 12, report
    assert intact, "the audit chain did not verify from both replicas"
    assert not ray.is_initialized(), "the replicas' close stops the cluster the first started"
