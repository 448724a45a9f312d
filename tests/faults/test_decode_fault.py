"""The model failing mid-decode: a clear 503 problem, readiness true, nothing half-written.

The fault is real: the bundled model, loaded from the shared cache, runs as a test-only
subclass of its own class whose forward raises at its third single-token step (after the
prefill and two generated tokens), once; or, while ``broken``, on every forward (readiness
must then turn false, and true again once a forward succeeds). Everything around it (runner, micro-batcher,
scheduler, run service, store, HTTP) is the real service.
"""

from __future__ import annotations

import functools
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar

from app.factory import create_app
from app.runtime import UNREADY_AFTER_FORWARD_FAILURES, Runtime
from app.settings import Settings
from inference.loader import LoadedModel, load_model
from tests.conftest import MODEL_CACHE, TEST_DEVICE
from tests.inloop import serve

pytestmark = pytest.mark.model

FAIL_AT_STEP = 3
PROMPT = {"prompt": "Name one colour.", "options": {"max_new_tokens": 12, "num_beams": 1}}


class _ForwardFault(RuntimeError):
    """What the injected fault raises (a device error would look like this to the service)."""


@pytest.fixture(scope="module")
def failing_model() -> Iterator[LoadedModel]:
    """The bundled model whose forward raises once, at its FAIL_AT_STEP-th decode step.

    Loaded without the packed forward so every forward goes through the model's own
    ``forward``; the fault is armed by the test through the class attribute ``armed``.
    """
    loaded = load_model("bundled", device=TEST_DEVICE, cache_root=MODEL_CACHE, packed=False)
    base: type[Any] = type(loaded.model)

    class FailingMidDecode(base):  # type: ignore[misc]
        armed = False
        steps = 0
        broken = False  # every forward raises (a device lost for good) while set

        @functools.wraps(base.forward)  # the runner reads the forward's parameters
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            ids = kwargs.get("input_ids")
            cls = type(self)
            if cls.broken:
                raise _ForwardFault("injected: the device is gone")
            if cls.armed and ids is not None and ids.shape[1] == 1:
                cls.steps += 1
                if cls.steps == FAIL_AT_STEP:
                    cls.armed = False
                    raise _ForwardFault("injected: the device failed mid-decode")
            return super().forward(*args, **kwargs)

    loaded.model.__class__ = FailingMidDecode
    yield loaded


def _app_on(
    model: LoadedModel, tmp_path: Path, template: Path
) -> tuple[Path, Settings, Litestar]:
    """The app on a copy of the migrated SQLite database, decoding with ``model``."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(template, data_dir / "tenet.db")
    settings = Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE,
                        device=TEST_DEVICE, packed_forward=False)
    runtime = Runtime(settings)
    runtime.set_model(model)
    return data_dir, settings, create_app(settings, runtime=runtime)


def _rows(db_path: Path) -> dict[str, Any]:
    with sqlite3.connect(db_path) as db:
        runs = {row[0] for row in db.execute("SELECT id FROM runs")}
        bundles = {row[0] for row in db.execute("SELECT run_id FROM provenance_bundles")}
        recorded = {row[0] for row in db.execute(
            "SELECT subject_id FROM audit_events WHERE event_type = 'run.recorded'")}
        stepped = {row[0] for row in db.execute("SELECT DISTINCT run_id FROM run_steps")}
    return {"runs": runs, "bundles": bundles, "recorded": recorded, "stepped": stepped}


async def test_a_forward_failing_mid_decode_is_a_503_problem_and_nothing_is_half_written(
    failing_model: LoadedModel, tmp_path: Path, migrated_sqlite_template: Path
) -> None:
    data_dir, settings, app = _app_on(failing_model, tmp_path, migrated_sqlite_template)
    model_class: Any = type(failing_model.model)
    async with serve(settings, app) as served:
        client, admin = served.client, served.admin
        model_class.armed, model_class.steps = True, 0
        failed = await client.post("/v1/reason", headers=admin, json=PROMPT, timeout=300)
        assert model_class.steps == FAIL_AT_STEP and not model_class.armed  # it failed mid-way
        assert failed.status_code == 503, failed.text
        assert failed.headers["content-type"].startswith("application/problem+json")
        problem = failed.json()
        assert problem["status"] == 503 and problem["model"] == "forward failed"
        assert "retry" in problem["detail"] and "Traceback" not in failed.text
        assert "injected" not in failed.text  # the framework's message stays in the log
        assert _rows(data_dir / "tenet.db")["runs"] == set()
        ready = await client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["ready"] is True  # the model still works
        retried = await client.post("/v1/reason", headers=admin, json=PROMPT, timeout=300)
        assert retried.status_code == 200, retried.text
        run_id = retried.json()["run_id"]
        verified = (await client.get("/v1/audit/verify", headers=admin)).json()
        assert verified["intact"] is True
    rows = _rows(data_dir / "tenet.db")
    assert rows["runs"] == {run_id}  # the failed decode left no row behind
    assert rows["bundles"] == rows["recorded"] == rows["stepped"] == {run_id}


async def test_a_model_whose_every_forward_fails_is_not_ready_until_a_forward_succeeds(
    failing_model: LoadedModel, tmp_path: Path, migrated_sqlite_template: Path
) -> None:
    data_dir, settings, app = _app_on(failing_model, tmp_path, migrated_sqlite_template)
    model_class: Any = type(failing_model.model)
    async with serve(settings, app) as served:
        client, admin = served.client, served.admin
        assert (await client.get("/readyz")).status_code == 200
        model_class.broken = True
        try:
            for attempt in range(UNREADY_AFTER_FORWARD_FAILURES):
                failed = await client.post("/v1/reason", headers=admin, json=PROMPT, timeout=300)
                assert failed.status_code == 503, failed.text
                assert failed.json()["model"] == "forward failed"
                ready = await client.get("/readyz")
                # Ready while failures may still be transient; not ready once they are a run.
                assert (ready.status_code == 200) == (attempt + 1 < UNREADY_AFTER_FORWARD_FAILURES)
            body = ready.json()
            assert body["ready"] is False and body["database"] == "ok"
            assert body["model"]["state"] == "failing", body
            assert "forward passes failed" in body["model"]["error"]
            assert "_ForwardFault" in body["model"]["error"] and "injected" not in ready.text
            assert (await client.head("/readyz")).status_code == 503
            still = await client.get("/readyz")  # its probe forward fails too: still not ready
            assert still.status_code == 503 and still.json()["model"]["state"] == "failing"
        finally:
            model_class.broken = False
        recovered = await client.get("/readyz")  # the probe forward succeeds: ready again
        assert recovered.status_code == 200, recovered.text
        assert recovered.json()["model"]["state"] == "loaded"
        answered = await client.post("/v1/reason", headers=admin, json=PROMPT, timeout=300)
        assert answered.status_code == 200, answered.text
    assert _rows(data_dir / "tenet.db")["runs"] == {answered.json()["run_id"]}
