"""bench.heldout4: each judge on hand-written answers, the new readings, the set's shape (no model)."""

from __future__ import annotations

import json

import pytest

from bench.heldout import DATA as FIRST_DATA
from bench.heldout import HELDOUT, load, select
from bench.heldout_judge import sets
from bench.heldout_judge.readings import CONJUNCTIONS, PRONOUNS, STOP_WORDS, emoji_sentences
from tests.bench.judge_cases import Case, check_case, check_table

SECOND, THIRD = sets.suite("heldout2"), sets.suite("heldout3")
SUITE = sets.suite("heldout4")
DATA = SUITE.data
JUDGES = SUITE.judges
judge = SUITE.grade

#: judge id -> (args, an answer that meets it, one that does not).
CASES: dict[str, Case] = {
    "word_count": ({"lo": 3, "hi": 4}, "Bring warm socks.", "Socks."),
    "numbers": ({"relation": "at least", "n": 2}, "Pack 2 towels and 1.5 litres.", "Pack two towels."),
    "emoji": ({"relation": "at least", "n": 2}, "Happy day 🎂💐", "Happy day 🎂"),
    "word_at": ({"k": -1, "word": "coffee"}, "Toast, eggs and Coffee.", "Coffee, toast and eggs."),
    "max_word_length": ({"n": 6}, "The chain runs over cogs.", "The chain runs over sprockets."),
    "lines": ({"relation": "exactly", "n": 2}, "Kettle broken.\n\nBuy one?", "Kettle broken. Buy one?"),
    "nested_list": (
        {"top": 2, "sub_min": 2, "sub_max": 2},
        "- Train\n  - Fast\n  - Comfy\n- Plane\n  - Quick\n  - Far",
        "- Train\n  - Fast\n- Plane\n  - Quick\n  - Far",
    ),
    "numbered_items": ({"relation": "exactly", "n": 2}, "1. Shrine\n2) Market", "1. Shrine\n- Market"),
    "ends_with_char": ({"chars": "!"}, "HOLD THE RAIL!", "HOLD THE RAIL."),
    "sentence_count": ({"relation": "exactly", "n": 2}, "猫要驱虫。这样更健康！", "猫要驱虫，这样更健康。"),
    "paragraph_count": ({"relation": "exactly", "n": 2}, "熊猫吃竹子。\n\n总之要保护。", "熊猫吃竹子。\n总之要保护。"),
    "lowercase": ({}, "- tent\n- torch", "- Tent\n- torch"),
    "uppercase": ({}, "GO, TIGERS, GO! 加油！", "GO, Tigers, GO!"),
    "json": (
        {"type": "object", "keys": ["title", "year"]},
        '```json\n{"title": "霸王别姬", "year": 1993}\n```',
        '{"title": "霸王别姬"}',
    ),
    "ends_with_text": ({"text": "See you soon!"}, "Thanks again. **See you soon!**", "See you soon! Thanks again."),
    "opens_with": ({"text": "In chess,"}, "In chess, the king castles.", "Castling, in chess, moves the king."),
    "title_line": ({"pairs": [["<<", ">>"]]}, "<<Day in Kyoto>>\n1. Shrine", "Day in Kyoto\n<<1. Shrine>> later"),
    "marker_lines": (
        {"regex": "Part [123]\\b", "relation": "exactly", "n": 2},
        "Part 1: pot\n**Part 2**: soil",
        "Part 1: pot, then Part 2: soil",
    ),
    "bullet_items": ({"relation": "exactly", "n": 2}, "- 深蹲\n- 平板支撑", "1. 深蹲\n2. 平板支撑"),
    "postscript": ({"marker": "PS:"}, "Hi Sam,\nCome Friday.\nPS: bring Catan.", "PS: bring Catan."),
    "no_latin": ({}, "龙井茶清香。", "龙井茶（Longjing）清香。"),
    "item_max_chars": ({"n": 5}, "- 每天深蹲\n- 练核心", "- 每天做二十个深蹲\n- 练核心"),
    "paragraph_start": ({"k": 2, "text": "总之"}, "熊猫吃竹子。\n\n总之，要保护。", "总之，熊猫吃竹子。\n\n要保护。"),
    "sentence_balance": ({"max_diff": 1}, "Start early. Test yourself often.", "Start early. Test yourself with old papers."),
    "max_word_repeat": ({"n": 2}, "Good pizza, good crust.", "Good pizza, good crust, good staff."),
    "keyword_count": ({"keyword": "阳光", "relation": "at least", "n": 2}, "阳光足，阳光好。", "光照足，阳光好。"),
    "keywords_all": ({"words": ["encryption", "Wi-Fi"]}, "On Wi-Fi, encryption helps.", "On WiFi, encryption helps."),
    "forbidden_words": ({"words": ["easy"]}, "Take it easily.", "Keep it easy."),
    "wrapped": ({"pairs": [["「", "」"]]}, "「秋天是金色的。」", "「秋天」是金色的。"),
    "response_language": ({"language": "es"}, "¡Hola! Mi vuelo aterriza a las seis de la tarde.", "Hi! My flight lands at six in the evening."),
    "answer_is_one_of": ({"options": ["Mercury", "Venus", "Mars"]}, "**Mercury.**", "It is Mercury."),
    "lines_start_seq": ({"texts": ["先", "再", "最后"]}, "先烧锅底。\n再下菜。\n最后下面。", "先烧锅底。\n最后下面。\n再下菜。"),
    "stop_word_share": (
        {"max_ratio": 0.34},
        "Feed starter daily: equal flour and water.",
        "You should feed the starter with some of the flour.",
    ),
    "conjunction_kinds": (
        {"relation": "at least", "n": 3},
        "We rest because it is hot, and if it rains we stay.",
        "We rest for an hour and then we walk and talk.",
    ),
    "pronoun_count": ({"relation": "at most", "n": 0}, "Meet the feeder: meals on time.", "Meet the feeder: it serves meals."),
    "palindromes": ({"relation": "at least", "n": 2}, "At noon the kayak left.", "At noon, noon again, we left."),
    "alphabet_chain": ({}, "Xylophones yell zealously, and boys cheer.", "A baker cooked eclairs."),
    "last_first_chain": ({}, "Rain fell on the roof. Roof tiles shone.", "Rain fell on the roof. Tiles shone."),
    "word_in_sentence_at": (
        {"k": 2, "m": 2, "word": "morning"},
        "Water deeply. Early Morning is best.",
        "Water early in the morning. Early evening is worse.",
    ),
    "unique_ratio": ({"min_ratio": 0.8}, "Quiet rooms, kind staff, old maps.", "The book, the book, the book."),
    "marks_all": ({"chars": ",:;?!"}, "Note: kettle broken; buy one, ok? Thanks!", "Note: kettle broken, buy one? Thanks!"),
    "keyword_counts": (
        {"counts": {"chain": 1, "tyres": 2}},
        "New tyres, a clean chain and spare Tyres.",
        "New tyres, a clean chain and chains.",
    ),
    "repeat_with_change": (
        {"text": "Our train leaves the station at noon."},
        "Our bus leaves the station at noon. Pack snacks.",
        "Our train leaves the station at noon. Pack snacks.",
    ),
    "sentences_growing": (
        {"min_sentences": 3},
        "Light. The sky glows. Gulls call over the sand.",
        "Light. The sky glows pink now. Gulls call.",
    ),
    "keyword_in_sentence": (
        {"k": 2, "keyword": "leash"},
        "Dogs need walks. Use a Leash near roads.",
        "Dogs need a leash. Walks help.",
    ),
    "separated_line": (
        {"separator": "|", "n": 3},
        "Spices:\nCumin | Cloves|Smoked paprika",
        "Cumin | Cloves | Smoked paprika | Mace",
    ),
    "emoji_per_sentence": (
        {"relation": "exactly", "n": 1},
        "Party on Saturday! 🎉 Bring food 🍲.",
        "Party on Saturday! 🎉🎶 Bring food 🍲.",
    ),
    "template": (
        {"lines": ["Name: {}", "Call: {}"]},
        "**Name:** Biscuit\nCall: 555-0142",
        "Name: Biscuit\nCall:",
    ),
    "title_case": (
        {},
        "# Neighbours Turn a Lot into 40 Garden Beds\nVolunteers planted them.",
        "Neighbours turn a lot into garden beds\nVolunteers planted them.",
    ),
    "csv": (
        {"header": ["item", "quantity"], "relation": "exactly", "n": 2},
        "```csv\nItem, Quantity\nflour,\"2 cups, sifted\"\neggs,4\n```",
        "item,quantity\nflour,2 cups,sifted\neggs,4",
    ),
    "bracket_depth": ({"n": 3}, "2 * {3 + [4 - (1 + 1)]} = 10", "2 * {3 + [4 - (1 + 1}] = 10"),
    "one_word_lines": ({}, "Leaves\n\n- Crimson\nDusk.", "Leaves\nCrimson wind\nDusk"),
    "punctuation_only": ({"chars": "。"}, "长城很长。它很古老。", "长城很长，它很古老。"),
    "question_count": ({"relation": "exactly", "n": 2}, "Ready? Who wins？ Let's go.", "Ready? Who wins? Which team? Go."),
}


