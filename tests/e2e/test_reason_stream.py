"""POST /v1/reason with ``stream: true``: the step events are exactly the result's steps."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.model


def _events(text: str) -> list[tuple[str, Any]]:
    """(event, data) pairs of a server-sent event body."""
    out: list[tuple[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.splitlines()
        event = next(
            (ln.removeprefix("event:").strip() for ln in lines if ln.startswith("event:")), None
        )
        data = "\n".join(ln.removeprefix("data:").strip() for ln in lines if ln.startswith("data:"))
        if event is not None:
            out.append((event, json.loads(data)))
    return out


@pytest.mark.parametrize("beams", [1, 2])
async def test_step_events_are_the_result_steps(
    model_client: Any, model_admin_headers: dict[str, str], beams: int
) -> None:
    response = await model_client.post(
        "/v1/reason",
        json={
            "prompt": "List three colours, one per line.",
            "options": {"max_new_tokens": 20, "num_beams": beams, "stream": True},
        },
        headers=model_admin_headers,
    )
    assert response.status_code == 200, response.text
    events = _events(response.text)
    kinds = [event for event, _ in events]
    assert kinds[0] == "plan" and kinds[-1] == "result", kinds
    assert set(kinds[1:-1]) <= {"step"}, kinds
    result = events[-1][1]
    assert result["status"] == "ok" and len(result["steps"]) >= 2, result["answer"]
    streamed = [(d["id"], d["branch"], d["text"]) for event, d in events if event == "step"]
    assert streamed == [(s["id"], s["branch"], s["text"]) for s in result["steps"]]
    # One branch (no domain): the answer's steps are all of them, in order.
    assert [step_id for step_id, _, _ in streamed] == result["reasoning_path"]
    ids = {s["id"] for s in result["steps"]}
    named = [v.split(": ", 1)[0] for v in result["violations"] if not v.startswith("steering:")]
    assert set(named) <= ids, result["violations"]
