"""A Chinese answer that is one of listed options: 只回答以下选项之一：是、否、也许.

The one-word reader (:mod:`reasoning.constraints.extract.zh.pieces`, 只用一个词回答：是、否或不确定)
needs 一个词; a choice is also said as one of a list: 回答以下选项之一：A、B、C,
从“同意”“不同意”中选一个回答, 你的回答只能是“是”或“否”. Read here: a clause with
an answering or choosing verb (回答, 回复, 答复, 选择, 选) or 你的回答 / 答案, naming one
of a list (之一, 其中之一, 中的一个, 选一个, 只能是), and at least two short options
(each at most 8 characters, split by 、，, / 或 / 还是, quotes stripped). The
reading is ``constrained_response``.

Not read: a content request with a list (介绍以下主题之一：…, no answering verb).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.model import Kind

__all__ = ["refine_choice_chinese"]

_Q = "“”\"'「」‘’"
_OPTION = rf"[{_Q}]?[^\s{_Q}、，,。；;：:/或]{{1,8}}[{_Q}]?"


def _options(name: str) -> str:
    return rf"(?P<{name}>{_OPTION}(?:\s*(?:[、，,/]|或者|或|还是)\s*{_OPTION})+)"


_ANSWERING = r"(?:回答|回复|答复|作答|选择|选|答案|你的回答|回应)"
_CHOICE = re.compile(
    rf"{_ANSWERING}[^。！？\n]{{0,12}}?(?:之一|其中之一|中的一个|其中一个|一项|一个)(?:来|进行)?(?:回答|作答|答复|回复)?\s*[：:]\s*{_options('a')}"
    rf"|{_ANSWERING}[^。！？\n：:]{{0,6}}?只能是\s*[：:]?\s*{_options('b')}"
    rf"|从\s*{_options('c')}\s*(?:中|之中|里)\s*选(?:择)?(?:一个|一项|其一)"
)
_SPLIT = re.compile(r"[、，,/]|或者|或|还是")


def refine_choice_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with ``constrained_response`` for a choice among listed options (see the module doc)."""
    kept = list(found)
    if any(f.kind is Kind.CONSTRAINED_RESPONSE for f in kept):
        return kept
    for match in _CHOICE.finditer(text):
        options = [o.strip(" " + _Q) for o in _SPLIT.split(match.group("a") or match.group("b") or match.group("c"))]
        options = [o for o in options if o]
        if len(options) < 2 or len(set(options)) < len(options):
            continue
        start, end = match.start(), match.end()
        kept = [f for f in kept if not (f.kind in (Kind.KEYWORDS_PRESENT, Kind.WORD_COUNT) and overlaps(f, start, end))]
        kept.append(Found(kind=Kind.CONSTRAINED_RESPONSE, params={"options": options}, start=start, end=end,
                          confidence=0.85))
        return kept
    return kept
