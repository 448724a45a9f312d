"""Premises and retraction / amendment matching in English and Chinese."""

from __future__ import annotations

import pytest

from reasoning.constraints.model import Premise
from reasoning.premises import extract_premises, match_retraction


def test_english_premises_with_topic_value_and_negation() -> None:
    premises = extract_premises(
        "Assume the tax rate is 20%. Given that the customer is not a PEP, should we file? "
        "Suppose a holding period of 3 years."
    )
    assert [(p.id, p.topic, p.value, p.negated) for p in premises] == [
        ("p1", "tax rate", "20%", False),
        ("p2", "customer", "PEP", True),
        ("p3", "holding period", "3 years", False),
    ]
    assert premises[0].source is not None and premises[0].source.text.startswith("Assume")


def test_chinese_premises() -> None:
    premises = extract_premises("假设税率为20%。已知客户是政治公众人物，是否需要上报？")
    assert [(p.topic, p.value, p.language) for p in premises] == [
        ("税率", "20%", "zh"),
        ("客户", "政治公众人物", "zh"),
    ]


@pytest.fixture
def premises() -> list[Premise]:
    return list(extract_premises("Assume the tax rate is 20%. Given that the customer is a PEP, decide."))


def test_retraction_by_topic(premises: list[Premise]) -> None:
    match = match_retraction("Ignore the earlier assumption about the tax rate.", premises)
    assert (match.kind, match.premise_ids, match.ambiguous) == ("retract", ("p1",), False)


def test_amendment_with_negation(premises: list[Premise]) -> None:
    match = match_retraction("Actually the customer is not a PEP.", premises)
    assert (match.kind, match.premise_ids, match.negated) == ("amend", ("p2",), True)


def test_amendment_with_new_value(premises: list[Premise]) -> None:
    match = match_retraction("Actually, the tax rate should be 25%.", premises)
    assert (match.kind, match.premise_ids, match.new_value) == ("amend", ("p1",), "25%")


def test_forget_what_i_said(premises: list[Premise]) -> None:
    match = match_retraction("Forget what I said about the customer.", premises)
    assert (match.kind, match.premise_ids) == ("retract", ("p2",))


def test_unrelated_turn_is_not_a_retraction(premises: list[Premise]) -> None:
    assert match_retraction("What is the filing deadline?", premises).kind == "none"


def test_chinese_retraction() -> None:
    premises = list(extract_premises("假设税率为20%。已知客户是政治公众人物。"))
    match = match_retraction("忽略上一条关于税率的假设", premises)
    assert (match.kind, match.premise_ids) == ("retract", ("p1",))
    amend = match_retraction("实际上税率应为25%", premises)
    assert (amend.kind, amend.premise_ids, amend.new_value) == ("amend", ("p1",), "25%")


def test_equal_matches_are_ambiguous() -> None:
    premises = list(extract_premises("Assume the corporate tax rate is 20%. Assume the sales tax rate is 8%."))
    match = match_retraction("Ignore the assumption about the tax rate.", premises)
    assert match.ambiguous
    assert set(match.premise_ids) == {"p1", "p2"}


def test_generic_reference_with_one_premise() -> None:
    premises = list(extract_premises("Assume the tax rate is 20%."))
    match = match_retraction("Drop that assumption.", premises)
    assert (match.kind, match.premise_ids, match.ambiguous) == ("retract", ("p1",), False)


@pytest.mark.parametrize("text", [
    "Assume the tax rate is 20% and the customer is a politically exposed person. Decide.",
    "Assume the tax rate is 20%, and the customer is a politically exposed person. Decide.",
])
def test_one_sentence_with_two_assumptions_is_two_premises(text: str) -> None:
    premises = extract_premises(text)
    assert [(p.topic, p.value) for p in premises] == [
        ("tax rate", "20%"), ("customer", "politically exposed person")]
    assert all(text[p.source.start:p.source.end] == p.source.text for p in premises if p.source)
    match = match_retraction("Ignore the assumption about the tax rate.", list(premises))
    assert (match.kind, match.premise_ids) == ("retract", ("p1",))


def test_chinese_sentence_with_two_assumptions() -> None:
    premises = extract_premises("假设税率为20%，且客户是政治公众人物。是否需要上报？")
    assert [(p.topic, p.value) for p in premises] == [("税率", "20%"), ("客户", "政治公众人物")]
    assert match_retraction("忽略上一条关于税率的假设", list(premises)).premise_ids == ("p1",)


def test_and_inside_one_assumption_is_not_a_split() -> None:
    premises = extract_premises("Assume the fees and charges are 3%.")
    assert [(p.topic, p.value) for p in premises] == [("fees charges", "3%")]
