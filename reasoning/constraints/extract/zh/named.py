"""Chinese constraint extraction on a jieba-segmented spaCy doc.

Rules are written over the segmented tokens' text with their character
offsets: a rule finds a trigger word (必须 / 禁止 / 不得 / 用…回答 / 引用 /
字 / 段 / 逗号 ...) and parses its parameters with the typed Chinese parsers
of :mod:`reasoning.constraints.quantities` (Arabic or Chinese numerals,
不超过 / 少于 / 至少 / 以内 / 以上). Patterns are anchored on token boundaries
of the segmentation so that, for example, 中文 inside 中文系 does not count.
"""

from __future__ import annotations

import re

from spacy.tokens import Doc

from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.extract.zh.context import Context
from reasoning.constraints.form.units import NUMBER_SLOT
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import (
    ZH_NUMBER,
    ZH_RELATIONS_AFTER,
    ZH_RELATIONS_BEFORE,
    labels_through,
    parse_zh_number,
)
from reasoning.language import LANGUAGE_NAMES, language_code

__all__ = ["extract_chinese", "read_named"]

_NEG = r"(?:禁止|不要|不得|不能|不可|请勿|勿|切勿|避免|不许|不准|严禁|别)"
_REL_BEFORE = alternation(ZH_RELATIONS_BEFORE)
_REL_AFTER = alternation(ZH_RELATIONS_AFTER)
_CLOSING_QUOTES = ("”", '"', "」", "』", "’", "'")
_QUOTE = r"[“\"「『‘'](?P<q>[^”\"」』’'\n]{1,40})[”\"」』’']"


def _token_starts(doc: Doc) -> set[int]:
    starts = {t.idx for t in doc}
    starts.add(len(doc.text))
    return starts


def _languages() -> str:
    names = [zh for _, zh in LANGUAGE_NAMES.values()] + ["汉语", "英语", "普通话", "日文", "韩文", "法文", "德文"]
    return alternation(set(names))


_LANG = re.compile(r"(?:用|使用|以|采用|请用|只用)(?P<name>" + _languages() + r")(?:来)?(?:回答|作答|回复|答复|书写|写|输出|撰写|表述)")
_LANG_ONLY = re.compile(r"(?:回答|回复|答复|输出)(?:必须|应|要|须|只能)?(?:使用|用|是)(?P<name>" + _languages() + r")")

_UNITS: dict[str, Kind] = {
    "字": Kind.WORD_COUNT, "个字": Kind.WORD_COUNT, "词": Kind.WORD_COUNT, "个词": Kind.WORD_COUNT,
    "单词": Kind.WORD_COUNT, "个单词": Kind.WORD_COUNT,
    "句": Kind.SENTENCE_COUNT, "句话": Kind.SENTENCE_COUNT, "个句子": Kind.SENTENCE_COUNT,
    "段": Kind.PARAGRAPH_COUNT, "段落": Kind.PARAGRAPH_COUNT, "个段落": Kind.PARAGRAPH_COUNT,
    "个要点": Kind.BULLET_COUNT, "条要点": Kind.BULLET_COUNT, "个项目符号": Kind.BULLET_COUNT,
    "个占位符": Kind.PLACEHOLDERS,
}
_UNIT = alternation(_UNITS)
_COUNT = re.compile(
    r"(?:(?P<rel>" + _REL_BEFORE + r")\s*)?(?P<num>" + ZH_NUMBER + r")\s*(?P<unit>" + _UNIT + r")"
    r"(?:\s*(?P<after>" + _REL_AFTER + r"))?"
)
_COUNT_FIRST = re.compile(r"(?:字数|篇幅|长度)(?:应|要|须|必须)?(?:控制在)?(?P<rel>" + _REL_BEFORE + r")?\s*(?P<num>" + ZH_NUMBER + r")\s*(?:个)?字?(?P<after>" + _REL_AFTER + r")?")

