"""Diagnostics: admin only, real counters, a real layer probe, and every metric documented."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from app.diagnostics import layers_svg
from app.metrics import REGISTRY
from app.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


async def test_every_registered_metric_and_label_is_documented(client: Any) -> None:
    assert (await client.get("/healthz")).status_code == 200  # a request series exists
    text = DOCS.read_text(encoding="utf-8")
    documented = set(re.findall(r"`(tenet_[a-z0-9_]+)`", text))
    for family in REGISTRY.collect():
        exposed = family.name + ("_total" if family.type == "counter" else "")
        assert exposed in documented, f"{exposed} is not documented in docs/metrics.md"
        section = text.split(f"`{exposed}`", 1)[1].split("\n### ", 1)[0]
        labels = {k for s in family.samples for k in s.labels if k not in ("le", "quantile")}
        for label in labels:
            assert f"`{label}`" in section, f"label {label} of {exposed} is not documented"
    assert {"tenet_queue_depth", "tenet_pruned_steps_total", "tenet_admission_refused_total"} <= documented


async def test_diagnostics_need_admin(client: Any, make_key: Any, assert_problem: Any) -> None:
    reader = await make_key("default", ["reason"])
    assert_problem(await client.get("/v1/diagnostics", headers=reader), 403)
    assert_problem(await client.get("/v1/diagnostics"), 401)


async def test_diagnostics_without_a_model_report_what_is_known(
    client: Any, admin_headers: dict[str, str], assert_problem: Any
) -> None:
    response = await client.get("/v1/diagnostics", headers=admin_headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"]["state"] == "disabled"
    assert body["kv_cache"]["available"] is False
    assert set(body["latency"]["stages"]) >= {"prefill", "decode", "verify"}
    batching = body["batching"]
    assert batching["max_batch"] == Settings.from_env().max_batch and batching["queue"]["max_queue"] >= 1
    assert batching["cross_request_batching"] is False and batching["forwards"]["decode_steps"] == 0
    assert body["gpu"]["available"] is False and "not available" in body["gpu"]["reason"]
    assert body["process_resident_bytes"] > 0
    assert_problem(await client.get("/v1/diagnostics?profile_layers=true", headers=admin_headers), 503)


@pytest.mark.model
async def test_profile_layers_and_svg_over_http(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await model_client.get("/v1/diagnostics?profile_layers=true", headers=model_admin_headers)
    assert response.status_code == 200, response.text
    body = response.json()
    rows = body["layers"]["rows"]
    assert body["layers"]["profiled"] and len(rows) >= 1
    assert all(r["seconds"] > 0 and r["flops"] > 0 for r in rows)
    assert body["kv_cache"]["available"] is True and 0 <= body["kv_cache"]["hit_rate"] <= 1
    assert body["model"]["parameter_bytes"] > 100_000_000
    chart = await model_client.get("/v1/diagnostics/layers.svg", headers=model_admin_headers)
    assert chart.status_code == 200 and chart.headers["content-type"].startswith("image/svg+xml")
    svg = ET.fromstring(chart.text)
    bars = svg.findall("{http://www.w3.org/2000/svg}rect")
    assert len(bars) == len(rows)


def test_svg_escapes_names_and_draws_an_empty_chart() -> None:
    assert "no layer profile yet" in layers_svg([])
    ET.fromstring(layers_svg([]))
