"""Impossible combinations of form constraints end in needs_confirmation, through the API."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

Client = AsyncTestClient[Litestar]

IMPOSSIBLE = [
    "Describe owls. Do not use any digits. Include at least four digits.",
    "Describe owls. Use no emoji at all. Include at least two emoji.",
    "Describe owls in exactly 3 bullet points. Do not use any bullet points or lists.",
]


@pytest.mark.parametrize("prompt", IMPOSSIBLE)
async def test_contradicting_form_constraints_need_confirmation(client: Client, make_key: Any, prompt: str) -> None:
    headers = await make_key("acme", ["reason"])
    response = await client.post("/v1/constraints", json={"prompt": prompt}, headers=headers)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["status"] == "needs_confirmation", payload
    [conflict] = payload["conflicts"]
    assert len(conflict["spans"]) == 2
