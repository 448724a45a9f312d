"""bench.heldout3: each judge on hand-written answers, the new readings, the set's shape (no model)."""

from __future__ import annotations

import json

import pytest

from bench.heldout import DATA as FIRST_DATA
from bench.heldout import HELDOUT, load, select
from bench.heldout_judge import sets
from bench.heldout_judge.readings import lines
from tests.bench.judge_cases import Case, check_case, check_table

DQ = [['"', '"'], ["“", "”"]]
SECOND = sets.suite("heldout2")
SUITE = sets.suite("heldout3")
DATA = SUITE.data
JUDGES = SUITE.judges
judge = SUITE.grade
ISO = r"(?<!\d)\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?!\d)"

#: judge id -> (args, an answer that meets it, one that does not).
CASES: dict[str, Case] = {
    "word_count": ({"relation": "at most", "n": 3}, "Refunds take time.", "Refunds take some time."),
    "char_count": ({"chars": "、", "relation": "at least", "n": 2}, "虚开、重复、拆分。", "虚开、重复和拆分。"),
    "lines": ({"relation": "exactly", "n": 2}, "Due soon\n\nSubmit", "Due soon"),
    "spans": (
        {"pairs": [["《", "》"]], "relation": "at least", "n": 2},
        "推荐《合规实务》和《反洗钱》。",
        "推荐《合规实务》和《》。",
    ),
    "sentence_max_words": ({"n": 4}, "Keep data lean. Delete it later.", "Keep only the data you need."),
    "sentence_count": ({"relation": "exactly", "n": 1}, "违规有虚开、重复报销。", "违规有虚开。还有重复报销。"),
    "paragraph_count": ({"relation": "exactly", "n": 3}, "A.\n\nB.\n\nC.", "A.\n\nB.\nC."),
    "lowercase": ({}, "tone at the top matters.", "Tone at the top matters."),
    "uppercase": ({}, "LOCK THE DOOR. 下班锁门。", "LOCK THE Door."),
    "caps_words": ({"relation": "at most", "n": 1}, "Buy FAIR trade, always.", "Buy FAIR trade, ALWAYS."),
    "json": (
        {"type": "object", "keys": ["name", "risk_level"]},
        '{"name": "张伟", "risk_level": "高"}',
        '{"name": "张伟", "risk": "高"}',
    ),
    "ends_with_text": ({"text": "辛苦了！"}, "Thanks for the audit. 辛苦了！", "辛苦了！Thanks again."),
    "opens_with": (
        {"text": "what documents show who owns a company?"},
        '"What documents show who owns a company?" The share register.',
        "The share register shows who owns a company.",
    ),
    "title_line": ({"pairs": [["《", "》"]]}, "《远程办公指南》\n锁屏。", "远程办公指南\n《锁屏》"),
    "marker_lines": (
        {"regex": "[一二三]、", "relation": "exactly", "n": 3},
        "一、上报\n二、隔离\n**三、**通知",
        "一、上报 二、隔离 三、通知",
    ),
    "paragraph_start": (
        {"k": 3, "text": "Finally"},
        "Gather files.\n\nBrief staff.\n\nFinally, book a room.",
        "Gather files.\n\nFinally, brief staff.\n\nBook a room.",
    ),
    "sentence_start": ({"k": "every", "text": "请"}, "请锁屏。请改密码！", "请锁屏。记得改密码。"),
    "bullet_items": ({"relation": "exactly", "n": 2}, "- Act fairly\n* Speak up", "1. Act fairly\n2. Speak up"),
    "postscript": ({"marker": "P.S."}, "Thanks,\nMaria\n\nP.S. Restore test on Friday.", "P.S. Thanks, Maria"),
    "latin_only": ({}, "A password manager remembers for you.", "A password manager 很好."),
    "han_chars": ({"relation": "at most", "n": 7}, "内部审计查风险。", "内部审计帮助发现风险。"),
    "wrapped": (
        {"pairs": DQ},
        "“‘职责分离’指把职责分开。”",
        "“职责分离”要求“审批”和“执行”分开”",
    ),
    "keyword_count": (
        {"keyword": "UBO", "relation": "exactly", "n": 2},
        "受益所有人（UBO）：识别UBO很关键。",
        "受益所有人（UBO）有多个UBOs。",
    ),
    "keywords_all": ({"words": ["encryption", "offsite"]}, "Use encryption and an offsite copy.", "Use encryption and an off-site copy."),
    "forbidden_words": ({"words": ["simply"]}, "Simplify the backups.", "Simply back up daily."),
    "acrostic": (
        {"word": "RISK"},
        "Read the contract\n**I**nspect the site\n- Sign nothing yet\nKeep notes",
        "Read the contract\nInspect the site\nKeep notes\nSign nothing yet",
    ),
    "items_sorted": (
        {},
        "- Circular trades\n- **goods** mispriced\n- Shell buyers",
        "- Shell buyers\n- Circular trades",
    ),
    "numbered_sequence": (
        {"numbers": [3, 2, 1]},
        "3. Poor evidence\n2) Weak follow-up\n1. No support",
        "1. No support\n2. Weak follow-up\n3. Poor evidence",
    ),
    "same_first_last_sentence": (
        {},
        "Turn on MFA today! It takes a minute. Turn on MFA today.",
        "Turn on MFA today. It takes a minute. Turn it on today.",
    ),
    "table_header": (
        {"cells": ["Risk", "Owner", "Due date"]},
        "| **Risk** | Owner | due date |\n|---|---|---|\n| Data loss | IT | 2025-03-01 |",
        "| Owner | Risk | Due date |\n|---|---|---|\n| IT | Data loss | 2025-03-01 |",
    ),
    "first_line_upper": ({}, "# RELEASE 2.3\n- Faster scans", "# Release 2.3\n- FASTER SCANS"),
    "regex_count": (
        {"regex": ISO, "relation": "at least", "n": 2},
        "Visit on 2025-05-12, report by 2025-05-30.",
        "Visit on 2025-05-12, report by 30/05/2025.",
    ),
    "keyword_only_in_sentence": (
        {"keyword": "deadline", "k": -1},
        "Managers sign. Compliance checks. Late ones miss the deadline.",
        "The deadline is fixed. Late ones miss the deadline.",
    ),
    "avg_sentence_words": ({"n": 3}, "Keep records. Delete them when due.", "Keep every record for years. Delete now."),
    "qa_pairs": (
        {"n": 2},
        "Q: Business class?\nA: Long flights only.\n**Q:** Meals?\nA： Upload receipts.",
        "Q: Business class?\nQ: Meals?\nA: Upload receipts.",
    ),
    "item_wrapped": (
        {"pairs": DQ},
        '- "Speak up."\n- “We listen”.',
        '- "Speak up."\n- We listen.',
    ),
    "items_with_digit": ({}, "- 超过90天催收\n- 额度5万元", "- 超过90天催收\n- 定期复核"),
    "paragraph_ratio": (
        {"first": 1, "second": 2, "min_ratio": 2},
        "Audit stays independent.\n\nReporting to the board protects findings from pressure.",
        "Audit stays independent.\n\nThe board protects it.",
    ),
    "double_letter_words": (
        {"relation": "at least", "n": 2},
        "Fresh coffee and still water.",
        "Coffee, coffee, more coffee.",
    ),
    "long_words": (
        {"min_letters": 12, "relation": "at least", "n": 2},
        "Accountability and responsibilities.",
        "Accountability, accountability and duties.",
    ),
    "sentence_words": (
        {"k": 2, "relation": "exactly", "n": 3},
        "An MLRO reviews reports. They file them. Done.",
        "An MLRO reviews reports. They file them quickly.",
    ),
    "keyword_more_than": (
        {"more": "risk", "less": "opportunity"},
        "Risk grows; credit risk too. It is an opportunity.",
        "Risks grow. It is an opportunity.",
    ),
    "exact_casing": ({"word": "eKYC"}, "Meet eKYC. eKYC is fast.", "Meet eKYC. EKYC is fast."),
    "heading_upper": ({}, "## SUMMARY\ntext\n### NEXT STEPS 2\nmore", "## SUMMARY\ntext\n### Next steps"),
    "sentence_start_not": (
        {"words": ["I"]},
        "My interest grew. In it, I thrived.",
        "My interest grew. I'm keen to join.",
    ),
    "item_word_count": (
        {"relation": "exactly", "n": 3},
        "- Act with integrity\n- Speak up early",
        "- Act with integrity\n- Speak up",
    ),
    "sentences_containing": ({"keyword": "data"}, "Collect less data. Delete Data early.", "Collect less data. Delete it early."),
    "sentence_k_end": ({"k": 2, "chars": "?？"}, "欢迎加入。准备好了吗？加油。", "欢迎加入。准备好了。你好吗？"),
    "last_line_wrapped": (
        {"pairs": [["[", "]"]]},
        "Tickets have value.\n**[Not acceptable]**.",
        "Tickets have value.\n[Not acceptable] without approval.",
    ),
    "lines_decreasing": ({}, "The deadline creeps\nI type fast\nSubmit.", "The deadline creeps\nI type faster now too\nSubmit."),
    "item_start_any": (
        {"options": ["[High]", "[Medium]", "[Low]"]},
        "- [High] Shared admin accounts\n- **[low]** Old policy",
        "- [High] Shared admin accounts\n- Old policy [Low]",
    ),
    "items_distinct_start": (
        {},
        "- Define terms.\n- Name owners.\n- Keep it short.",
        "- Define terms.\n- define owners.",
    ),
    "lines_match": (
        {"regex": r"[\u4e00-\u9fff]+\s*[（(]\s*[A-Za-z][A-Za-z' \-]*[A-Za-z]\s*[）)]"},
        "1. 反洗钱（Anti-Money Laundering）\n受益所有人 (Beneficial Owner)",
        "以下是术语：\n反洗钱（Anti-Money Laundering）",
    ),
    "lines_start_seq": (
        {"texts": ["第一", "第二", "第三"]},
        "第一，统一格式。\n- 第二，自动校验。\n第三，设定时限。",
        "第一，统一格式。\n第三，设定时限。\n第二，自动校验。",
    ),
    "line_repeat": (
        {"text": "安全第一", "relation": "exactly", "n": 2},
        "戴好安全帽。\n**安全第一**\n系好安全带。\n安全第一！",
        "戴好安全帽，安全第一。\n安全第一",
    ),
    "keywords_in_order": (
        {"words": ["识别", "评估", "应对"]},
        "先识别风险，再评估影响，最后应对，并再次识别新风险。",
        "先评估影响，再识别风险，最后应对。",
    ),
    "emphasis_spans": (
        {"relation": "at least", "n": 2},
        "It reads the *amount* and flags *missing VAT*.",
        "It reads the **amount** and flags *missing VAT*.",
    ),
    "separated_parts": (
        {"separator": "******", "n": 2, "distinct": True},
        "Our hotline is live.\n******\nSeen something wrong? Call us.",
        "Our hotline is live.\n******\nOur hotline is live.",
    ),
    "response_language": (
        {"language": "fr"},
        "Une déclaration de conflit d'intérêts indique les liens qui pourraient influencer vos décisions.",
        "A conflict-of-interest declaration lists ties that could sway your decisions.",
    ),
    "answer_is_one_of": ({"options": ["Yes", "No", "It depends"]}, "**It depends.**", "No, never."),
}


