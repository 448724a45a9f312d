"""The prompt limit counts the model's tokens as well as characters (the real app and tokenizer).

Chinese text takes one to two tokens a character: 5,000 characters are within the
8,000-character limit and over the 4,096-token one, refused with 413 before
any planning, the problem naming the count and the limit.
"""

from __future__ import annotations

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.conftest import check_problem

pytestmark = pytest.mark.model

Client = AsyncTestClient[Litestar]
LONG_CJK = "请说明本案是否需要上报并引用所依据的规则。" * 250  # 5,000 characters


async def test_a_prompt_over_the_token_limit_is_413_naming_it(
    model_client: Client, model_admin_headers: dict[str, str], model_app: Litestar
) -> None:
    limit = model_app.state.runtime.settings.max_prompt_tokens
    assert len(LONG_CJK) <= model_app.state.runtime.settings.max_prompt_chars
    body = {"prompt": LONG_CJK, "options": {"max_new_tokens": 4, "num_beams": 1}}
    reason = await model_client.post("/v1/reason", headers=model_admin_headers, json=body)
    problem = check_problem(reason, 413)
    assert (problem["field"], problem["limit"], problem["unit"]) == ("prompt", limit, "tokens")
    assert f"the limit is {limit} tokens" in problem["detail"]

    created = await model_client.post("/v1/sessions", headers=model_admin_headers, json={})
    assert created.status_code == 201, created.text
    turn = await model_client.post(f"/v1/sessions/{created.json()['id']}/turns", headers=model_admin_headers,
                                   json=body)
    assert check_problem(turn, 413)["limit"] == limit

    short = await model_client.post("/v1/reason", headers=model_admin_headers,
                                    json={"prompt": LONG_CJK[:40], "options": {"max_new_tokens": 2, "num_beams": 1}})
    assert short.status_code == 200, short.text
