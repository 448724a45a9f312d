"""POST /v1/constraints with the compositional form: paraphrases, generic kinds, unrecognised requirements."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

URL = "/v1/constraints"
Client = AsyncTestClient[Litestar]


async def test_lowercase_then_capitals_in_other_words_needs_confirmation(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    prompt = "Answer in all lowercase letters. Your entire response must be in capital letters."
    response = await client.post(URL, json={"prompt": prompt}, headers=headers)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert [c["kind"] for c in payload["constraints"]] == ["all_lowercase", "all_capitals"]
    assert payload["status"] == "needs_confirmation"
    [conflict] = payload["conflicts"]
    texts = [span["text"] for span in conflict["spans"]]
    assert any("lowercase" in t for t in texts) and any("capital" in t for t in texts)


async def test_generic_kinds_and_unrecognised_requirements_are_returned(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    prompt = "Describe owls. Include at least 3 emojis. Every line of your answer must rhyme with the previous one."
    response = await client.post(URL, json={"prompt": prompt}, headers=headers)
    assert response.status_code == 200, response.text
    payload = response.json()
    [count] = payload["constraints"]
    assert (count["kind"], count["params"]) == ("count", {"unit": "emoji", "relation": "at least", "n": 3})
    [span] = payload["unrecognised"]
    assert span["text"] == "Every line of your answer must rhyme with the previous one."
    assert prompt[span["start"] : span["end"]] == span["text"]


@pytest.mark.parametrize(
    "params",
    [{"unit": "emoji"}, {"unit": "smells", "relation": "at most", "n": 1}, {"unit": "emoji", "relation": "about", "n": 1}],
)
async def test_a_profile_default_of_a_generic_kind_must_fit_its_form(
    client: Client, make_key: Any, assert_problem: Any, params: dict[str, Any]
) -> None:
    headers = await make_key("acme", ["reason"])
    body = {"prompt": "hi", "profile": {"defaults": [{"kind": "count", "params": params}]}}
    response = await client.post(URL, json=body, headers=headers)
    problem = assert_problem(response, 400)
    assert "count" in str(problem)


async def test_a_profile_default_of_a_generic_kind_applies(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    default = {"kind": "structure", "params": {"layout": "no_list"}}
    response = await client.post(URL, json={"prompt": "Describe owls.", "profile": {"defaults": [default]}},
                                 headers=headers)
    assert response.status_code == 200, response.text
    [constraint] = response.json()["constraints"]
    assert (constraint["kind"], constraint["params"], constraint["origin"]) == ("structure", {"layout": "no_list"}, "profile")


async def test_at_least_three_marks_and_none_at_all_needs_confirmation(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    prompt = "Write a poem. Include at least 3 '!' in your answer. Do not use '!' at all."
    response = await client.post(URL, json={"prompt": prompt}, headers=headers)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["status"] == "needs_confirmation"
    [conflict] = payload["conflicts"]
    assert {conflict["a"], conflict["b"]} == {c["id"] for c in payload["constraints"]}
    assert all(prompt[s["start"] : s["end"]] == s["text"] and "'!'" in s["text"] for s in conflict["spans"])


async def test_concurrent_distinct_checks_are_answered_as_alone(client: Client, make_key: Any) -> None:
    import asyncio

    headers = await make_key("acme", ["reason"])
    prompts = [f"Describe river {i}. Use fewer than {30 + i} words. Do not use any commas." for i in range(8)]
    answers = await asyncio.gather(*(client.post(URL, json={"prompt": p}, headers=headers) for p in prompts))
    for i, response in enumerate(answers):
        assert response.status_code == 200, response.text
        kinds = {(c["kind"], c["params"].get("n")) for c in response.json()["constraints"]}
        assert kinds == {("word_count", 30 + i), ("no_comma", None)}


async def test_readings_say_which_words_each_reading_used_and_why_one_was_dropped(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    prompt = "Answer in fewer than 40 words. Include the keyword eat in the 6-th sentence."
    response = await client.post(URL, json={"prompt": prompt}, headers=headers)
    assert response.status_code == 200, response.text
    payload = response.json()
    [constraint] = payload["constraints"]
    kept = [r for r in payload["readings"] if r["constraint"] == constraint["id"]]
    assert [r["kind"] for r in kept] == ["word_count"]
    assert {"40", "words"} <= {w["text"] for w in kept[0]["used"]}
    dropped = [r for r in payload["readings"] if r["constraint"] is None]
    assert dropped and {"6", "sentence"} <= {w["text"] for r in dropped for w in r["unaccounted"]}
    assert any("6-th sentence" in s["text"] for s in payload["unrecognised"])
