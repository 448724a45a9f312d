"""bench.heldout5: each judge on hand-written answers, the new readings, the set's shape (no model)."""

from __future__ import annotations

import json

import pytest

from bench.heldout import DATA as FIRST_DATA
from bench.heldout import HELDOUT, load, select
from bench.heldout_judge import sets
from bench.heldout_judge.characters import quote_depth
from bench.heldout_judge.readings import blocks, sentence_kind, split_sentences
from tests.bench.judge_cases import Case, check_case, check_table

SECOND, THIRD, FOURTH = (sets.suite(name) for name in ("heldout2", "heldout3", "heldout4"))
SUITE = sets.suite("heldout5")
DATA = SUITE.data
JUDGES = SUITE.judges
NEW_FAMILIES = SUITE.new_families
judge = SUITE.grade

Q, S, E = "questions", "statements", "exclamations"

#: judge id -> (args, an answer that meets it, one that does not).
CASES: dict[str, Case] = {
    "word_count": (
        {"relation": "less than", "n": 5},
        "The bridge opened today.",
        "The new bridge opened on Monday.",
    ),
    "sentence_end": ({"chars": "!！"}, "Bring the card! 冲啊！", "Bring the card! 冲啊。"),
    "letter_absent": ({"letter": "e"}, "A warm sun on soft grass.", "A warm sun on the grass."),
    "spans": (
        {"pairs": [["(", ")"]], "relation": "exactly", "n": 2},
        "Heat moves (like a fridge) outside (even in winter).",
        "Heat moves (like a fridge) outside.",
    ),
    "numbered_items": (
        {"relation": "exactly", "n": 2},
        "1. touch things\n2. see stars",
        "1. touch things\n- see stars",
    ),
    "sentence_count": ({"relation": "exactly", "n": 2}, "加油！我们能赢！", "加油，我们能赢！"),
    "paragraph_count": ({"relation": "exactly", "n": 2}, "Lemons.\n\nIce.", "Lemons.\nIce."),
    "lines": (
        {"relation": "exactly", "n": 2},
        "Wings Over Town\nBirds of our streets.",
        "Wings Over Town",
    ),
    "lowercase": ({}, "1. you can touch things.", "1. You can touch things."),
    "opens_with": ({"text": "Listen up:"}, "Listen up: you trained.", "You trained. Listen up:"),
    "paragraph_end": (
        {"k": "every", "text": "Stay tuned."},
        "Clocks arrive. Stay tuned.\n\nA visit. Stay tuned.",
        "Clocks arrive. Stay tuned.\n\nA visit.",
    ),
    "sentence_end_word": (
        {"k": -2, "word": "moon"},
        "She saw the moon. She slept.",
        "She saw the moon rise. She slept.",
    ),
    "line_end": ({"chars": ";；"}, "Lock up;\n关灯；", "Lock up;\n关灯。"),
    "forbidden_words": (
        {"words": ["gas", "bubbles"]},
        "Yeast breathes out air.",
        "Yeast makes gas.",
    ),
    "acrostic": ({"word": "春节"}, "春风送暖\n节日欢歌", "节日欢歌\n春风送暖"),
    "numbered_sequence": (
        {"numbers": [3, 2, 1]},
        "3. Olives\n2. Basil\n1. Ham",
        "1. Ham\n2. Basil\n3. Olives",
    ),
    "sentence_k_end": (
        {"k": -2, "chars": "?？"},
        "Ready? Go. 好吗？走。",
        "Ready? Go. 好吗？走。好。",
    ),
    "response_language": (
        {"language": "fr"},
        "Bonjour, pourriez-vous me prêter votre échelle samedi ?",
        "Hello, could I borrow your ladder on Saturday?",
    ),
    "title_case": ({}, "Wings Over the Rooftops", "Wings over the rooftops"),
    "sentence_types": ({Q: 1, E: 1, S: 1}, "Why? Wow! Sit down.", "Why? Wow! Sit down. Now!"),
    "sentence_type_balance": (
        {"kinds": [Q, S], "min": 2},
        "Who? Kids. When? Weekdays.",
        "Who? Kids. When? Weekdays, mostly!",
    ),
    "sentence_type_pattern": (
        {"pattern": [Q, S]},
        "食堂在哪？在东边。几点开门？八点。",
        "食堂在哪？在东边。八点开门。几点？",
    ),
    "emoji_sentence_end": ({}, "Rep counts 💪! 生日快乐🎂。 Go! 🔥", "Rep counts 💪! Keep going."),
    "paragraph_keyword": (
        {"k": -2, "keyword": "rain"},
        "Hills.\n\nThe rain fell.\n\nHome.",
        "Hills.\n\nSun.\n\nThe rain fell.",
    ),
    "paragraph_sentences": (
        {"k": 1, "relation": "exactly", "n": 1},
        "我们搬家了。\n\n很累。很开心。",
        "我们搬家了。很累。\n\n很开心。",
    ),
    "paragraph_sentence_ratio": (
        {"first": 1, "second": 2, "ratio": 2},
        "Less commuting.\n\nYet it costs. Teams drift.",
        "Less commuting.\n\nYet it costs. Teams drift. Calls help.",
    ),
    "line_is": (
        {"k": -2, "text": "Kind regards,"},
        "Fix it, please.\n**Kind regards,**\nPriya",
        "Fix it, please.\nKind regards, Priya",
    ),
    "list_marker": (
        {"marker": "->", "relation": "exactly", "n": 2},
        "Pack:\n-> Goggles\n-> Gloves",
        "-> Goggles\n- Gloves\n-> Socks",
    ),
    "sub_bullets": (
        {"top": "*", "sub": "-", "min": 1, "relation": "exactly", "n": 2},
        "* Updates\n  - Sales\n* Hiring\n- Two roles",
        "* Updates\n  - Sales\n* Hiring\n* Questions\n  - Open floor",
    ),
    "nested_numbering": (
        {"min": 2},
        "1. Paper\n1.1 Blue bins.\n1.2. Flatten boxes.\n**2. Glass**\n2.1 Green bin.\n2.2 No shards.",
        "1. Paper\n1.1 Blue bins.\n1.2 Flatten boxes.\n2. Glass\n2.1 Green bin.",
    ),
    "quote_depth": (
        {"n": 3},
        "He said, \"Leo told me, 'Grandma says \u201cdogs need fibre.\u201d' Don't laugh.\"",
        "He said, \"Leo told me, 'Grandma says dogs need fibre.' Don't laugh.\"",
    ),
    "keyword_ratio": (
        {"more": "tea", "less": "coffee", "ratio": 2},
        "Tea first, coffee later, tea again.",
        "Tea first, coffee later, teas again.",
    ),
    "section_items_ratio": (
        {"more": "Pros", "less": "Cons", "ratio": 2},
        "## Pros\n- Cheap\n- Fast\n\n**Cons:**\n- Rain",
        "Pros:\n- Cheap\n- Fast\n- Fun\nCons:\n- Rain",
    ),
    "nth_word_upper": (
        {"n": 3},
        "Taste the NIGHT, share the JOY",
        "Taste the NIGHT, SHARE the JOY",
    ),
    "alternating_script": (
        {"first": "han"},
        "我的家乡在杭州。It has a lake. 龙井茶很香。",
        "我的家乡在杭州。It has a West Lake 西湖。龙井茶很香。",
    ),
    "sentence_mixed_script": ({}, "早餐是milk。还有toast！", "早餐是milk。还有面包！"),
    "word_vowel_kinds": ({"max": 2}, "The cat naps in the sun.", "The cat naps outside."),
    "initials_class": (
        {"scope": "sentences", "class": "vowel"},
        "Every day we swam. Our hut was small. **In** June it rained.",
        "Every day we swam. The hut was small.",
    ),
    "consonant_clusters": (
        {"relation": "at least", "n": 3},
        "A green frog sat by the stream.",
        "The thin frog sat by the pond.",
    ),
    "shared_words": (
        {"min": 2},
        "Love grows in laughter. Cheers. May love keep growing in laughter.",
        "Love grows in laughter. Cheers. May you both be happy in the garden.",
    ),
    "line_han_count": ({"n": 4}, "春风送暖，\n节日欢歌。", "春风送暖\n节日欢歌声"),
}


