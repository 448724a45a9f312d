"""A session's partial re-inference answers as a full re-run does (SCENARIOS.md flow 1).

The analyst's request on the bundled AML domain, in English and in Chinese:
the tax-rate premise relates to no evidence view, so it is shown only to the
``assumptions`` branch. Retracting it in the session (a natural-language
turn) drops that branch and reuses the evidence branches as they were
decoded; the answer must be the one a full re-run of the same request
without the premise decodes from scratch (what ``bench.reinference`` reports
as ``same_answer``). The decision statement every branch states is the same
before and after the retraction, so the reuse is real (nothing decoded).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import select

from app.runtime import Runtime
from app.services.runs import lookup_domain_index
from inference.pipeline import ReasonOptions
from store.models import Session as SessionRow
from tests.conftest import load_bundled

pytestmark = pytest.mark.model

Client = AsyncTestClient[Litestar]
URL = "/v1/sessions"
#: Long enough for the English decision statement with its citations to be inserted whole.
FAST: dict[str, Any] = {"max_new_tokens": 44, "num_beams": 1, "evidence_token_budget": 96, "counterfactual": False}
SCENARIOS = {
    "en": (
        ("Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on "
         "our PEP list. Should this be escalated? Answer in under 80 words, cite the rules you rely "
         "on, and do not cite rules in force before 2020."),
        "Ignore the assumption about the tax rate.",
    ),
    "zh": (
        ("假设税率为20%。阿克米有限公司（塞浦路斯）向乔恩·多伊转账200万欧元，乔恩·多伊在我们的PEP名单上。"
         "是否需要上报？请在80字以内回答，引用你所依据的规则，不要引用2020年以前生效的规则。"),
        "忽略上一条关于税率的假设",
    ),
}


@pytest.fixture(scope="module")
async def aml_tenant(model_app: Litestar) -> None:
    await load_bundled(model_app, "default")


async def _post(client: Client, headers: dict[str, str], url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(url, headers=headers, json=body)
    assert response.status_code in (200, 201), response.text
    out: dict[str, Any] = response.json()
    return out


@pytest.mark.parametrize("language", sorted(SCENARIOS))
async def test_retraction_answers_as_a_full_rerun(
    model_client: Client, model_admin_headers: dict[str, str], model_app: Litestar, aml_tenant: None,
    language: str,
) -> None:
    prompt, retraction = SCENARIOS[language]
    headers = model_admin_headers
    sid = (await _post(model_client, headers, URL, {"domain": "aml"}))["id"]
    first = await _post(model_client, headers, f"{URL}/{sid}/turns", {"prompt": prompt, "options": FAST})
    assert first["kind"] == "reason" and first["status"] == "ok"
    assert first["response"]["decision"]["status"] == "decided"
    [tax] = first["premises"]
    users = {b["view"] for b in first["answer"]["branches"] if tax["id"] in b["premise_ids"]}
    assert users == {"assumptions"}

    second = await _post(model_client, headers, f"{URL}/{sid}/turns", {"prompt": retraction, "options": FAST})
    assert second["kind"] == "retraction"
    assert second["reinference"]["changed_premise_ids"] == [tax["id"]]
    assert not any(":branch:" in n for n in second["reinference"]["recomputed"])
    kept = {b["view"] for b in second["answer"]["branches"]}
    assert kept == {b["view"] for b in first["answer"]["branches"]} - users

    # The full re-run: the same request planned without the premise, every branch decoded again.
    runtime: Runtime = model_app.state.runtime
    async with runtime.sessionmaker() as db:
        tenant = (await db.execute(select(SessionRow.tenant_id).where(SessionRow.id == sid))).scalar_one()
    index = await lookup_domain_index(runtime, tenant, "aml")
    reasoner = runtime.reasoner()
    options = ReasonOptions(**FAST)
    before = reasoner.plan(prompt, options=options, domain_index=index, tenant=tenant)
    [premise] = [p for p in before.premises if p.text == tax["text"]]
    plan = reasoner.plan(prompt, options=options, domain_index=index, excluded_premise_ids=(premise.id,),
                         tenant=tenant)
    assert before.statement is not None and plan.statement is not None
    assert plan.statement.text == before.statement.text
    full = await asyncio.to_thread(reasoner.run, plan, tenant=tenant)

    assert second["answer"]["text"] == full.answer
    assert {b["view"]: b["text"] for b in second["answer"]["branches"]} == {
        spec.view: branch.text for spec, branch in zip(full.branch_specs, full.branches)
    }
