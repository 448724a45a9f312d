"""The support check of one answer sentence (``reasoning.rules.support``): whole quantities,
rule-id shapes from the ontology's ids, names (Latin and Chinese), content words."""

from __future__ import annotations

import pytest

from reasoning.rules.support import Source, SupportIndex, id_shapes, zh_numeral

RULE_IDS = ("AML-R-003", "AML-R-017", "AML-R-024", "Fleischner 2017: solid nodule")
EN = [
    Source(id="E1", text="AML-R-024: Cross-border transfers above EUR 1,000,000 to or from a "
                         "high-risk jurisdiction require escalation to the MLRO."),
    Source(id="E2", text="AML-R-017: Transfers involving a politically exposed person require "
                         "enhanced due diligence and escalation to the MLRO."),
    Source(id="E3", text="Jon Doe is a politically exposed person. Last reviewed 2024-05-11."),
    Source(text="Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe. Should this be escalated?"),
]
ZH = [
    Source(id="E1", text="AML-R-024：跨境转账超过100万欧元且涉及高风险司法管辖区的，须上报MLRO。"),
    Source(id="E2", text="乔恩·多伊是政治公众人物。"),
    Source(text="阿克米有限公司（塞浦路斯）向乔恩·多伊转账200万欧元。是否需要上报？"),
]


@pytest.fixture(scope="module")
def en() -> SupportIndex:
    return SupportIndex(EN, id_shapes(RULE_IDS))


@pytest.fixture(scope="module")
def zh() -> SupportIndex:
    return SupportIndex(ZH, id_shapes(RULE_IDS))


def test_numbers_are_whole_quantities_never_substrings(en: SupportIndex) -> None:
    # "24" is inside "AML-R-024" and "2" inside "2,000,000": neither is a quantity the sources hold.
    assert en.check("The rules require a 24-hour escalation to the MLRO.").unsupported == ("24",)
    assert not en.check("Escalation to the MLRO is required for transfers of EUR 2.").supported
    # The same quantity written another way is held; another quantity is not.
    assert en.check("Acme Ltd sent EUR 2 million to Jon Doe.").supported
    assert en.check("Acme Ltd sent EUR 3,000,000 to Jon Doe.").strict == ("3,000,000",)
    # A date as a whole date; a list marker is no number.
    assert en.check("1. Jon Doe was last reviewed on 11 May 2024 [E3].").supported
    assert en.check("Jon Doe was last reviewed on 2024-05-12.").strict == ("2024-05-12",)


def test_rule_ids_take_the_ontology_shape_and_must_be_held(en: SupportIndex) -> None:
    verdict = en.check("Escalation to the MLRO is required (AEM-R-009).")
    assert verdict.invented_ids == ("AEM-R-009",) and not verdict.supported
    held = en.check("Escalation to the MLRO is required (AML-R-024).")
    assert held.supported and held.support[0] == "E1"
    shapes = id_shapes(RULE_IDS)
    # Refused where it leaves every held id, not after it is written; a held id's prefix is fine.
    assert shapes.refused("see AEM-R", en.held_ids) == "AEM-R"
    assert shapes.refused("see AML-R-02", en.held_ids) is None
    assert shapes.refused("see AML-R-0245", en.held_ids) == "AML-R-0245"
    assert shapes.refused("EUR-denominated", en.held_ids) is None
    # A rule named by a sentence gives no id shape.
    assert id_shapes(["Fleischner 2017: solid nodule"]).pattern is None


def test_names_latin_and_chinese(en: SupportIndex, zh: SupportIndex) -> None:
    verdict = en.check("Jon Doe lives in the European Economic Area.")
    assert "European Economic Area" in verdict.strict
    assert en.check("Acme Ltd sent EUR 2,000,000 to Jon Doe.").supported
    assert zh.check("阿克米有限公司向乔恩·多伊转账200万欧元，超过100万欧元。").supported
    invented = zh.check("北山有限公司向约翰·史密斯付款。")
    assert not invented.supported and "北山有限公司" in invented.strict
    assert zh.check("转账金额为300万欧元。").strict == ("300万",)


