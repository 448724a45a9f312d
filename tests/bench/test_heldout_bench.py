"""bench.heldout: the judges on hand-written answers, the set's shape, extraction matching, a smoke run."""

from __future__ import annotations

from typing import Any

import pytest

from bench.heldout import DATA, HELDOUT, extraction_status, load, run, select
from bench.heldout_judge.readings import emoji_count, sentences, words
from tests.bench.judge_cases import Case, check_case, check_table

PARENS = [["(", ")"], ["（", "）"]]
QUOTES = [['"', '"'], ["“", "”"]]
JUDGES = HELDOUT.judges
judge = HELDOUT.grade

#: judge id -> (args, an answer that meets it, one that does not).
CASES: dict[str, Case] = {
    "word_count": (
        {"lo": 3, "hi": 5},
        "It is well-known, really.",
        "Far too many words are written here.",
    ),
    "unique_words": (
        {"relation": "at least", "n": 4},
        "Red blue green pink.",
        "Red red red red red.",
    ),
    "char_count": ({"chars": "!！", "relation": "at least", "n": 3}, "Yes! 好！ Go!", "Yes! Go!"),
    "numbers": (
        {"relation": "at most", "n": 1},
        "Add 2.5 cups of flour.",
        "Add 2 eggs and 250 g of flour.",
    ),
    "emoji": (
        {"relation": "at least", "n": 2},
        "Party 🎉 time 👍🏽",
        "Party 👨\u200d👩\u200d👧 time",
    ),
    "hashtags": (
        {"relation": "exactly", "n": 2},
        "Open now #bakery #fresh",
        "Open now #bakery, room #5",
    ),
    "word_at": ({"k": 2, "word": "glass"}, "A glass slipper.", "A slipper of glass."),
    "initial_count": ({"letter": "w", "relation": "at least", "n": 2}, "We walk.", "We run."),
    "no_adjacent_same_initial": ({}, "Dogs love running.", "Dogs do love running."),
    "letter_absent": ({"letter": "e"}, "A warm day, dull and dark.", "The rain fell."),
    "max_word_length": ({"n": 5}, "Boil the water.", "Boil the kettle."),
    "sentence_max_words": (
        {"n": 3},
        "Good coffee here. Nice staff!",
        "Good coffee here. The staff are nice.",
    ),
    "sentence_max_chars": ({"n": 6}, "熊猫很可爱。它们吃竹子。", "熊猫是一种非常可爱的动物。"),
    "sentence_end": ({"chars": "!"}, "Dream big! Work hard!", "Dream big! Work hard."),
    "chars": ({"relation": "less than", "n": 12}, "  Save money.  ", "Save your money."),
    "nonspace_chars": ({"relation": "at most", "n": 4}, "春天 很好", "春天很美好"),
    "lines": (
        {"relation": "exactly", "n": 3},
        "Leaves fall\n\nwind sings\nnight comes",
        "Leaves fall\nwind sings",
    ),
    "no_list": ({}, "A bill starts in Congress. Then it passes.", "Steps:\n1. Congress votes."),
    "numbered_items": (
        {"relation": "exactly", "n": 2},
        "1. Mercury\n2) Venus",
        "1. Mercury\n- Venus",
    ),
    "nested_list": (
        {"top": 2, "sub_min": 1},
        "- Food\n  - bread\n- Gear\n    * tent",
        "- Food\n  - bread\n- Gear",
    ),
    "table_rows": (
        {"relation": "exactly", "n": 2},
        "| Drink | Taste |\n|---|---|\n| Tea | mild |\n| Coffee | bold |",
        "| Drink | Taste |\n| Tea | mild |\n| Coffee | bold |",
    ),
    "wrapped": ({"pairs": PARENS}, "（人工智能是一门科学。）", "(AI is a science.) Done."),
    "spans": (
        {"pairs": QUOTES, "relation": "at least", "n": 2},
        'She said "go" and “stop”.',
        'She said "" and "go".',
    ),
    "starts_with": (
        {"text": "what are two healthy habits?"},
        "What are  two healthy habits? Sleep.",
        "Two habits.",
    ),
    "ends_with_char": ({"chars": "?？"}, "Will you join us?”", "Join us? Thanks."),
}


def test_every_judge_has_a_case_and_a_documented_reading() -> None:
    check_table(CASES, JUDGES)


@pytest.mark.parametrize("judge_id", sorted(CASES))
def test_judge_accepts_the_meeting_answer_and_refuses_the_other(judge_id: str) -> None:
    check_case(judge, judge_id, CASES[judge_id], empty_fails=False)


def test_shared_readings() -> None:
    assert words("Don't stop, well-known 2.5") == ["Don't", "stop", "well-known", "2", "5"]
    assert sentences("- Tea is mild.\nCoffee? Yes! 好。") == [
        "- Tea is mild.",
        "Coffee?",
        "Yes!",
        "好。",
    ]
    assert emoji_count("👍🏽 👨\u200d👩\u200d👧 ❤️") == 3
    assert not judge("no_list", {}, "")  # an empty answer (a refused run) fails
    with pytest.raises(KeyError):
        judge("no_such_judge", {}, "text")


def test_set_is_held_out_sized_and_consistent() -> None:
    rows = load(DATA)
    assert len(rows) >= 40
    assert len({r["key"] for r in rows}) == len(rows)
    assert sum(r["language"] != "en" for r in rows) >= len(rows) // 4
    assert all(1 <= len(r["instructions"]) <= 2 for r in rows)
    quick = select(rows, quick=True, limit=None)
    assert 12 <= len(quick) <= 16


def test_extraction_status_reads_overlapping_spans() -> None:
    prompt = "Describe tea. Use no colons. Rhyme every line."
    report = {
        "constraints": [
            {"kind": "count", "params": {"unit": "punctuation"}, "source": {"start": 14, "end": 28}}
        ],
        "unrecognised": [{"start": 29, "end": 46, "text": "Rhyme every line."}],
    }
    assert extraction_status(prompt, "Use no colons.", report) == (
        "recognised",
        [{"kind": "count", "params": {"unit": "punctuation"}}],
    )
    assert extraction_status(prompt, "Rhyme every line.", report) == ("unrecognised", [])
    assert extraction_status(prompt, "Describe tea.", report) == ("missed", [])


@pytest.mark.model
async def test_one_prompt_through_the_api_both_arms(
    model_client: Any, model_admin_headers: dict[str, str]
) -> None:
    rows = [r for r in load(DATA) if r["key"] == "en-sky"]
    report = await run(rows, model_client, model_admin_headers, budget=12)
    assert report["n_prompts"] == 1 and report["n_instructions"] == 1
    row = report["rows"][0]
    for arm in ("steered", "plain"):
        assert row[arm]["status"] == "ok" and row[arm]["answer"]
        assert row[arm]["verdicts"] == [
            judge("numbers", {"relation": "at most", "n": 0}, row[arm]["answer"])
        ]
    assert row["instructions"][0]["extraction"] in ("recognised", "unrecognised", "missed")
    assert report["gain_points"] == round(
        100 * (report["steered"]["instruction_strict"] - report["plain"]["instruction_strict"]), 1
    )