def test_every_judge_has_a_case_and_a_documented_reading() -> None:
    check_table(CASES, JUDGES)


@pytest.mark.parametrize("judge_id", sorted(CASES))
def test_judge_passes_the_meeting_answer_and_fails_the_other_and_an_empty_one(judge_id: str) -> None:
    check_case(judge, judge_id, CASES[judge_id], empty_fails=True)


def test_readings_added_by_this_set() -> None:
    assert lines(" a \n\n\tb\n") == ["a", "b"]
    # A Latin keyword between Han characters is a whole word; glued to Latin letters it is not.
    assert judge("keyword_count", {"keyword": "UBO", "relation": "exactly", "n": 1}, "识别UBO，")
    assert judge("forbidden_words", {"words": ["good"]}, "Goodness, what goodwill.")
    # Different delimiters must close at the end; equal ones cannot be told apart.
    assert judge("wrapped", {"pairs": [["(", ")"]]}, "((a) and (b))")
    assert not judge("wrapped", {"pairs": [["(", ")"]]}, "(a) and (b)")
    assert judge("wrapped", {"pairs": DQ}, '"a" and "b"')
    # A clitic after the word still begins the sentence with it.
    assert not judge("sentence_start_not", {"words": ["I"]}, "Hello. I’ve applied.")
    # A separator before the first part leaves an empty part.
    assert not judge("separated_parts", {"separator": "***", "n": 2}, "***\nOne.\n***\nTwo.")
    with pytest.raises(KeyError):
        judge("no_such_judge", {}, "text")


def test_set_is_held_out_sized_and_consistent() -> None:
    rows = load(DATA, JUDGES)
    assert SUITE.data == DATA and SUITE.name not in (HELDOUT.name, SECOND.name)
    assert len(rows) == 60
    assert 70 <= sum(len(r["instructions"]) for r in rows) <= 80
    assert len({r["key"] for r in rows}) == len(rows)
    assert len({r["prompt"] for r in rows}) == len(rows)
    assert {r["language"] for r in rows} == {"en", "zh", "mixed"}
    assert sum(r["language"] != "en" for r in rows) >= len(rows) // 3
    assert all(1 <= len(r["instructions"]) <= 3 for r in rows)
    assert sum(len(r["instructions"]) == 3 for r in rows) >= 3
    used = {i["judge"] for r in rows for i in r["instructions"]}
    assert used == set(JUDGES)
    quick = select(rows, quick=True, limit=None)
    assert len(quick) == 16
    assert any(r["language"] != "en" for r in quick)


def test_no_prompt_is_taken_from_an_earlier_set() -> None:
    earlier = {
        json.loads(line)["prompt"]
        for path in (FIRST_DATA, SECOND.data)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert not earlier & {r["prompt"] for r in load(DATA, JUDGES)}