def test_every_judge_has_a_case_and_a_documented_reading() -> None:
    check_table(CASES, JUDGES)


@pytest.mark.parametrize("judge_id", sorted(CASES))
def test_judge_passes_the_meeting_answer_and_fails_the_other_and_an_empty_one(
    judge_id: str,
) -> None:
    check_case(judge, judge_id, CASES[judge_id], empty_fails=True)


def test_readings_added_by_this_set() -> None:
    # A decimal point, a doubled end mark and a closing quote do not cut a sentence; a line break does.
    assert split_sentences('It weighs 3.5 kg. Ok?! He said "fine." 好的！\nNext') == [
        "It weighs 3.5 kg.",
        "Ok?!",
        'He said "fine."',
        "好的！",
        "Next",
    ]
    assert [sentence_kind(s) for s in ("Why?”", "Wow!**", "Fine", "好吗？")] == [Q, E, S, Q]
    assert blocks("One.\n  \nTwo.\n\n\n---") == ["One.", "Two."]
    # Apostrophes are no quotation marks; Chinese corner and curly quotes nest; a pair left open fails.
    assert quote_depth("the dogs' bowls and don't \"x\"") == 1
    assert quote_depth("「小明说：『妈妈说“早点睡”。』」") == 3
    assert quote_depth("“妈妈说：‘外婆讲，早睡好。’所以睡了。”") == 2
    assert quote_depth('"open') == -1
    # A digraph or silent letter is one sound, a y after the first letter a vowel.
    assert judge(
        "consonant_clusters", {"relation": "exactly", "n": 2}, "Three knights try the thin ship."
    )
    # A single capital letter ('I', 'A') is not a word in capitals.
    assert judge("nth_word_upper", {"n": 2}, "I SAW a DOG")
    # A sub-item marker equal to the top marker must be indented to be a sub-item.
    assert judge(
        "sub_bullets", {"top": "-", "sub": "-", "min": 1}, "- Plan\n  - Beds\n- Water\n  - Daily"
    )
    assert not judge("sub_bullets", {"top": "-", "sub": "-", "min": 1}, "- Plan\n- Beds")
    # A ratio needs the lesser count to be at least one.
    assert not judge("keyword_ratio", {"more": "猫", "less": "狗", "ratio": 2}, "没有宠物。")
    with pytest.raises(KeyError):
        judge("no_such_judge", {}, "text")


