"""OpenTelemetry: off by default; a traced /v1/reason request has its GenAI span and stage spans."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from app.tracing import STAGES, Tracing
from inference.loader import LoadedModel

PROMPT = "Name one colour of the sky. Your entire response must be in lowercase letters."


def test_off_by_default(settings: Settings) -> None:
    tracing = Tracing(settings)
    assert not tracing.enabled and tracing.provider is None
    configured = Tracing(dataclasses.replace(settings, otlp_endpoint="http://127.0.0.1:4318/v1/traces"))
    assert configured.enabled
    configured.shutdown()


async def test_request_span_without_a_run(settings: Settings) -> None:
    exporter = InMemorySpanExporter()
    app = create_app(settings, tracing=Tracing(settings, exporter=exporter))
    async with AsyncTestClient(app=app) as client:
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/v1/runs")).status_code == 401
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["GET /healthz", "GET /v1/runs"]
    health, denied = spans
    assert health.kind == SpanKind.SERVER and health.parent is None
    assert health.attributes["http.route"] == "/healthz"
    assert health.attributes["http.response.status_code"] == 200
    assert denied.attributes["http.response.status_code"] == 401


async def _traced_reason(settings: Settings, model: LoadedModel, prompt: str) -> tuple[dict[str, Any], list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    runtime = Runtime(settings)
    runtime.set_model(model)
    app = create_app(settings, runtime=runtime, tracing=Tracing(settings, exporter=exporter))
    async with AsyncTestClient(app=app) as client:
        headers = {"Authorization": f"Bearer {await bootstrap_admin_key(runtime.sessionmaker, None)}"}
        response = await client.post(
            "/v1/reason", json={"prompt": prompt, "options": {"max_new_tokens": 8, "num_beams": 1}}, headers=headers
        )
        assert response.status_code == 200, response.text
    return response.json(), list(exporter.get_finished_spans())


@pytest.fixture
async def cpu_settings(settings: Settings) -> AsyncIterator[Settings]:
    yield dataclasses.replace(settings, device="cpu")


@pytest.mark.model
async def test_reason_request_has_genai_and_stage_spans(cpu_settings: Settings, loaded_model: LoadedModel) -> None:
    body, spans = await _traced_reason(cpu_settings, loaded_model, PROMPT)
    by_name = {s.name: s for s in spans}
    request = by_name["POST /v1/reason"]
    assert request.kind == SpanKind.SERVER and request.attributes["http.response.status_code"] == 200
    model = body["model"]["name"]
    run = by_name[f"chat {model}"]
    assert run.parent is not None and run.parent.span_id == request.context.span_id
    attrs = run.attributes
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == model
    assert attrs["gen_ai.request.max_tokens"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == body["usage"]["prompt_tokens"] > 0
    assert attrs["gen_ai.usage.output_tokens"] == body["usage"]["completion_tokens"] > 0
    assert tuple(attrs["gen_ai.response.finish_reasons"]) == ("stop",)
    assert attrs["gen_ai.response.id"] == body["run_id"]
    stages = [s for s in spans if s.name.startswith("tenet.")]
    assert [s.name for s in stages] == [f"tenet.{stage}" for stage in STAGES]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in stages)
    assert all(s.context.trace_id == request.context.trace_id for s in stages)
    for stage in stages:
        measured_ms = body["timings"][stage.attributes["tenet.stage"]]
        assert stage.end_time - stage.start_time == pytest.approx(measured_ms * 1e6, abs=1e3)
    assert all(a.end_time <= b.start_time for a, b in itertools.pairwise(stages))
    everything = " ".join(str(v) for s in spans for v in (s.attributes or {}).values())
    assert "gen_ai.input.messages" not in attrs and "gen_ai.output.messages" not in attrs
    assert "colour of the sky" not in everything
    assert body["answer"].strip() and body["answer"].strip() not in everything


@pytest.mark.model
async def test_content_is_recorded_only_when_enabled(cpu_settings: Settings, loaded_model: LoadedModel) -> None:
    body, spans = await _traced_reason(dataclasses.replace(cpu_settings, trace_content=True), loaded_model, PROMPT)
    run = next(s for s in spans if s.name.startswith("chat "))
    assert "colour of the sky" in run.attributes["gen_ai.input.messages"]
    assert body["answer"] in run.attributes["gen_ai.output.messages"]
