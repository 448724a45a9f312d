"""The analyst's steered answer states the decision and then its grounds, cited (real app, bundled
model, the bundled AML domain's rules): the facts that fired AML-R-017 and AML-R-024 and the rules'
own texts, each step saying what it is; in Chinese too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.conftest import load_bundled

pytestmark = pytest.mark.model

Client = AsyncTestClient[Litestar]
SCENARIO_ZH = (
    "假设税率为20%。阿克米有限公司（塞浦路斯）向乔恩·多伊转账200万欧元，乔恩·多伊在我们的PEP名单上。是否需要上报？"
    "请用80字以内回答，引用你所依据的规则，不要引用2020年以前生效的规则。"
)
SCENARIO = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. "
    "Should this be escalated? Answer in under 80 words, cite the rules you rely on, and do not cite rules "
    "in force before 2020."
)
# The forced statement and grounds take about 130 tokens; the model may add a few.
OPTIONS = {"max_new_tokens": 150, "num_beams": 1, "evidence_token_budget": 96, "counterfactual": False}
_CITED = re.compile(r"\[(E\d+)\]")


@pytest.fixture(scope="module")
async def bundled_tenant(model_app: Litestar) -> None:
    await load_bundled(model_app, "default")


async def test_the_analyst_answer_states_the_grounds_of_both_rules(
    model_client: Client, model_admin_headers: dict[str, str], bundled_tenant: None
) -> None:
    response = await model_client.post("/v1/reason", headers=model_admin_headers,
                                       json={"prompt": SCENARIO, "domain": "aml", "options": OPTIONS})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    decision = body["decision"]
    assert decision["status"] == "decided"
    assert {c["rule_id"] for c in decision["conclusions"]} == {"AML-R-017", "AML-R-024"}
    answer: str = body["answer"]
    assert answer.startswith(decision["statement"].rstrip("."))
    path = set(body["reasoning_path"])
    steps = [s for s in body["steps"] if s["id"] in path]
    grounds = [s for s in steps if s["kind"] == "grounds"]
    assert steps[0]["kind"] == "decision" and grounds
    said = " ".join(s["text"] for s in grounds)
    # The facts that fired AML-R-024 (the amount) and AML-R-017 (Jon Doe on the PEP list), first,
    # naming their rules; the PEP list's entry cited with the ontology's record of it.
    shown = {f["id"]: f for g in body["evidence"] for f in g["facts"]}
    assert grounds[0]["text"].strip() == "The amount is EUR 2,000,000 (AML-R-024)."
    listed = re.fullmatch(r"Jon Doe is listed on the PEP list \(AML-R-024, AML-R-017\) \[(E\d+)\]\.", grounds[1]["text"].strip())
    assert listed and shown[listed.group(1)]["predicate"].endswith("#listedOn"), grounds[1]
    # The rules' own texts, each cited with an evidence id the response shows.
    texts = [s for s in grounds if s["text"].strip().startswith(("AML-R-017:", "AML-R-024:"))]
    assert texts and all(s["support"] and set(s["support"]) <= shown.keys() for s in texts), (
        answer, [(s["kind"], s["text"]) for s in steps], shown)
    assert set(_CITED.findall(said)) <= shown.keys()
    assert len(answer.split()) < 80


async def test_the_chinese_analyst_answer_states_the_facts_that_fired_both_rules(
    model_client: Client, model_admin_headers: dict[str, str], bundled_tenant: None
) -> None:
    response = await model_client.post("/v1/reason", headers=model_admin_headers,
                                       json={"prompt": SCENARIO_ZH, "domain": "aml", "options": OPTIONS})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert {c["rule_id"] for c in body["decision"]["conclusions"]} == {"AML-R-017", "AML-R-024"}
    answer: str = body["answer"]
    assert answer.startswith(body["decision"]["statement"].rstrip("。"))
    path = set(body["reasoning_path"])
    grounds = [s["text"].strip() for s in body["steps"] if s["id"] in path and s["kind"] == "grounds"]
    # The request's own facts, in its words: the amount (AML-R-024) and Jon Doe on the PEP list (both).
    assert grounds[0] == "金额为EUR 2,000,000（AML-R-024）。", (answer, grounds)
    assert re.fullmatch(r"乔恩·多伊列入PEP名单（AML-R-024、AML-R-017）\[E\d+\]。", grounds[1]), (answer, grounds)