_YEAR_BEFORE = re.compile(
    _NEG + r"(?:引用|使用|参考|援引|采用)(?P<year>(?:1[5-9]|20)\d\d)\s*年(?:以前|之前|前)(?:的)?(?:文献|资料|规则|来源|法规|研究|数据)?"
)
_YEAR_SINCE = re.compile(
    r"(?:只|仅)(?:能)?(?:引用|使用|参考)(?P<year>(?:1[5-9]|20)\d\d)\s*年(?:以后|之后|以来|后)(?:的)?(?:文献|资料|规则|来源|法规|研究|数据)?"
)
_CITE = re.compile(r"(?<!不)(?<!禁止)(?:引用|注明|标注|列出|给出)(?:所依据的|相关的|依据的)?(?:来源|出处|依据|规则|文献|法规|证据)")
_PRECISION = re.compile(r"保留(?P<n>" + ZH_NUMBER + r")位小数")
_JURISDICTION = re.compile(r"(?:按照|依据|根据|适用)(?P<name>欧盟|美国|英国|中国|新加坡|香港|瑞士|德国|法国|塞浦路斯)(?:的)?(?:法律|法规|规则|监管|规定)")
_JURISDICTION_CODES = {"欧盟": "EU", "美国": "US", "英国": "GB", "中国": "CN", "新加坡": "SG", "香港": "HK",
                       "瑞士": "CH", "德国": "DE", "法国": "FR", "塞浦路斯": "CY"}


def _on_boundary(starts: set[int], start: int, end: int) -> bool:
    return start in starts and end in starts


#: Words restricting a count to that many and no more (只写一段, 仅一段, 正好一段).
_ONLY = re.compile(r"(?:只|仅|就|正好|恰好|刚好|限)[^，,。！？；\n]{0,3}$")
#: The noun phrase a measure word measures: up to the clause's end.
_PHRASE = re.compile(r"[^，,。！？；;：:\n]{1,20}")
#: What may follow a count that ends its clause (分成一段。, 写一段即可).
_CLAUSE_END = re.compile(r"\s*(?:$|[，,。！？；;：:\n）)]|即可|就好|就行|就够)")


def _measure_word_of_text(text: str, match: re.Match[str], n: int) -> bool:
    """Whether 一段 is the measure word of a text it names (写一段关于春天的文字, 一段生日祝福, 一段开场白: "a
    piece of text" of that kind), not a count of paragraphs. A count asks for it: a relation said with it,
    a word restricting it (只写一段), a clause ending at it (分成一段。), 段落 itself, a number other than
    one, or 话 as what it measures (一段话, 一段关于春天的话: a paragraph of speech)."""
    if n != 1 or match.group("unit") != "段" or match.group("rel") or match.group("after"):
        return False
    if _ONLY.search(text, max(0, match.start() - 5), match.start()):
        return False
    if _CLAUSE_END.match(text, match.end()) is not None:
        return False
    measured = _PHRASE.match(text, match.end())
    return measured is None or not measured.group().endswith("话")  # 一段（关于春天的）话: a paragraph of speech