def test_new_families_are_judged_by_no_earlier_set() -> None:
    earlier = (
        set(HELDOUT.judges)
        | set(SECOND.judges)
        | set(THIRD.judges)
        | set(FOURTH.judges)
    )
    assert NEW_FAMILIES <= set(JUDGES)
    assert not NEW_FAMILIES & earlier
    assert set(JUDGES) - NEW_FAMILIES - earlier == {"line_han_count"}


def test_set_is_held_out_sized_and_consistent() -> None:
    rows = load(DATA, JUDGES)
    assert SUITE.data == DATA and SUITE.name not in (
        HELDOUT.name,
        SECOND.name,
        THIRD.name,
        FOURTH.name,
    )
    assert len(rows) == 60
    instructions = [i for r in rows for i in r["instructions"]]
    assert 80 <= len(instructions) <= 100
    assert sum(i["judge"] in NEW_FAMILIES for i in instructions) >= 0.3 * len(instructions)
    assert all(i["span"] in r["prompt"] for r in rows for i in r["instructions"])
    assert len({r["key"] for r in rows}) == len(rows)
    assert len({r["prompt"] for r in rows}) == len(rows)
    assert {r["language"] for r in rows} == {"en", "zh", "mixed"}
    assert sum(r["language"] != "en" for r in rows) >= len(rows) // 3
    assert all(1 <= len(r["instructions"]) <= 3 for r in rows)
    assert sum(len(r["instructions"]) == 3 for r in rows) >= 2
    assert {i["judge"] for i in instructions} == set(JUDGES)
    quick = select(rows, quick=True, limit=None)
    assert len(quick) == 16
    assert any(r["language"] != "en" for r in quick)


def test_no_prompt_is_taken_from_an_earlier_set() -> None:
    earlier = {
        json.loads(line)["prompt"]
        for path in (FIRST_DATA, SECOND.data, THIRD.data, FOURTH.data)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert not earlier & {r["prompt"] for r in load(DATA, JUDGES)}