def test_content_words_by_share(en: SupportIndex, zh: SupportIndex) -> None:
    assert not en.check("The court will review the application of the law.").supported
    paraphrase = ("Enhanced due diligence and escalation to the MLRO are required for "
                  "transfers involving a politically exposed person.")
    kept = en.check(paraphrase)
    assert kept.supported and set(kept.support) >= {"E2"}
    assert zh.check("乔恩·多伊是政治公众人物，因此需要上报MLRO。").supported
    assert not zh.check("该笔转账需要法院审查并提交年度报告。").supported


def test_a_sentence_being_written_is_judged_on_what_it_holds(en: SupportIndex) -> None:
    # The last token may still grow ("2" of "2,000,000"); content words wait for the end.
    assert en.check("Acme Ltd sent EUR 2", complete=False).supported
    assert not en.check("Acme Ltd sent EUR 7 to", complete=False).supported
    assert en.check("The court will review", complete=False).supported


def test_chinese_content_is_measured_in_character_pairs(zh: SupportIndex) -> None:
    # Each word is common in the sources (跨境, 转账, 涉及, 政治), their composition is not:
    # four of five words are held, but most of the character pairs are new.
    composed = zh.check("跨境转账涉及政治慈善。")
    assert not composed.supported and "政治慈善" in composed.unsupported, composed
    # Function words say what a vague sentence claims ("this is a kind of public figure"): its
    # only content word is held, its claim is not.
    assert not zh.check("这是一种公众人物。").supported
    assert zh.check("乔恩·多伊是政治公众人物，因此需要上报MLRO。").supported
    # A paraphrase that reorders a rule text's phrases keeps its pairs.
    assert zh.check("超过100万欧元、涉及高风险司法管辖区的跨境转账须上报MLRO。").supported


def test_chinese_numerals_are_quantities(zh: SupportIndex) -> None:
    assert zh.check("阿克米有限公司向乔恩·多伊转账两百万欧元。").supported
    assert zh.check("阿克米有限公司向乔恩·多伊转账三百万欧元。").strict == ("三百万",)
    # A numeral that is no number ("万一": in case) is no quantity; 一 before a measure word is "a".
    assert zh.check("万一转账超过一百万欧元，须上报MLRO。").supported
    assert [zh_numeral(r) for r in ("两百万", "十二", "一百五十万", "一千零五", "一亿两千万")] == [
        2_000_000, 12, 1_500_000, 1005, 120_000_000,
    ]
    assert [zh_numeral(r) for r in ("万一", "千万", "二二")] == [None, None, None]


def test_chinese_names_the_dictionary_tags(zh: SupportIndex) -> None:
    # Persons and places the sources never name, written without a middle dot or a suffix.
    assert zh.check("王小明是政治公众人物。").strict == ("王小明",)
    assert "德国" in zh.check("乔恩·多伊向德国转账。").strict
    assert zh.check("乔恩·多伊向塞浦路斯转账。").supported


def test_a_sentence_with_nothing_to_be_about_is_empty(zh: SupportIndex, en: SupportIndex) -> None:
    # No content word, no id, no name: a held number alone states nothing ("on the second day").
    held = SupportIndex([Source(text="诺德科技公司发运价值2万欧元的传感器。")])
    verdict = held.check("这将在第二天。")
    assert verdict.supported and verdict.empty, verdict
    assert en.check("That is all.").empty
    assert not zh.check("金额为200万欧元。").empty


def test_codes_are_held_whole_and_a_piece_of_one_is_no_word() -> None:
    index = SupportIndex(
        [Source(id="E8", text="transfer TRF-2026-0042 originator Acme Ltd.")], id_shapes(RULE_IDS)
    )
    # "TRF" is only a piece of the code: the sentence's one held word left is no claim.
    echo = index.check("The evidence is a transfer of TRF.")
    assert not echo.supported and "trf" in echo.unsupported
    assert index.check("The transfer TRF-2026-0042 originator is Acme Ltd [E8].").supported
    # Another code is no code the sources hold, and no number is read inside one.
    other = index.check("The transfer TRF-2026-0043 originator is Acme Ltd.")
    assert other.strict == ("TRF-2026-0043",)
    assert index.check("The transfer originator sent 42.").strict == ("42",)