def test_every_judge_has_a_case_and_a_documented_reading() -> None:
    check_table(CASES, JUDGES)


@pytest.mark.parametrize("judge_id", sorted(CASES))
def test_judge_passes_the_meeting_answer_and_fails_the_other_and_an_empty_one(judge_id: str) -> None:
    check_case(judge, judge_id, CASES[judge_id], empty_fails=True)


def test_readings_added_by_this_set() -> None:
    # The word lists are closed, lower-case and keep ambiguous words out of the conjunctions.
    assert {"for", "since", "after"}.isdisjoint(CONJUNCTIONS)
    assert all(w == w.casefold() for w in CONJUNCTIONS | PRONOUNS | STOP_WORDS)
    assert judge("pronoun_count", {"relation": "exactly", "n": 2}, "Mine is older than Yours.")
    # An emoji right after a sentence's end mark belongs to that sentence.
    assert emoji_sentences("Done! 🎉 Next one 🎶.") == ["Done! 🎉", "Next one 🎶."]
    assert emoji_sentences("🎉 Party time.") == ["🎉 Party time."]
    # Palindromes need three letters; the alphabet wraps from z to a.
    assert not judge("palindromes", {"relation": "at least", "n": 1}, "I saw a bb gun.")
    assert judge("alphabet_chain", {}, "Yes, zebras always bite.")
    # Brackets must pair in order; depth alone is not enough.
    assert not judge("bracket_depth", {"n": 1}, "(a] [b)")
    # A list marker opening a line is no bracket; a full-width colon fills a template's ASCII one.
    assert judge("bracket_depth", {"n": 2}, "1) Work inwards: [2 * (3 + 1)]\na) Then add.")
    assert judge("template", {"lines": ["姓名：{}"]}, "姓名: 李明")
    # Any punctuation outside the allowed set fails, apostrophes included.
    assert not judge("punctuation_only", {"chars": "."}, "Tomorrow's sky is grey.")
    # Title case lets minor words stay lower case, not the first or last word.
    assert not judge("title_case", {}, "the Garden Opens")
    assert not judge("title_case", {}, "What the Garden Is For and of")
    with pytest.raises(KeyError):
        judge("no_such_judge", {}, "text")