def extract_chinese(doc: Doc, text: str) -> list[Found]:
    """Every constraint the Chinese rules read in ``text`` (segmented as ``doc``)."""
    starts = _token_starts(doc)
    found: list[Found] = []

    for match in list(_LANG.finditer(text)) + list(_LANG_ONLY.finditer(text)):
        code = language_code(match.group("name"))
        if code is not None and not any(f.kind == Kind.RESPONSE_LANGUAGE and f.start == match.start() for f in found):
            found.append(Found(kind=Kind.RESPONSE_LANGUAGE, params={"language": code},
                               start=match.start(), end=match.end()))

    for match in _COUNT.finditer(text):
        if match.group("num") == "一" and text[max(0, match.start() - 1) : match.start()] in _CLOSING_QUOTES:
            continue
        if match.group("rel") is None and (text[max(0, match.start() - 1) : match.start()] in ("第", "每")
                                           or text[max(0, match.start() - 2) : match.start()] in ("任何", "最后")):
            continue  # 第一段, 每一段, 任何一段, 最后一句: an ordinal or a quantifier, no count
        kind = _UNITS[match.group("unit")]
        n = parse_zh_number(match.group("num"))
        if n is None or _measure_word_of_text(text, match, n):
            continue
        relation = _zh_relation(match.group("rel"), match.group("after"))
        params: dict[str, object] = {"n": n}
        if kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT):
            params["relation"] = str(relation)
        found.append(Found(kind=kind, params=params, start=match.start(), end=match.end()))
    for match in _COUNT_FIRST.finditer(text):
        n = parse_zh_number(match.group("num"))
        if n is None or any(f.kind == Kind.WORD_COUNT and f.start <= match.start() < f.end for f in found):
            continue
        relation = _zh_relation(match.group("rel"), match.group("after"))
        found.append(Found(kind=Kind.WORD_COUNT, params={"relation": str(relation), "n": n},
                           start=match.start(), end=match.end()))

    for match in re.finditer(_NEG + r"(?:使用|用|出现|包含)?(?:任何)?逗号", text):
        found.append(Found(kind=Kind.NO_COMMA, params={}, start=match.start(), end=match.end()))
        break

    for match in re.finditer(_NEG + r"(?:使用|提到|提及|出现|包含|说)(?:以下)?(?:词语|词汇|单词|关键词|字眼|词)?[:：]?\s*(?P<list>(?:" + _QUOTE.replace("?P<q>", "") + r"[、，,和及或\s]*)+)", text):
        words = [m.group("q") for m in re.finditer(_QUOTE, match.group("list"))]
        if words:
            found.append(Found(kind=Kind.FORBIDDEN_WORDS, params={"words": words},
                               start=match.start(), end=match.end()))
    for match in re.finditer(r"(?<![不勿])(?:包含|提到|提及|使用|出现)(?:关键词|词语|以下词语)[:：]?\s*(?P<list>(?:" + _QUOTE.replace("?P<q>", "") + r"[、，,和及\s]*)+)", text):
        words = [m.group("q") for m in re.finditer(_QUOTE, match.group("list"))]
        if words and not re.search(_NEG + r"$", text[max(0, match.start() - 4) : match.start()]):
            found.append(Found(kind=Kind.KEYWORDS_PRESENT, params={"keywords": words},
                               start=match.start(), end=match.end()))

    for match in _YEAR_BEFORE.finditer(text):
        found.append(Found(kind=Kind.CITATION_TIME_WINDOW, params={"not_before": f"{match.group('year')}-01-01"},
                           start=match.start(), end=match.end()))
    for match in _YEAR_SINCE.finditer(text):
        found.append(Found(kind=Kind.CITATION_TIME_WINDOW, params={"not_before": f"{match.group('year')}-01-01"},
                           start=match.start(), end=match.end()))
    for match in _CITE.finditer(text):
        if any(f.kind == Kind.CITATION_TIME_WINDOW and f.start <= match.start() < f.end for f in found):
            continue
        found.append(Found(kind=Kind.CITE_SOURCES, params={"min": 1}, start=match.start(), end=match.end(),
                           confidence=0.8))
        break
    for match in _PRECISION.finditer(text):
        n = parse_zh_number(match.group("n"))
        if n is not None:
            found.append(Found(kind=Kind.NUMERIC_PRECISION, params={"decimals": n},
                               start=match.start(), end=match.end()))
    for match in _JURISDICTION.finditer(text):
        found.append(Found(kind=Kind.JURISDICTION, params={"code": _JURISDICTION_CODES[match.group("name")]},
                           start=match.start(), end=match.end(), confidence=0.8))

    simple = (
        (r"(?:全部|全部使用|都用|一律用?)小写", Kind.ALL_LOWERCASE),
        (r"(?:全部|全部使用|都用|一律用?)大写", Kind.ALL_CAPITALS),
        (r"JSON\s*格式|(?:以|用)\s*JSON\s*(?:输出|返回|回答|回复|表示|作答)|JSON\s*对象|在\s*JSON\s*(?:中|里)", Kind.JSON_FORMAT),
        (r"双尖括号|<<[^<>\n]{1,30}>>", Kind.TITLE),
        (r"(?:用|以)双引号(?:把|将)?(?:整个|全部)?(?:回答|回复|内容)?(?:括起来|包裹|括住)", Kind.QUOTATION),
    )
    for pattern, kind in simple:
        flag = re.search(pattern, text, re.IGNORECASE)
        if flag is not None:
            found.append(Found(kind=kind, params={}, start=flag.start(), end=flag.end()))
    found.extend(_frequencies(text))
    found.extend(_structure(text))
    postscript = re.search(r"(?:以|用)\s*[“\"「]?(?P<q>P\.?\s?P\.?\s?S|P\.?\s?S\.?)[”\"」]?\s*开头的?附言|附言",
                           text, re.IGNORECASE)
    if postscript is not None:
        raw = re.sub(r"[\s.]", "", postscript.group("q") or "").upper()
        marker = "P.P.S" if raw == "PPS" else "P.S."
        found.append(Found(kind=Kind.POSTSCRIPT, params={"marker": marker},
                           start=postscript.start(), end=postscript.end()))
    ending = re.search(r"(?:以|用)" + _QUOTE + r"(?:结尾|结束)", text)
    if ending is not None:
        found.append(Found(kind=Kind.END_PHRASE, params={"phrase": ending.group("q")},
                           start=ending.start(), end=ending.end()))
    opening = re.search(r"(?:以|用)" + _QUOTE + r"开头", text)
    if opening is not None and any(f.kind is Kind.SECTIONS and f.start <= opening.start("q") < f.end for f in found):
        opening = None  # 每个部分以“第一部分”开头: the numbered label of each part, read as its sections
    if opening is not None and "段" not in text[max(0, opening.start() - 4) : opening.start()]:
        found.append(Found(kind=Kind.START_PHRASE, params={"phrase": opening.group("q")},
                           start=opening.start(), end=opening.end()))
    return [f for f in found if f.start in starts or f.kind not in _BOUNDARY_KINDS]


