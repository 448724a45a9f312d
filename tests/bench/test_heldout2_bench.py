"""bench.heldout2: each judge on hand-written answers, the new readings, the set's shape (no model)."""

from __future__ import annotations

import pytest

from bench.heldout import HELDOUT, load, select
from bench.heldout_judge import sets
from bench.heldout_judge.readings import list_items, paragraphs
from tests.bench.judge_cases import Case, check_case, check_table

PARENS = [["(", ")"], ["（", "）"]]
SUITE = sets.suite("heldout2")
DATA = SUITE.data
JUDGES = SUITE.judges
judge = SUITE.grade

#: judge id -> (args, an answer that meets it, one that does not).
CASES: dict[str, Case] = {
    "word_count": ({"relation": "less than", "n": 4}, "Logs prove history.", "Logs prove what happened."),
    "char_count": ({"chars": ",，", "relation": "at most", "n": 0}, "审计师负责检查。", "Auditors check, test."),
    "numbers": ({"relation": "at least", "n": 2}, "第3条和第12条。", "Report within 30 days."),
    "word_at": ({"k": -1, "word": "clarity"}, "Write for clarity.", "Clarity matters most."),
    "chars": ({"relation": "at most", "n": 10}, "New policy", "New privacy policy"),
    "lines": ({"relation": "exactly", "n": 2}, "Guard data\nShare less", "Guard data"),
    "nested_list": (
        {"top": 2, "sub_min": 1, "sub_max": 2},
        "1. Intro\n   - welcome\n2. Risks\n   - fraud\n   - bribery",
        "1. Intro\n2. Risks\n   - fraud",
    ),
    "spans": (
        {"pairs": [["**", "**"]], "relation": "at least", "n": 2},
        "Use **a second factor** and **an app**.",
        "Use **a second factor** and an app.",
    ),
    "sentence_count": ({"relation": "exactly", "n": 2}, "Erase data. Do it fast!", "Erase data."),
    "paragraph_count": (
        {"relation": "exactly", "n": 2},
        "First part.\n\n  \nSecond part.",
        "First part.\nSecond line, same paragraph.",
    ),
    "sentences_per_paragraph": (
        {"relation": "at most", "n": 2},
        "Rule one. Rule two.\n\nRule three.",
        "Rule one. Rule two. Rule three.",
    ),
    "keyword_count": (
        {"keyword": "evidence", "relation": "at least", "n": 2},
        "Evidence first; more EVIDENCE later.",
        "Evidence first; evidenced later.",
    ),
    "keywords_all": (
        {"words": ["ownership", "sanctions"]},
        "股权 ownership 与 sanctions 筛查。",
        "股权 ownership 筛查。",
    ),
    "forbidden_words": (
        {"words": ["非常", "重要"]},
        "合规文化需要每个人参与。",
        "合规文化非常关键。",
    ),
    "paragraphs_containing": (
        {"keyword": "validation"},
        "Validation matters.\n\nIndependent validation too.",
        "Validation matters.\n\nSo does review.",
    ),
    "lowercase": ({}, "a dpo advises on gdpr.", "a DPO advises."),
    "uppercase": ({}, "LOCK YOUR SCREEN!", "LOCK YOUR Screen!"),
    "caps_words": (
        {"relation": "at least", "n": 2},
        "File BEFORE Friday, NO excuses. A reminder.",
        "File BEFORE Friday. A reminder.",
    ),
    "json": (
        {"type": "object", "keys": ["invoices", "payroll"]},
        '```json\n{"invoices": "10 years", "payroll": "6 years"}\n```',
        'Here it is: {"invoices": "10 years", "payroll": "6 years"}',
    ),
    "ends_with_text": (
        {"text": "Best regards, the Onboarding Team"},
        "Please send them.\n\nBest regards,\nThe Onboarding Team.",
        "Best regards, the Onboarding Team. P.S. Thanks",
    ),
    "opens_with": (
        {"text": "explain why contractors need training"},
        '"Explain why contractors need training?" Because risks change.',
        "Explain why employees need training. Because.",
    ),
    "title_line": ({"pairs": [["【", "】"]]}, "【交接通知】\n请完成交接。", "交接通知\n【请完成交接】"),
    "marker_lines": (
        {"regex": "Part\\s*[1-3][*_\\s]*:", "relation": "exactly", "n": 2},
        "**Part 1:** scope\nPart 2: rules",
        "Part 1: scope and Part 2: rules",
    ),
    "heading_count": (
        {"relation": "exactly", "n": 2},
        "## Risk\ntext\n### Fix\ntext",
        "## Risk\n#NoHeading\ntext",
    ),
    "paragraph_start": (
        {"k": 2, "text": "By contrast"},
        "Internal audits look inward.\n\n**By contrast**, external audits certify.",
        "Internal audits look inward.\n\nBy contrasting them we learn.",
    ),
    "paragraph_end": (
        {"k": "every", "text": "at a price"},
        "Fines come at a price.\n\nTrust comes back at a price!",
        "Fines come at a price.\n\nTrust comes back slowly.",
    ),
    "sentence_start": (
        {"k": "every", "text": "The"},
        "The rule is simple. - The checker signs.",
        "The rule is simple. Then a checker signs.",
    ),
    "sentence_end_word": (
        {"k": 1, "word": "duty"},
        "A conflict clashes with your duty. It must be declared.",
        "Your duty is clear. It must be declared.",
    ),
    "sentence_balance": (
        {"max_diff": 2},
        "Use long passphrases. Never reuse passwords. Enable a manager.",
        "Use passphrases. Never reuse any of your passwords across different sites.",
    ),
    "paragraph_balance": (
        {"n": 2, "max_diff": 1},
        "Pros: it saves time.\n\nCons: it costs money.",
        "Pros: it saves time.\n\nCons: it costs money and control over data.",
    ),
    "line_max_chars": ({"n": 12}, "Guard data\nShare less", "Guard your data always"),
    "line_end": ({"chars": "。."}, "诚信为本。\n守信为先。", "诚信为本。\n守信为先"),
    "bullet_items": (
        {"relation": "exactly", "n": 2},
        "- 审批\n• 记录\n1. 不算",
        "1. 审批\n2. 记录",
    ),
    "item_max_words": ({"n": 3}, "- Stale accounts\n- Shared logins", "- Accounts never reviewed since hiring"),
    "item_max_chars": ({"n": 6}, "- 建立举报渠道\n- 定期培训", "- 建立完善的匿名举报渠道"),
    "item_start": ({"text": "✅"}, "- ✅ Patch laptops\n- ✅ Use MFA", "- ✅ Patch laptops\n- Use MFA"),
    "percentages": (
        {"relation": "at least", "n": 2},
        "Fraud rose 12% and losses 3.5 percent.",
        "Fraud rose 12 points and losses 3.5.",
    ),
    "postscript": (
        {"marker": "P.S."},
        "Please declare by Friday.\nThanks\n**P.S.** The form is online.",
        "P.S. Please declare by Friday.",
    ),
    "no_latin": ({}, "双重认证需要两种凭证。", "双重认证（2FA）需要两种凭证。"),
    "latin_only": ({}, "A DPO advises the company.", "A DPO 负责 advice."),
    "han_chars": ({"relation": "at least", "n": 4}, "了解客户 KYC", "了解 KYC"),
    "first_word_in": (
        {"options": ["Approve", "Reject", "Escalate"]},
        "**Escalate.** The owner is unknown.",
        "I would escalate.",
    ),
    "sentences_with_digit": (
        {},
        "12 staff clicked. 3 reported it.",
        "12 staff clicked. Few reported it.",
    ),
    "sentence_ratio": (
        {"chars": "?？", "min_ratio": 0.5},
        "What can I claim? Meals. Who approves?",
        "What can I claim? Meals. Travel.",
    ),
    "suffix_count": (
        {"suffix": "ing", "relation": "at least", "n": 2},
        "Locking doors and badging in.",
        "Lock doors, ring the bell.",
    ),
    "max_word_repeat": (
        {"n": 2},
        "Logs prove facts; tampered logs prove nothing.",
        "Logs prove facts; logs prove logs.",
    ),
    "table_columns": (
        {"n": 3},
        "| Name | Price | OS |\n|---|---|---|\n| A | 1 | Mac |",
        "| Name | Price |\n|---|---|\n| A | 1 |",
    ),
}


