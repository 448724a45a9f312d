"""Premises and the rules' decision in a session, through HTTP (the real app and the bundled model).

One sentence stating two assumptions is two premises; retracting the tax
rate leaves the PEP premise active and the conclusions that used it in place
(not recomputed); amending the PEP premise through the API re-reads it into
the case graph, so the decision and the stated answer change with it.
"""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from reasoning.dag import ReasoningDag
from tests.conftest import load_bundled

pytestmark = pytest.mark.model

Client = AsyncTestClient[Litestar]
URL = "/v1/sessions"
PROMPT = (
    "Assume the tax rate is 20% and the customer is a politically exposed person. "
    "Acme Ltd paid EUR 10,000 to the customer. Should the payment be escalated?"
)
FAST = {"max_new_tokens": 40, "num_beams": 1, "evidence_token_budget": 96, "counterfactual": False}


@pytest.fixture(scope="module")
async def bundled_tenant(model_app: Litestar) -> None:
    await load_bundled(model_app, "default")


def _used(response: dict[str, Any]) -> set[str]:
    """The premises the conclusions used: the session's stored ids, as its premises name them."""
    return {p for c in response["decision"]["conclusions"] for p in c["premise_ids"]}


async def test_retract_one_of_two_premises_then_amend_the_other(
    model_client: Client, model_admin_headers: dict[str, str], bundled_tenant: None
) -> None:
    headers = model_admin_headers
    created = await model_client.post(URL, headers=headers, json={"domain": "aml"})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    first = await model_client.post(
        f"{URL}/{sid}/turns", headers=headers, json={"prompt": PROMPT, "options": FAST}
    )
    assert first.status_code == 200, first.text
    body = first.json()
    premises = {p["topic"]: p for p in body["premises"]}
    assert set(premises) == {"tax rate", "customer"}
    tax, pep = premises["tax rate"], premises["customer"]
    assert body["response"]["decision"]["status"] == "decided"
    assert _used(body["response"]) == {pep["id"]}
    assert {p["id"] for p in body["response"]["premises"]} == {tax["id"], pep["id"]}

    retracted = await model_client.post(
        f"{URL}/{sid}/turns",
        headers=headers,
        json={"prompt": "Ignore the earlier assumption about the tax rate.", "options": FAST},
    )
    assert retracted.status_code == 200, retracted.text
    after = retracted.json()
    assert after["kind"] == "retraction"
    assert after["reinference"]["changed_premise_ids"] == [tax["id"]]
    status = {p["id"]: p["status"] for p in after["premises"]}
    assert status == {tax["id"]: "retracted", pep["id"]: "active"}
    assert after["response"]["decision"]["status"] == "decided"
    assert _used(after["response"]) == {pep["id"]}
    assert not any(":conclusion:" in n for n in after["reinference"]["recomputed"])
    graph = await model_client.get(f"{URL}/{sid}/graph", headers=headers)
    dag = ReasoningDag.from_node_link(graph.json())
    assert any(":conclusion:" in n for n in dag.descendants(f"premise:{pep['id']}"))

    amended = await model_client.patch(
        f"{URL}/{sid}/premises/{pep['id']}",
        headers=headers,
        json={"text": "the customer is a company"},
    )
    assert amended.status_code == 200, amended.text
    changed = amended.json()
    assert changed["kind"] == "amendment"
    decision = changed["response"]["decision"]
    assert decision["status"] == "no_rule_applies", decision
    assert changed["answer"]["text"].startswith(decision["statement"]), changed["answer"]["text"]
    assert "escalat" in body["answer"]["text"].lower()
