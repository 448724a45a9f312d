"""Verifiers per kind: satisfied and violated tables, partial-text certainty."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.citations import cited_years, evidence_ids, format_citation
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import VerifyContext, verify, verify_all


def _c(kind: Kind, **params: Any) -> Constraint:
    return Constraint(id="c1", kind=kind, params=params)


COMPLETE: list[tuple[Kind, dict[str, Any], str, bool]] = [
    (Kind.WORD_COUNT, {"relation": "less than", "n": 5}, "one two three four", True),
    (Kind.WORD_COUNT, {"relation": "less than", "n": 4}, "one two three four", False),
    (Kind.WORD_COUNT, {"relation": "at least", "n": 3}, "don't stop", True),
    (Kind.WORD_COUNT, {"relation": "at most", "n": 4}, "必须用中文", False),
    (Kind.WORD_COUNT, {"relation": "exactly", "n": 2}, "well-known", True),
    (Kind.SENTENCE_COUNT, {"relation": "less than", "n": 3}, "Dr. Smith came. He left at 3.5 pm.", True),
    (Kind.SENTENCE_COUNT, {"relation": "at least", "n": 3}, "One. Two! Three?", True),
    (Kind.SENTENCE_COUNT, {"relation": "at least", "n": 3}, "One. Two!", False),
    (Kind.PARAGRAPH_COUNT, {"n": 2}, "First part.\n***\nSecond part.", True),
    (Kind.PARAGRAPH_COUNT, {"n": 2}, "***\nFirst.\n***\nSecond.\n***", True),
    (Kind.PARAGRAPH_COUNT, {"n": 3}, "One.\n***\n\n***\nThree.", False),
    (Kind.NTH_PARAGRAPH_FIRST_WORD, {"n": 2, "nth": 2, "first_word": "summary"}, "Intro.\n\nSummary, done.", True),
    (Kind.NTH_PARAGRAPH_FIRST_WORD, {"n": 2, "nth": 2, "first_word": "summary"}, "Intro.\n\nIn summary.", False),
    (Kind.BULLET_COUNT, {"n": 2}, "* one\n- two\n**bold**", True),
    (Kind.BULLET_COUNT, {"n": 2}, "* one\n* two\n* three", False),
    (Kind.HIGHLIGHTED_SECTIONS, {"n": 2}, "*a* and **b**", True),
    (Kind.HIGHLIGHTED_SECTIONS, {"n": 2}, "*a* and * *", False),
    (Kind.SECTIONS, {"splitter": "Section", "n": 2}, "Section 1\nx\nSection 2\ny", True),
    (Kind.SECTIONS, {"splitter": "Section", "n": 3}, "Section 1\nx\nSection 2\ny", False),
    (Kind.PLACEHOLDERS, {"n": 2}, "Dear [name] at [address]", True),
    (Kind.PLACEHOLDERS, {"n": 3}, "Dear [name] at [address]", False),
    (Kind.POSTSCRIPT, {"marker": "P.S."}, "Body.\nP.S. call me", True),
    (Kind.POSTSCRIPT, {"marker": "P.P.S"}, "Body.\nP.S. call me", False),
    (Kind.TITLE, {}, "<<Joy>>\nText", True),
    (Kind.TITLE, {}, "<< >>\nText", False),
    (Kind.JSON_FORMAT, {}, '```json\n{"a": 1}\n```', True),
    (Kind.JSON_FORMAT, {}, 'Here: {"a": 1}', False),
    (Kind.REGEX_FORMAT, {"pattern": r"\d{3}-\d{4}"}, " 555-1234 ", True),
    (Kind.REGEX_FORMAT, {"pattern": r"\d{3}-\d{4}"}, "call 555-1234", False),
    (Kind.CONSTRAINED_RESPONSE, {"options": ["My answer is yes.", "My answer is no."]}, "Well. My answer is no.", True),
    (Kind.CONSTRAINED_RESPONSE, {"options": ["My answer is yes."]}, "my answer is yes.", False),
    (Kind.ALL_LOWERCASE, {}, "all quiet here.", True),
    (Kind.ALL_LOWERCASE, {}, "all Quiet here.", False),
    (Kind.ALL_CAPITALS, {}, "LOUD AND CLEAR.", True),
    (Kind.ALL_CAPITALS, {}, "LOUD and CLEAR.", False),
    (Kind.CAPITAL_WORD_FREQUENCY, {"relation": "at least", "n": 3}, "I DON'T know", True),
    (Kind.CAPITAL_WORD_FREQUENCY, {"relation": "less than", "n": 2}, "NASA and ESA", False),
    (Kind.NO_COMMA, {}, "No commas here.", True),
    (Kind.NO_COMMA, {}, "Yes, one.", False),
    (Kind.NO_COMMA, {}, "中文，逗号", False),
    (Kind.QUOTATION, {}, ' "wrapped" ', True),
    (Kind.QUOTATION, {}, '"', False),
    (Kind.TWO_RESPONSES, {}, "A.\n******\nB.", True),
    (Kind.TWO_RESPONSES, {}, "A.\n******\nA.", False),
    (Kind.REPEAT_PROMPT, {"prompt_to_repeat": "Write a poem."}, "WRITE A POEM. Roses...", True),
    (Kind.REPEAT_PROMPT, {"prompt_to_repeat": "Write a poem."}, "Sure. Write a poem.", False),
    (Kind.START_PHRASE, {"phrase": "My answer is"}, "  My answer is yes", True),
    (Kind.END_PHRASE, {"phrase": "Any other questions?"}, '"Done. Any other questions?"', True),
    (Kind.END_PHRASE, {"phrase": "Any other questions?"}, "Any other questions? Bye.", False),
    (Kind.KEYWORDS_PRESENT, {"keywords": ["risk", "Audit"]}, "The RISK of an audit.", True),
    (Kind.KEYWORDS_PRESENT, {"keywords": ["risk", "audit"]}, "The risk alone.", False),
    (Kind.FORBIDDEN_WORDS, {"words": ["rock"]}, "A rocket launched.", True),
    (Kind.FORBIDDEN_WORDS, {"words": ["rock"]}, "We ROCK.", False),
    (Kind.KEYWORD_FREQUENCY, {"keyword": "risk", "relation": "at least", "n": 2}, "risk and Risk", True),
    (Kind.KEYWORD_FREQUENCY, {"keyword": "risk", "relation": "less than", "n": 2}, "risk and risky", False),
    (Kind.LETTER_FREQUENCY, {"letter": "o", "relation": "at least", "n": 3}, "Oh no, go", True),
    (Kind.LETTER_FREQUENCY, {"letter": "c", "relation": "less than", "n": 1}, "Cat", False),
    (Kind.RESPONSE_LANGUAGE, {"language": "zh"}, "这是一个用中文写的回答。", True),
    (Kind.RESPONSE_LANGUAGE, {"language": "zh"}, "This answer is written in English.", False),
    (Kind.RESPONSE_LANGUAGE, {"language": "ko"}, "이 질문은 많은 사람들 사이에서 논쟁의 주제입니다.", True),
    (Kind.CITE_SOURCES, {"min": 2}, "Escalate [E1, E3].", True),
    (Kind.CITE_SOURCES, {"min": 2}, "Escalate [E1] and again [E1].", False),
    (Kind.CITATION_TIME_WINDOW, {"not_before": "2020-01-01"}, "Per FATF (2021) guidance.", True),
    (Kind.CITATION_TIME_WINDOW, {"not_before": "2020-01-01"}, "Per FATF (2018) guidance.", False),
    (Kind.JURISDICTION, {"code": "EU"}, "Under AMLD rules in Cyprus.", True),
    (Kind.JURISDICTION, {"code": "EU"}, "FinCEN guidance applies.", False),
    (Kind.NUMERIC_PRECISION, {"decimals": 2}, "Rate 20.00% of 1500.25 EUR", True),
    (Kind.NUMERIC_PRECISION, {"decimals": 2}, "Rate 20.5%", False),
]


@pytest.mark.parametrize(("kind", "params", "text", "expected"), COMPLETE)
def test_verify_complete_text(kind: Kind, params: dict[str, Any], text: str, expected: bool) -> None:
    verdict = verify(_c(kind, **params), text)
    assert verdict.satisfied is expected, verdict.detail
    assert verdict.certain is True


PARTIAL: list[tuple[Kind, dict[str, Any], str, bool, bool]] = [
    # (kind, params, partial text, satisfied now, certain)
    (Kind.FORBIDDEN_WORDS, {"words": ["rock"]}, "We rock and", False, True),
    (Kind.FORBIDDEN_WORDS, {"words": ["rock"]}, "We rock", True, False),
    (Kind.NO_COMMA, {}, "Yes, and", False, True),
    (Kind.NO_COMMA, {}, "Yes and", True, False),
    (Kind.ALL_LOWERCASE, {}, "all Good", False, True),
    (Kind.ALL_LOWERCASE, {}, "all good", True, False),
    (Kind.ALL_CAPITALS, {}, "LOUD a", False, True),
    (Kind.WORD_COUNT, {"relation": "less than", "n": 3}, "one two three", False, True),
    (Kind.WORD_COUNT, {"relation": "less than", "n": 3}, "one two", True, False),
    (Kind.WORD_COUNT, {"relation": "at least", "n": 2}, "one two", True, True),
    (Kind.WORD_COUNT, {"relation": "at least", "n": 3}, "one two", False, False),
    (Kind.SENTENCE_COUNT, {"relation": "less than", "n": 2}, "One. Two. Thr", False, True),
    (Kind.KEYWORD_FREQUENCY, {"keyword": "risk", "relation": "at most", "n": 1}, "risk, risk", False, True),
    (Kind.KEYWORDS_PRESENT, {"keywords": ["risk"]}, "the risk", True, True),
    (Kind.KEYWORDS_PRESENT, {"keywords": ["risk"]}, "the ri", False, False),
    (Kind.BULLET_COUNT, {"n": 1}, "* a\n* b\n* c", False, True),
    (Kind.REPEAT_PROMPT, {"prompt_to_repeat": "Write a poem."}, "Write a", False, False),
    (Kind.REPEAT_PROMPT, {"prompt_to_repeat": "Write a poem."}, "Sure", False, True),
    (Kind.QUOTATION, {}, "No quote", False, True),
    (Kind.CITE_SOURCES, {"min": 1}, "as shown [E2]", True, True),
    (Kind.CITATION_TIME_WINDOW, {"not_before": "2020-01-01"}, "see (Basel, 2017) and", False, True),
    (Kind.END_PHRASE, {"phrase": "Bye."}, "Hello", False, False),
]


@pytest.mark.parametrize(("kind", "params", "text", "satisfied", "certain"), PARTIAL)
def test_verify_partial_certainty(
    kind: Kind, params: dict[str, Any], text: str, satisfied: bool, certain: bool
) -> None:
    verdict = verify(_c(kind, **params), text, partial=True)
    assert (verdict.satisfied, verdict.certain) == (satisfied, certain), verdict.detail


def test_certain_violation_stays_violated_as_text_grows() -> None:
    constraint = _c(Kind.WORD_COUNT, relation="at most", n=4)
    text = "one two three four five"
    assert verify(constraint, text, partial=True).certain
    for suffix in (" six", ".", " and more words"):
        assert not verify(constraint, text + suffix).satisfied


def test_evidence_dates_from_context_decide_the_window() -> None:
    constraint = _c(Kind.CITATION_TIME_WINDOW, not_before="2020-01-01")
    context = VerifyContext(evidence_dates={"E1": "2019-06-30", "E2": "2023-01-01"})
    assert verify(constraint, "Rule [E2] applies.", context=context).satisfied
    verdict = verify(constraint, "Rules [E1, E2] apply.", context=context)
    assert not verdict.satisfied and "E1" in verdict.detail


def test_jurisdiction_rejects_cited_evidence_from_elsewhere() -> None:
    context = VerifyContext(evidence_jurisdictions={"E1": "US"})
    assert not verify(_c(Kind.JURISDICTION, code="EU"), "See [E1].", context=context).satisfied


def test_verify_all_keeps_order() -> None:
    constraints = [
        Constraint(id="a", kind=Kind.NO_COMMA),
        Constraint(id="b", kind=Kind.ALL_LOWERCASE),
    ]
    verdicts = verify_all(constraints, "Hello, world")
    assert [(v.constraint_id, v.satisfied) for v in verdicts] == [("a", False), ("b", False)]


def test_citation_syntax_round_trip() -> None:
    text = "Escalate " + format_citation(["E3", "E5"]) + " and [E3]; see (FATF, 2021)."
    assert evidence_ids(text) == ["E3", "E5"]
    assert cited_years(text) == [2021]


@pytest.mark.parametrize(
    ("kind", "params"),
    [(Kind.WORD_COUNT, {"relation": "at least", "n": None}), (Kind.BULLET_COUNT, {"n": "many"})],
)
def test_invalid_parameters_raise_invalid_input(kind: Kind, params: dict[str, Any]) -> None:
    from reasoning.errors import InvalidInput

    with pytest.raises(InvalidInput):
        verify(_c(kind, **params), "some text")