_TIMES = r"(?P<num>" + ZH_NUMBER + r")\s*次(?P<after>" + _REL_AFTER + r")?"
_KEYWORD_FREQ = re.compile(
    _QUOTE + r"(?:一词|这个词|这个关键词|这个字|一字)?(?:必须|应|要|须|需)?(?:在回答中)?(?P<rel0>" + _REL_BEFORE + r")?"
    r"(?:出现|使用|提到|提及)(?P<rel>" + _REL_BEFORE + r")?\s*" + _TIMES
)
_LETTER_FREQ = re.compile(
    r"字母\s*[“\"「‘']?(?P<letter>[A-Za-z])[”\"」’']?\s*(?:必须|应|要|须|需)?(?P<rel0>" + _REL_BEFORE + r")?"
    r"(?:出现|使用)(?P<rel>" + _REL_BEFORE + r")?\s*" + _TIMES
)


_BOUNDARY_KINDS = frozenset({Kind.RESPONSE_LANGUAGE, Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.PARAGRAPH_COUNT})
"""Kinds whose match must start on a segmentation boundary (中文 in 中文系 is no language)."""

_SECTIONS = re.compile(r"(?P<num>" + ZH_NUMBER + r")\s*个?(?:部分|章节|小节)")
_MARKER = re.compile(r"(?<![A-Za-z])([A-Z][A-Za-z]{2,})\s+(?:X|\d)(?![A-Za-z0-9])"
                     r"|[“\"「『]([\u4e00-\u9fff]{1,4}?|[A-Z][A-Za-z]{2,})\s?(?:X|N|\d{1,2})(?:[\u4e00-\u9fff]{1,2})?\s*[：:]?"
                     r"[”\"」』]")


def _frequencies(text: str) -> list[Found]:
    """"“风险”一词至少出现两次", "字母q出现不少于3次"."""
    found: list[Found] = []
    for match in _KEYWORD_FREQ.finditer(text):
        n = parse_zh_number(match.group("num"))
        if n is not None:
            relation = _zh_relation(match.group("rel") or match.group("rel0"), match.group("after"))
            found.append(Found(kind=Kind.KEYWORD_FREQUENCY,
                               params={"keyword": match.group("q"), "relation": str(relation), "n": n},
                               start=match.start(), end=match.end()))
    for match in _LETTER_FREQ.finditer(text):
        n = parse_zh_number(match.group("num"))
        if n is not None:
            relation = _zh_relation(match.group("rel") or match.group("rel0"), match.group("after"))
            found.append(Found(kind=Kind.LETTER_FREQUENCY,
                               params={"letter": match.group("letter").lower(), "relation": str(relation), "n": n},
                               start=match.start(), end=match.end()))
    return found


