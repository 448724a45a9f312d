"""bench.misread: a reading that contradicts the judge's parameters is counted apart (issue 36)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.heldout import HELDOUT, extraction_report, load
from bench.misread import misread

Reading = list[dict[str, Any]]


@pytest.mark.parametrize(
    ("judge_id", "args", "extracted", "reason"),
    [
        # the issue's misreadings, judged by judges of the same shape
        ("vowel_types", {"n": 3}, [{"kind": "word_count", "params": {"relation": "exactly", "n": 3}}], "unit"),
        ("keyword_in_sentence", {"keyword": "eat", "k": 6},
         [{"kind": "keywords_present", "params": {"keywords": ["eat"]}}], "position"),
        ("separated_items", {"separator": "!?!?"}, [{"kind": "structure", "params": {"layout": "list"}}], "text"),
        ("template", {"lines": ["Dish: {}", "Price: {}"]},
         [{"kind": "count", "params": {"unit": "lines", "relation": "exactly", "n": 2}}], "text"),
        ("char_count", {"chars": ":;", "relation": "at most", "n": 0},
         [{"kind": "count", "params": {"unit": "punctuation", "relation": "at least", "n": 1,
                                        "filter": {"chars": ":："}}}], "bound"),
        ("bullet_items", {"relation": "exactly", "n": 6}, [{"kind": "structure", "params": {"layout": "list"}}],
         "number"),
        # a type the reading does not mark is still missing
        ("sentence_type_balance", {"kinds": ["questions", "statements"], "min": 2},
         [{"kind": "count", "params": {"unit": "sentences", "relation": "at least", "n": 2,
                                       "filter": {"ends_with": "!"}}}], "text"),
    ],
)
def test_a_reading_against_the_judge_is_misread(
    judge_id: str, args: dict[str, Any], extracted: Reading, reason: str
) -> None:
    why = misread(judge_id, args, extracted)
    assert why is not None and why.startswith(reason), why


@pytest.mark.parametrize(
    ("judge_id", "args", "extracted", "context"),
    [
        ("word_count", {"relation": "less than", "n": 20}, [{"kind": "word_count", "params": {"relation": "at most",
                                                                                                "n": 19}}], []),
        ("keyword_in_sentence", {"keyword": "eat", "k": 6},
         [{"kind": "position", "params": {"unit": "sentences", "op": "contains", "text": "eat", "k": 6}}], []),
        ("char_count", {"chars": ",，", "relation": "at most", "n": 0}, [{"kind": "no_comma", "params": {}}], []),
        ("sentence_start", {"k": "every", "text": "The"},
         [{"kind": "position", "params": {"unit": "sentences", "op": "starts_with", "text": "The", "k": 0}}], []),
        ("paragraph_balance", {"n": 2, "max_diff": 10},
         [{"kind": "spread", "params": {"unit": "words", "per": "paragraphs", "max_diff": 10}}],
         [{"kind": "count", "params": {"unit": "paragraphs", "relation": "exactly", "n": 2}}]),
        # a sentence type named by the judge is its end mark in the form
        ("sentence_type_balance", {"kinds": ["questions", "statements"], "min": 2},
         [{"kind": "count", "params": {"unit": "sentences", "relation": "exactly", "n": 0,
                                       "filter": {"ends_with": "?"}, "of": {"unit": "sentences",
                                                                            "filter": {"ends_with": "."}},
                                       "fraction": 1.0}},
          {"kind": "count", "params": {"unit": "sentences", "relation": "at least", "n": 2,
                                       "filter": {"ends_with": "?"}}}], []),
        # a template line's slots ({}) are compared by the line's literal pieces
        ("template", {"lines": ["Dish: {}", "Price: {}"]},
         [{"kind": "regex_format", "params": {"pattern": "Dish:\\s+[^\\n]{1,120}\\s+Price:\\s+[^\\n]{1,120}"}}], []),
    ],
)
def test_a_reading_that_carries_the_judges_parameters_is_not(
    judge_id: str, args: dict[str, Any], extracted: Reading, context: Reading
) -> None:
    assert misread(judge_id, args, extracted, context) is None


def test_a_missed_or_unrecognised_instruction_is_never_misread() -> None:
    assert misread("keyword_in_sentence", {"keyword": "eat", "k": 6}, []) is None


def test_the_extraction_only_report_counts_misread_beside_the_statuses() -> None:
    rows = load(HELDOUT.data, HELDOUT.judges)[:6]
    report = extraction_report(rows, HELDOUT)
    counts = report["extraction"]
    assert counts["recognised"] + counts["unrecognised"] + counts["missed"] == report["n_instructions"]
    assert counts["misread"] == len(report["misreadings"]) <= counts["recognised"]
    assert report["misread_share"] == round(counts["misread"] / report["n_instructions"], 4)


def test_the_command_reports_every_set_named_with_its_share(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from bench.misread import main

    assert main(["--sets", "heldout"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    figures = report["sets"]["heldout"]
    assert figures["n_instructions"] == sum(len(r["instructions"]) for r in load(HELDOUT.data, HELDOUT.judges))
    assert figures["misread_share"] == round(figures["misread"] / figures["n_instructions"], 4)
    assert report["max_misread_share"] == figures["misread_share"]
