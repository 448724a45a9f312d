"""/v1/chat/completions driven by the official ``openai`` client against the app served by uvicorn."""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import uvicorn

from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from inference.loader import LoadedModel
from store import keys as key_store
from store.db import create_engine, create_sessionmaker, transaction

pytestmark = pytest.mark.model

MODEL_CACHE = Path(__file__).resolve().parents[2] / "var" / "models"


class Served:
    """The real app on a loopback port, in a background thread, with one admin key."""

    def __init__(self, settings: Settings, model: LoadedModel) -> None:
        self.token = asyncio.run(self._key(settings.database_url))
        runtime = Runtime(settings)
        runtime.set_model(model)
        self.app = create_app(settings, runtime=runtime)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)

    @staticmethod
    async def _key(url: str) -> str:
        engine = create_engine(url)
        try:
            async with transaction(create_sessionmaker(engine)) as session:
                tenant = await key_store.get_or_create_tenant(session, "chat-e2e")
                created = await key_store.create_key(session, tenant.id, "openai client", ["reason", "audit:read"])
            return created.token
        finally:
            await engine.dispose()

    def client(self, **kwargs: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url, api_key=self.token, max_retries=0, timeout=300, **kwargs)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_template: Path, loaded_model: LoadedModel
) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("chat-app")
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    settings = Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE, device="cpu")
    server = Served(settings, loaded_model)
    yield server
    server.close()


def test_plain_completion_with_extensions(served: Served) -> None:
    client = served.client()
    completion = client.chat.completions.create(
        model="tenet",
        messages=[
            {"role": "system", "content": "Your entire response must be in lowercase letters."},
            {"role": "user", "content": "Name one colour of the sky."},
        ],
        max_tokens=16,
        temperature=0,
    )
    choice = completion.choices[0]
    content = choice.message.content or ""
    assert choice.message.role == "assistant" and content.strip()
    assert content == content.lower()
    assert choice.finish_reason in ("stop", "length")
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    tenet = (completion.model_extra or {})["tenet"]
    assert tenet["status"] == "ok" and tenet["run_id"] == completion.id.removeprefix("chatcmpl-")
    lowercase = next(c for c in tenet["constraints"] if c["kind"] == "all_lowercase")
    assert lowercase["verdict"]["satisfied"] is True
    assert set(tenet["confidence_by_step"]) == set(tenet["reasoning_path"])
    run = client.get(f"/runs/{tenet['run_id']}", cast_to=dict)
    assert run["kind"] == "chat"


def test_streaming_ends_with_done(served: Served) -> None:
    client = served.client()
    stream = client.chat.completions.create(
        model="tenet",
        messages=[{"role": "user", "content": "Say hello in five words or fewer."}],
        max_completion_tokens=12,
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces, finish, tenet, usage = [], None, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
        tenet = (chunk.model_extra or {}).get("tenet") or tenet
    assert "".join(pieces).strip()
    assert finish in ("stop", "length") and tenet is not None and tenet["status"] == "ok"
    assert usage is not None and usage.completion_tokens > 0
    with served.client()._client.stream(  # the raw wire format: OpenAI's SSE framing
        "POST", f"{served.base_url}/chat/completions",
        json={"model": "tenet", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
              "stream": True},
        headers={"Authorization": f"Bearer {served.token}"},
    ) as raw:
        lines = [line for line in raw.iter_lines() if line]
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"


def test_conflict_answers_a_completion_with_a_confirmation(served: Served) -> None:
    completion = served.client().chat.completions.create(
        model="tenet",
        messages=[{"role": "user", "content": "Answer in English. 必须用中文回答。What is a bond?"}],
        max_tokens=16,
    )
    tenet = (completion.model_extra or {})["tenet"]
    assert tenet["status"] == "needs_confirmation" and tenet["confirmation_id"]
    assert completion.choices[0].finish_reason == "stop"
    content = completion.choices[0].message.content or ""
    assert tenet["confirmation_id"] in content and "用中文回答" in content and "English" in content
    listed = served.client().get("/confirmations", cast_to=dict)
    item = next(i for i in listed["items"] if i["id"] == tenet["confirmation_id"])
    assert item["origin"] == "chat"


def test_session_id_makes_the_message_a_session_turn(served: Served) -> None:
    client = served.client()
    session = client.post("/sessions", body={}, cast_to=dict)
    completion = client.chat.completions.create(
        model="tenet",
        messages=[{"role": "user", "content": "Assume the tax rate is 20%. What is the tax on 100?"}],
        max_tokens=12,
        temperature=0,
        extra_body={"session_id": session["id"]},
    )
    tenet = (completion.model_extra or {})["tenet"]
    assert tenet["session_id"] == session["id"] and tenet["status"] == "ok"
    assert (completion.choices[0].message.content or "").strip()
    stored = client.get(f"/sessions/{session['id']}", cast_to=dict)
    assert [t["run_id"] for t in stored["turns"]] == [tenet["run_id"]]
    assert [p["topic"] for p in stored["premises"]] and stored["premises"][0]["status"] == "active"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": [{"role": "user", "content": "Hi"}], "n": 2}, "n"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "assistant", "content": "Hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "Hi"}], "extra_body": {"tenet_options": {"beams": 2}}},
         "tenet_options"),
        ({"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "f"}}]},
         "tools"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
         "messages[0].content"),
    ],
)
def test_bad_input_is_a_problem_the_client_raises(served: Served, body: dict[str, Any], field: str) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        served.client().chat.completions.create(model="tenet", **body)
    assert caught.value.status_code == 400
    problem = caught.value.body
    assert isinstance(problem, dict) and problem.get("field") == field, problem
    assert caught.value.response.headers["content-type"].startswith("application/problem+json")


def test_wrong_key_is_401(served: Served) -> None:
    client = openai.OpenAI(base_url=served.base_url, api_key="tnt_nope_nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="tenet", messages=[{"role": "user", "content": "Hi"}])
