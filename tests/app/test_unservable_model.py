"""Readiness tells the truth: a model the steered decoder cannot serve is never reported ready.

A tiny random-weight LFM2 (convolution layers beside attention: a layer kind the KV slab cannot
hold) is built in the test and saved with the bundled tokenizer. It loads and answers a plain
forward; the steered probe at load refuses it, so ``/readyz`` is 503 naming the layer kind, and
the model routes answer 503 with the same reason (never a 400 blaming the client). A sliding
window model of the same size passes the same probe.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from litestar.testing import AsyncTestClient
from transformers import AutoModelForCausalLM, Gemma3TextConfig, Lfm2Config

from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.settings import Settings
from inference.servable import steered_probe

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

_TINY = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 49152,
}


def _tiny(config: Any) -> Any:
    torch.manual_seed(0)
    config._attn_implementation = "sdpa"
    return AutoModelForCausalLM.from_config(config).eval()


def _conv_hybrid() -> Any:
    return _tiny(Lfm2Config(**_TINY, full_attn_idxs=[1]))


def test_the_probe_refuses_a_layer_kind_the_slab_cannot_hold(tokenizer: Any) -> None:
    reason = steered_probe(_conv_hybrid(), tokenizer)
    assert reason is not None and "layer 0" in reason and "'conv'" in reason


def test_the_probe_passes_a_sliding_window_model(tokenizer: Any) -> None:
    config = Gemma3TextConfig(**_TINY, head_dim=16, sliding_window=16)  # probed past it
    assert steered_probe(_tiny(config), tokenizer) is None


async def test_an_unservable_model_is_not_ready_and_its_routes_say_why(
    settings: Settings, tmp_path: Path, tokenizer: Any
) -> None:
    directory = tmp_path / "lfm2-tiny"
    _conv_hybrid().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    app = create_app(
        replace(settings, load_model=True, model=str(directory), device="cpu", weights="float32")
    )
    try:
        async with AsyncTestClient(app=app) as client:
            deadline = time.monotonic() + 120
            while (ready := await client.get("/readyz")).json()["model"]["state"] in (
                "loading",
                "not_started",
            ):
                assert time.monotonic() < deadline, ready.text
                await asyncio.sleep(0.1)
            assert ready.status_code == 503
            model = ready.json()["model"]
            assert model["state"] == "unservable", model
            assert "steered decoder cannot serve" in model["error"] and "'conv'" in model["error"]
            token = await bootstrap_admin_key(app.state.runtime.sessionmaker, None)
            assert token is not None
            headers = {"Authorization": f"Bearer {token}"}
            for path, body in (
                ("/v1/reason", {"prompt": "Is the sky blue?"}),
                (
                    "/v1/chat/completions",
                    {"model": "tenet", "messages": [{"role": "user", "content": "Hi"}]},
                ),
            ):
                response = await client.post(path, json=body, headers=headers)
                assert response.status_code == 503, (path, response.text)
                assert response.json()["detail"] == model["error"], path
            listed = await client.get("/v1/models", headers=headers)
            assert listed.status_code == 503 and listed.json()["detail"] == model["error"]
    finally:
        await app.state.runtime.close()