_HIGHLIGHT = re.compile(
    r"(?:突出显示|高亮|加粗|强调|用斜体标出)(?:至少)?(?P<num>" + ZH_NUMBER + r")?\s*(?:处|个部分|个地方|段|个短语)?"
)
_PLACEHOLDER = re.compile(r"(?:至少|不少于)?(?P<num>" + ZH_NUMBER + r")\s*个\s*(?:方括号)?占位符")
_ORDINAL_LABEL = re.compile(r"[“\"「『]第(?P<num>" + ZH_NUMBER + r")(?P<noun>部分|章节|章|小节|节|步)\s*[：:]?[”\"」』]")
"""A quoted label with its number inside ("第一部分", "第2步")."""
_TWO = re.compile(r"(?:两个|二个|2个)不同的(?:回答|答案|版本)|(?:\*{6}|六个星号)")


def _structure(text: str) -> list[Found]:
    """Highlights, placeholders and two responses."""
    found: list[Found] = []
    match = _HIGHLIGHT.search(text)
    if match is not None and ("*" in text or "Markdown" in text or "markdown" in text):
        n = parse_zh_number(match.group("num")) if match.group("num") else 1
        found.append(Found(kind=Kind.HIGHLIGHTED_SECTIONS, params={"n": n or 1}, start=match.start(), end=match.end()))
    placeholder = _PLACEHOLDER.search(text)
    if placeholder is not None:
        n = parse_zh_number(placeholder.group("num"))
        if n is not None:
            found.append(Found(kind=Kind.PLACEHOLDERS, params={"n": n},
                               start=placeholder.start(), end=placeholder.end()))
    sections = _SECTIONS.search(text)
    markers = list(_MARKER.finditer(text))
    if markers:
        word = markers[0].group(1) or markers[0].group(2)
        labels = [int(d) for m in markers if (m.group(1) or m.group(2)) == word
                  for d in re.findall(r"\d+", m.group(0))]
        # the count of parts, else the labels shown in sequence (“步骤1”“步骤2”“步骤3”)
        n = parse_zh_number(sections.group("num")) if sections is not None else labels_through(labels)
        if n is not None:
            begin = min(sections.start(), markers[0].start()) if sections is not None else markers[0].start()
            found.append(Found(kind=Kind.SECTIONS, params={"splitter": word, "n": n},
                               start=begin, end=max(sections.end() if sections is not None else 0, markers[-1].end())))
    ordinal = _ORDINAL_LABEL.search(text)
    if ordinal is not None and not any(f.kind is Kind.SECTIONS for f in found):
        shown = [parse_zh_number(m.group("num")) for m in _ORDINAL_LABEL.finditer(text)
                 if m.group("noun") == ordinal.group("noun")]
        counted = re.search(r"(?P<num>" + ZH_NUMBER + r")\s*个?" + ordinal.group("noun"), text)
        counted = counted if counted is not None and counted.start() != ordinal.start("num") else sections
        n = parse_zh_number(counted.group("num")) if counted is not None else (
            len(shown) if len(shown) >= 2 and shown == list(range(1, len(shown) + 1)) else None)
        if n is not None:
            # “第一部分”: a label holding its number (第N部分), given to each part
            begin = min(counted.start(), ordinal.start()) if counted is not None else ordinal.start()
            found.append(Found(kind=Kind.SECTIONS, params={"splitter": "第" + NUMBER_SLOT + ordinal.group("noun"), "n": n},
                               start=begin, end=max(counted.end() if counted is not None else 0, ordinal.end())))
    two = _TWO.search(text)

    if two is not None and re.search(r"\*{6}|六个星号", text):
        found.append(Found(kind=Kind.TWO_RESPONSES, params={}, start=two.start(), end=two.end()))
    return found


def _zh_relation(before: str | None, after: str | None) -> Relation:
    if before:
        return ZH_RELATIONS_BEFORE[before]
    if after:
        return ZH_RELATIONS_AFTER[after]
    return Relation.EXACTLY


def read_named(ctx: Context) -> None:
    """The named kinds of :func:`extract_chinese`: the first Chinese reader, which the form readers refine."""
    ctx.found = [*ctx.found, *extract_chinese(ctx.doc, ctx.text)]
