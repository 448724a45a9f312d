"""How an answer ended, end to end: ``end`` in POST /v1/reason (answer and branches) and in
the chat completions' ``tenet`` extension, with an OpenAI-compatible ``finish_reason``."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.model

_ENDS = {"model", "landed", "budget_cut"}
_COMPLETE = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]*]*\s*\Z")


async def test_reason_says_how_a_word_maximum_answer_ended(
    model_client: Any, model_admin_headers: dict[str, str]
) -> None:
    response = await model_client.post(
        "/v1/reason",
        json={
            "prompt": "Answer in under 20 words: what is money laundering?",
            "options": {"max_new_tokens": 48, "num_beams": 2},
        },
        headers=model_admin_headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert body["end"] in _ENDS and all(b["end"] in _ENDS for b in body["branches"])
    answering = [b for b in body["branches"] if b["text"] == body["answer"]]
    assert answering and answering[0]["end"] == body["end"]
    assert len(re.findall(r"\w+", body["answer"])) < 20
    if body["end"] == "landed":
        assert _COMPLETE.search(body["answer"]), body["answer"]


async def test_nothing_decoded_has_no_end(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await model_client.post(
        "/v1/reason",
        json={"prompt": "Answer in English. 必须用中文回答。What is a bond?", "options": {"max_new_tokens": 16}},
        headers=model_admin_headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "needs_confirmation" and body["end"] is None


async def test_chat_completion_reports_the_end_and_a_compatible_finish_reason(
    model_client: Any, model_admin_headers: dict[str, str]
) -> None:
    response = await model_client.post(
        "/v1/chat/completions",
        json={
            "model": "tenet",
            "messages": [{"role": "user", "content": "Explain in detail how rivers shape valleys."}],
            "max_tokens": 24,
        },
        headers=model_admin_headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    choice, tenet = body["choices"][0], body["tenet"]
    assert tenet["end"] in _ENDS
    assert choice["finish_reason"] == ("length" if tenet["end"] == "budget_cut" else "stop")
