from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from inference.decoder.packed_llama import packed_forward
from inference.decoder.runner import ModelRunner

Client = AsyncTestClient[Litestar]
Problem = Callable[[Any, int], dict[str, Any]]


async def test_liveness_answers_without_a_model(client: Client) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


async def test_not_ready_without_a_model(client: Client, assert_problem: Problem) -> None:
    body = assert_problem(await client.get("/readyz"), 503)
    assert body["model"] == {"state": "disabled"}
    assert body["database"] == "ok"
    assert "model" in body["detail"]


async def test_not_ready_when_the_database_is_unreachable(
    tmp_path: Any, assert_problem: Problem
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite+aiosqlite:///{tmp_path}/no/such/dir/x.db",
        load_model=False,
    )
    async with AsyncTestClient(app=create_app(settings)) as client:
        body = assert_problem(await client.get("/readyz"), 503)
    assert body["database"].startswith("unreachable")
    assert "database" in body["detail"]


async def test_models_is_503_while_no_model(
    client: Client, admin_headers: dict[str, str], assert_problem: Problem
) -> None:
    body = assert_problem(await client.get("/v1/models", headers=admin_headers), 503)
    assert "TENET_LOAD_MODEL" in body["detail"]


@pytest.mark.model
async def test_ready_after_the_model_loads_in_the_background(
    settings: Settings, assert_problem: Problem
) -> None:
    # float32 by name: the background load is under test, not the weights probe (tested in
    # tests/inference/weights), which would build and time every format on a fresh cache.
    app = create_app(replace(settings, load_model=True, device="cpu", weights="float32"))
    async with AsyncTestClient(app=app) as client:
        assert (await client.get("/healthz")).status_code == 200
        first = await client.get("/readyz")
        if first.status_code == 503:
            assert first.json()["model"]["state"] in ("loading", "not_started")
        deadline = time.monotonic() + 300
        while (response := await client.get("/readyz")).status_code != 200:
            assert time.monotonic() < deadline, response.text
            await asyncio.sleep(0.2)
    body = response.json()
    assert body["ready"] is True and body["model"]["state"] == "loaded"
    assert body["model"]["name"] == "SmolLM2-135M-Instruct"


@pytest.mark.model
async def test_a_model_that_fails_to_load_is_reported(
    settings: Settings, tmp_path: Any, assert_problem: Problem
) -> None:
    app = create_app(replace(settings, load_model=True, model=str(tmp_path / "absent.gguf")))
    async with AsyncTestClient(app=app) as client:
        deadline = time.monotonic() + 120
        while (body := (await client.get("/readyz")).json())["model"]["state"] != "failed":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
    assert "absent.gguf" in body["model"]["error"]


@pytest.mark.model
async def test_models_lists_the_loaded_identity(
    model_client: Client, model_admin_headers: dict[str, str], loaded_model: Any
) -> None:
    response = await model_client.get("/v1/models", headers=model_admin_headers)
    assert response.status_code == 200, response.text
    (model,) = response.json()["data"]
    identity = loaded_model.identity
    assert model["id"] == identity.name == "SmolLM2-135M-Instruct"
    assert model["sha256"] == identity.sha256 and len(model["sha256"]) == 64
    assert (model["dtype"], model["device"]) == ("float32", "cpu")
    assert model["parameters"] == identity.parameters
    # A float32 Llama model on the CPU decodes through the packed forward.
    assert model["forward"] == ("packed" if identity.device == "cpu" else "library")
    # The session's model is loaded in float32 by name: no probe behind it.
    assert (model["weights"], model["weights_requested"]) == ("float32", "float32")
    assert model["weights_probe"] == [] and "TENET_WEIGHTS" in model["weights_reason"]
    assert model["prompt_format"] == "chat_template"  # an instruction model keeps its template
    assert (await model_client.get("/readyz")).status_code == 200


@pytest.mark.model
async def test_the_packed_forward_can_be_switched_off(settings: Settings) -> None:
    runtime = Runtime(replace(settings, packed_forward=False, load_model=True, weights="float32"))
    try:
        loaded = runtime.load_model_now()
        assert packed_forward(loaded.model) is None
        assert ModelRunner(loaded.model).packed is None
    finally:
        await runtime.close()


async def test_metrics_expose_request_latency_by_route(
    client: Client, admin_headers: dict[str, str]
) -> None:
    await client.get("/v1/keys", headers=admin_headers)
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'tenet_http_request_seconds_count{method="GET",route="/v1/keys",status="200"}' in text
    assert "tenet_model_loaded 0.0" in text
    assert "tenet_stage_seconds" in text
    assert admin_headers["Authorization"].split("_")[1] not in text


async def test_probes_answer_head(client: Client) -> None:
    live = await client.head("/healthz")
    assert live.status_code == 200 and live.content == b""
    assert (await client.head("/readyz")).status_code == 503  # no model in these settings


async def test_metrics_name_their_charset_once(client: Client) -> None:
    content_type = (await client.get("/metrics")).headers["content-type"]
    assert content_type.startswith("text/plain; version=")
    assert content_type.count("charset") == 1
