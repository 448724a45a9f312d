"""The catalog covers every kind and IFEval id and restates in English and Chinese."""

from __future__ import annotations

import re

import pytest

from reasoning.constraints.catalog import CATALOG, IFEVAL_TO_KIND, restate
from reasoning.constraints.model import Constraint, Kind

IFEVAL_IDS = {
    "keywords:existence", "keywords:frequency", "keywords:forbidden_words", "keywords:letter_frequency",
    "language:response_language", "length_constraints:number_sentences", "length_constraints:number_paragraphs",
    "length_constraints:number_words", "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders", "detectable_content:postscript",
    "detectable_format:number_bullet_lists", "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections", "detectable_format:multiple_sections",
    "detectable_format:json_format", "detectable_format:title", "combination:two_responses",
    "combination:repeat_prompt", "startend:end_checker", "change_case:capital_word_frequency",
    "change_case:english_capital", "change_case:english_lowercase", "punctuation:no_comma",
    "startend:quotation",
}

PARAMS = {
    Kind.RESPONSE_LANGUAGE: {"language": "zh"},
    Kind.WORD_COUNT: {"relation": "less than", "n": 80},
    Kind.FORBIDDEN_WORDS: {"words": ["cheap"]},
    Kind.CITATION_TIME_WINDOW: {"not_before": "2020-01-01"},
    Kind.BULLET_COUNT: {"n": 3},
}


def test_every_kind_is_in_the_catalog_once() -> None:
    assert set(CATALOG) == set(Kind)
    assert all(spec.kind == kind for kind, spec in CATALOG.items())


def test_all_25_ifeval_ids_are_covered() -> None:
    assert set(IFEVAL_TO_KIND) == IFEVAL_IDS


def test_controllable_kinds_name_their_controller() -> None:
    for spec in CATALOG.values():
        assert spec.controllable == bool(spec.controller)
        assert spec.controller in ("", "mask", "force", "grammar", "length")
    assert CATALOG[Kind.FORBIDDEN_WORDS].controllable
    assert CATALOG[Kind.KEYWORDS_PRESENT].controllable
    assert not CATALOG[Kind.JURISDICTION].controllable


@pytest.mark.parametrize(("kind", "params"), list(PARAMS.items()))
def test_restatement_carries_parameters_in_both_languages(kind: Kind, params: dict[str, object]) -> None:
    constraint = Constraint(id="c1", kind=kind, params=params)
    english, chinese = restate(constraint, "en"), restate(constraint, "zh")
    assert "?" not in english.replace("questions?", "")
    assert re.search(r"[\u4e00-\u9fff]", chinese)
    for key, value in params.items():
        shown = value[0] if isinstance(value, list) else value
        if kind == Kind.RESPONSE_LANGUAGE or key == "relation":
            continue
        assert str(shown) in english and str(shown) in chinese
    if "relation" in params:
        assert "less than" in english and "少于" in chinese
    if kind == Kind.RESPONSE_LANGUAGE:
        assert "Chinese" in english and "中文" in chinese
