"""``GET /v1/models`` reports the weight format a runtime loaded, the forward in use and why."""

from __future__ import annotations

from dataclasses import replace

import pytest
from litestar.testing import AsyncTestClient

from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from tests.conftest import bearer


@pytest.mark.model
async def test_models_reports_a_low_precision_load(settings: Settings) -> None:
    configured = replace(settings, weights="int4", load_model=False)
    runtime = Runtime(configured)
    runtime.load_model_now()
    app = create_app(configured, runtime=runtime)
    async with AsyncTestClient(app=app) as client:
        token = await bootstrap_admin_key(runtime.sessionmaker, None)
        assert token is not None
        response = await client.get("/v1/models", headers=bearer(token))
    assert response.status_code == 200, response.text
    (model,) = response.json()["data"]
    assert (model["weights"], model["weights_requested"], model["forward"]) == (
        "int4",
        "int4",
        "packed",
    )
    assert model["dtype"] == "bfloat16" and model["parameters"] > 100_000_000
    assert model["weights_probe"] == []