def test_every_judge_has_a_case_and_a_documented_reading() -> None:
    check_table(CASES, JUDGES)


@pytest.mark.parametrize("judge_id", sorted(CASES))
def test_judge_passes_the_meeting_answer_and_fails_the_other_and_an_empty_one(judge_id: str) -> None:
    check_case(judge, judge_id, CASES[judge_id], empty_fails=True)


def test_readings_of_paragraphs_and_list_items() -> None:
    assert paragraphs("One.\nStill one.\n\n\t\nTwo.\n\n---") == ["One.\nStill one.", "Two."]
    assert list_items("- a\n* b\n1. c\n2、d\n（3）e\n**bold**\n-5 degrees\n3.5 percent") == [
        "a",
        "b",
        "c",
        "d",
        "e",
    ]
    assert list_items("- a\n1. c", bullets_only=True) == ["a"]
    with pytest.raises(KeyError):
        judge("no_such_judge", {}, "text")


def test_the_phrase_readings_stop_at_word_boundaries() -> None:
    assert judge("ends_with_text", {"text": "期待您的参与"}, "祝好，期待您的参与。")
    assert judge("ends_with_text", {"text": "Screening complete."}, "筛查完毕。Screening complete.")
    assert not judge("ends_with_text", {"text": "Screening complete."}, "Screening complete!")
    assert not judge("ends_with_text", {"text": "a price"}, "It comes at quota price.")
    assert judge("paragraph_start", {"k": 2, "text": "此外"}, "内部控制很关键。\n\n此外，要定期评估。")
    assert not judge("sentence_start", {"k": 3, "text": "Next"}, "One. Two. Nextly three.")


def test_set_is_held_out_sized_and_consistent() -> None:
    rows = load(DATA, JUDGES)
    assert SUITE.data == DATA and SUITE.name != HELDOUT.name
    assert len(rows) >= 55
    assert sum(len(r["instructions"]) for r in rows) >= 65
    assert len({r["key"] for r in rows}) == len(rows)
    assert len({r["prompt"] for r in rows}) == len(rows)
    assert sum(r["language"] != "en" for r in rows) >= len(rows) // 3
    assert all(1 <= len(r["instructions"]) <= 2 for r in rows)
    used = {i["judge"] for r in rows for i in r["instructions"]}
    assert used == set(JUDGES)
    quick = select(rows, quick=True, limit=None)
    assert len(quick) == 16
    assert any(r["language"] != "en" for r in quick)


def test_the_first_sets_judges_are_not_accepted_for_an_id_the_set_does_not_define() -> None:
    rows = load(DATA, JUDGES)
    assert SUITE.grade("word_at", {"k": 1, "word": "risk"}, "Risk first.")
    with pytest.raises(ValueError, match="unknown judge"):
        load(DATA, {k: v for k, v in JUDGES.items() if k != rows[0]["instructions"][0]["judge"]})