def test_set_is_held_out_sized_and_consistent() -> None:
    rows = load(DATA, JUDGES)
    assert SUITE.data == DATA and SUITE.name not in (
        HELDOUT.name,
        SECOND.name,
        THIRD.name,
    )
    assert len(rows) == 60
    assert 75 <= sum(len(r["instructions"]) for r in rows) <= 85
    assert len({r["key"] for r in rows}) == len(rows)
    assert len({r["prompt"] for r in rows}) == len(rows)
    assert {r["language"] for r in rows} == {"en", "zh", "mixed"}
    assert sum(r["language"] != "en" for r in rows) >= len(rows) // 3
    assert all(1 <= len(r["instructions"]) <= 3 for r in rows)
    assert sum(len(r["instructions"]) == 3 for r in rows) >= 2
    used = {i["judge"] for r in rows for i in r["instructions"]}
    assert used == set(JUDGES)
    quick = select(rows, quick=True, limit=None)
    assert len(quick) == 16
    assert any(r["language"] != "en" for r in quick)


def test_no_prompt_is_taken_from_an_earlier_set() -> None:
    earlier = {
        json.loads(line)["prompt"]
        for path in (FIRST_DATA, SECOND.data, THIRD.data)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert not earlier & {r["prompt"] for r in load(DATA, JUDGES)}
