"""Chinese readings of a structure's parameters, after the form's Chinese readings (:mod:`reasoning.constraints.extract.zh.form`).

The Chinese counterpart of :mod:`reasoning.constraints.extract.en.structure`, read from the
lexicon's words and their order in the clause:

- a copy's case or dropped sentence said in the copying phrase
  (用大写字母重复下面的问题; 重复问题，但去掉最后一句): ``Copy.case`` / ``drop``,
  the whole-answer case reading of the same words dropped;
- prose beside a list or table in a stated order (先写一段引言，然后用项目符号列出三个要点;
  用表格列出，最后用一句话总结): the prose stands on the side of the list its
  sequence word says; 一句 / 一句话 is a ``sentence``, anything else a
  ``paragraph``; the count of one paragraph or sentence read from the same
  words is dropped;
- a table's header cells (表头为：名称、价格、评分; 列名分别是 A 和 B);
- ``n`` responses separated by a marker (给出三个不同的回答，用###分隔; 用六个星号分隔).

A reading is changed only when these words are there; otherwise the earlier
reading stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import msgspec

from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.form import Copy, Layout, Structure, canonical
from reasoning.constraints.form.model import Beside, Drop
from reasoning.constraints.model import Kind
from reasoning.constraints.quantities import ZH_NUMBER, parse_zh_number

__all__ = ["refine_structure_chinese"]


_CLAUSE_END = "。；;！!？?\n"
_PROSE = re.compile(r"(?P<size>一句话|一句|一段话|一段文字|一段|一个段落|段落|引言|导语|开场白|介绍|概述|总结|结语|小结|结论)")
_BEFORE_CUES = ("先", "首先", "开头", "开始", "开篇")
_AFTER_CUES = ("然后", "再", "接着", "之后", "随后", "最后", "结尾", "末尾", "后面", "后")
_LISTS = frozenset({Layout.LIST, Layout.NUMBERED_LIST, Layout.NESTED_LIST, Layout.TABLE})
_PROSE_KINDS = frozenset({Kind.PARAGRAPH_COUNT, Kind.SENTENCE_COUNT, Kind.COUNT})


def _clause(text: str, at: int) -> tuple[int, int]:
    """The sentence around ``at`` (its ends at 。；！？ or a newline)."""
    return sentence_bounds(text, at, at, _CLAUSE_END, with_mark=False)


def _structure_of(f: Found) -> Structure | None:
    if f.kind is Kind.BULLET_COUNT:
        return Structure(layout=Layout.LIST, n=int(f.params["n"]))
    if f.kind is Kind.STRUCTURE and f.params.get("layout") in _LISTS:
        return msgspec.convert(f.params, Structure)
    return None


def _replace(found: list[Found], index: int, structure: Structure) -> None:
    f = found[index]
    kind, params = canonical(structure)
    found[index] = Found(kind=kind, params=params, start=f.start, end=f.end, confidence=f.confidence,
                         hardness=f.hardness)


def _prose_beside(text: str, found: list[Found]) -> list[Found]:
    for index, f in enumerate(list(found)):
        structure = _structure_of(f)
        if structure is None:
            continue
        start, end = _clause(text, f.start)
        before, after = structure.before, structure.after
        said: list[tuple[int, int]] = []
        for match in _PROSE.finditer(text, start, end):
            if f.start <= match.start() < f.end:
                continue  # inside the list's own words (列出三个要点)
            size: Beside = "sentence" if match.group("size").startswith("一句") else "paragraph"
            if match.end() <= f.start:
                lead = text[start : match.start()]
                link = text[match.end() : f.start]
                if any(c in lead for c in _BEFORE_CUES) or any(c in link for c in _AFTER_CUES):
                    before = before or size
                    said.append(match.span())
            else:
                link = text[f.end : match.start()]
                if any(c in link for c in _AFTER_CUES):
                    after = after or size
                    said.append(match.span())
        if not said:
            continue
        _replace(found, index, msgspec.structs.replace(structure, before=before, after=after))
        kept = found[index]
        found[:] = [g for g in found if g is kept or not (
            g.kind in _PROSE_KINDS and int(g.params.get("n", 0)) <= 1
            and (g.kind is not Kind.COUNT or g.params.get("unit") in ("sentences", "paragraphs"))
            and any(overlaps(g, a, b) for a, b in said))]
    return found


_HEADERS = re.compile(r"(?:表头|列名|列标题|各列(?:的标题)?)(?:分别)?(?:为|是|包括|包含|用)?\s*[：:]?\s*(?P<cells>[^。；;！？\n]+)")
_CELL_SPLIT = re.compile(r"\s*(?:[、，,|/]|和|及|与|以及)\s*")


def _headers(text: str, found: list[Found]) -> list[Found]:
    for index, f in enumerate(list(found)):
        if f.kind is not Kind.STRUCTURE or f.params.get("layout") != Layout.TABLE:
            continue
        start, end = _clause(text, f.start)
        match = _HEADERS.search(text, start, end)
        if match is None:
            continue
        cells = tuple(c.strip(" “”\"'‘’「」") for c in _CELL_SPLIT.split(match.group("cells")))
        cells = tuple(c for c in cells if c)
        structure = msgspec.convert(f.params, Structure)
        if len(cells) < 2 or any(len(c) > 12 for c in cells) or structure.columns not in (None, len(cells)):
            continue
        _replace(found, index, msgspec.structs.replace(structure, headers=cells, columns=len(cells)))
    return found


_RESPONSES = re.compile(rf"(?P<num>{ZH_NUMBER})\s*(?:个|种|份|条)?(?:不同的?|不一样的)?(?:回答|答案|回复|回应|版本)")
_MARKER = re.compile(r"(?:用|以)\s*(?:(?P<symbols>[^\w\s，。、“”\"'：:]{2,})|(?P<count>[一二两三四五六七八九十\d]+)\s*个\s*"
                     r"(?P<name>星号|井号|短横线|减号|波浪号|等号|下划线|加号))\s*(?:来|进行)?(?:分隔|分开|隔开|分割)")
_SYMBOL_NAMES = {"星号": "*", "井号": "#", "短横线": "-", "减号": "-", "波浪号": "~", "等号": "=", "下划线": "_", "加号": "+"}


def _responses(text: str, found: list[Found]) -> list[Found]:
    for marker_match in _MARKER.finditer(text):
        start, end = _clause(text, marker_match.start())
        responses = _RESPONSES.search(text, start, marker_match.start())
        if responses is None:
            continue
        n = parse_zh_number(responses.group("num"))
        if marker_match.group("symbols"):
            marker = marker_match.group("symbols")
        else:
            count = parse_zh_number(marker_match.group("count"))
            marker = _SYMBOL_NAMES[marker_match.group("name")] * count if count and 1 < count <= 12 else ""
        if n is None or n < 2 or not marker:
            continue
        found = [g for g in found if not (
            (g.kind is Kind.TWO_RESPONSES or (g.kind in (Kind.LETTER_FREQUENCY, Kind.COUNT)
                                             and overlaps(g, marker_match.start(), marker_match.end())))
            and overlaps(g, start, end))]
        kind, params = canonical(Structure(layout=Layout.RESPONSES, n=n, marker=marker))
        found.append(Found(kind=kind, params=params, start=responses.start(), end=marker_match.end(), confidence=0.85))
    return found


_COPY_VERB = re.compile(r"(?:重复|复述|抄写|照抄)(?:一遍|一下)?(?:下面的?|上面的?|以下的?|我的|这个)?(?:问题|请求|题目|指令|提示)")
_ZH_CASE = re.compile(r"(?P<case>大写|小写)")
_ZH_DROP = re.compile(r"(?:去掉|删去|删掉|省略|不包括|除去|不要|不含)(?:其|它的|原文的)?(?P<which>最后|末|第一|首|开头的?)(?:一)?句")
_PIECE_END = "，,。；;！!？?\n"


def _piece(text: str, start: int, end: int) -> tuple[int, int]:
    """The comma-bounded piece of ``text`` around ``text[start:end]``."""
    return sentence_bounds(text, start, end, _PIECE_END, with_mark=False)


def _copy_changes(text: str, found: list[Found]) -> list[Found]:
    """用大写字母重复下面的问题 / 重复问题，但去掉最后一句: the copy's case or dropped sentence."""
    match = _COPY_VERB.search(text)
    if match is None:
        return found
    left, right = _piece(text, match.start(), match.end())
    case_match = _ZH_CASE.search(text, left, right)
    drop_match = _ZH_DROP.search(text, left, min(len(text), right + 16))
    if case_match is None and drop_match is None:
        return found
    colon = min((i for i in (text.find(c, match.end()) for c in "：:") if i >= 0), default=-1)
    copied = text[colon + 1 :].strip() if colon >= 0 else text[:left].strip(" ，,。")
    if not copied:
        return found
    case: Literal["upper", "lower"] | None = None
    if case_match is not None:
        case = "upper" if case_match.group("case") == "大写" else "lower"
    drop: Drop | None = None
    if drop_match is not None:
        drop = "last_sentence" if drop_match.group("which") in ("最后", "末") else "first_sentence"
    said = case_match.span() if case_match is not None else (match.start(), match.end())
    dropped = drop_match.span() if drop_match is not None else (0, 0)
    found = [g for g in found if not (
        g.kind in (Kind.REPEAT_PROMPT, Kind.COPY)
        or (g.kind in _PROSE_KINDS and g.start < dropped[1] and dropped[0] < g.end) or (
            g.kind in (Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE) and case is not None and g.start < said[1] + 4
            and said[0] - 4 < g.end))]
    kind, params = canonical(Copy(text=copied, change=True, case=case, drop=drop))
    found.append(Found(kind=kind, params=params, start=match.start(), end=match.end(), confidence=0.85))
    return found


def refine_structure_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with a copy's case / dropped sentence, prose beside a list, table headers and marked
    responses read from ``text``."""
    readings = _copy_changes(text, list(found))
    readings = _prose_beside(text, readings)
    readings = _headers(text, readings)
    return _responses(text, readings)
