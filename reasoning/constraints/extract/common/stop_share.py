"""A bound on the share of stop words: "no more than 30% of the words may be stop words", 停用词占比不超过40%.

A sentence naming stop words ("stop word(s)", "stopword(s)", 停用词) and a
share (a percentage, "30 percent", "half", "a third", "two thirds", a ratio
such as 0.4; 百分之三十, 一半) with a relation (the quantity readers'
relation words before the share, or "not exceed" / "stay below" / "keep ...
under", 不超过 / 低于 / 少于 / 至少 / 超过) is the ratio count
``count(words, stop_words) / count(words) relation fraction``: the
verifier counts the words spaCy's English and Chinese stop lists hold, and
an upper bound is kept by the tally's share cap (a stop word is masked
while it would raise the share past the bound). No relation said, no
reading: "stop words are 30% of English text" states a fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _number_at
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.form import Count, Filter, Measure, Unit, canonical
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import parse_zh_number, relation_before

__all__ = ["detect_stop_share", "refine_stop_share_chinese"]

_DENIED = {Relation.MORE_THAN: Relation.AT_MOST, Relation.AT_LEAST: Relation.LESS_THAN,
           Relation.LESS_THAN: Relation.AT_LEAST, Relation.AT_MOST: Relation.MORE_THAN}
_FRACTIONS = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fourth": 0.25, "fifth": 0.2, "tenth": 0.1}
_CAPS = re.compile(r"\b(?:not?\s+(?:\w+\s+)?exceed|never\s+exceed|stay\s+(?:below|under)|keep\b[^.]{0,40}?\b(?:below|under)|"
                   r"cap\b|limit\b|maximum|at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to)", re.IGNORECASE)
_FLOORS = re.compile(r"\b(?:at\s+least|no\s+less\s+than|no\s+fewer\s+than|minimum|more\s+than|over|above|exceed)\b",
                     re.IGNORECASE)


def _stop_words_at(ctx: Context, start: int, end: int) -> bool:
    return any(ctx.lowers[j] in ("stopword", "stopwords", "stop-words", "stop-word")
               or ctx.lowers[j] == "stop" and j + 1 < end and ctx.lemmas[j + 1] == "word" for j in range(start, end))


def _share(ctx: Context, start: int, end: int) -> tuple[float, int] | None:
    """The share said in tokens ``start..end`` and its first token."""
    for j in range(start, end):
        lower = ctx.lowers[j]
        if ctx.tokens[j].text == "%" or lower in ("percent", "per-cent"):
            number = _number_at(ctx.doc, j - 1) if j > start else None
            if number is not None and 0 < number[0] <= 100:
                return number[0] / 100, number[1]
        match = re.fullmatch(r"(\d+(?:\.\d+)?)%", ctx.tokens[j].text)
        if match is not None and 0 < float(match.group(1)) <= 100:
            return float(match.group(1)) / 100, j
        if re.fullmatch(r"0?\.\d+", lower):
            return float(lower), j
        if ctx.lemmas[j] in _FRACTIONS:
            fraction = _FRACTIONS[ctx.lemmas[j]]
            number = _number_at(ctx.doc, j - 1) if j > start else None
            if number is not None and ctx.lemmas[j] != "half" and 0 < number[0] * fraction <= 1:
                return number[0] * fraction, number[1]
            return fraction, j - 1 if j > start and ctx.lowers[j - 1] in ("a", "one") else j
    return None


def detect_stop_share(ctx: Context) -> None:
    """A bound on the share of stop words among the answer's words (see the module doc)."""
    for sent in ctx.doc.sents:
        if not _stop_words_at(ctx, sent.start, sent.end):
            continue
        share = _share(ctx, sent.start, sent.end)
        if share is None:
            # "use stop words sparingly": no bound to read, and "sparingly" is no keyword to include
            ctx.found = [f for f in ctx.found
                         if not (f.kind is Kind.KEYWORDS_PRESENT and overlaps(f, sent.start_char, sent.end_char))]
            continue
        fraction, first = share
        before = relation_before(ctx.lowers[max(sent.start, first - 4):first])
        if before is not None:
            relation = before[0]
            denied = any(ctx.lowers[j] in ("not", "never", "n't", "no") for j in range(sent.start, first - before[1]))
            relation = _DENIED.get(relation, relation) if denied else relation  # "must not make up more than 35%"
        elif _CAPS.search(sent.text):
            relation = Relation.AT_MOST
        elif _FLOORS.search(sent.text):
            relation = Relation.AT_LEAST
        else:
            continue
        form = Count(unit=Unit.WORDS, filter=Filter(stop_words=True), relation=relation, n=0,
                     of=Measure(unit=Unit.WORDS), fraction=round(fraction, 4))
        kind, params = canonical(form)
        ctx.found = [f for f in ctx.found if not (overlaps(f, sent.start_char, sent.end_char)
                                                  and f.kind in (Kind.COUNT, Kind.WORD_COUNT, Kind.KEYWORDS_PRESENT))]
        ctx.found.append(Found(kind=kind, params=params, start=sent.start_char, end=sent.end_char, confidence=0.85))
        return


_ZH_SHARE = re.compile(r"(?:百分之(?P<pct_zh>[一二两三四五六七八九十]+)|(?P<pct>\d+(?:\.\d+)?)\s*[%％]|(?P<half>一半)|"
                       r"(?P<den>[二三四五六七八九十])分之(?P<num>[一二三四五六七八九]))")
_ZH_CAP = re.compile(r"不得?超过|不能超过|不可超过|不要超过|低于|少于|不高于|以下|以内|最多|至多|上限")
_ZH_FLOOR = re.compile(r"至少|不少于|不低于|高于|超过|多于|以上")


def refine_stop_share_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """停用词的比例不得超过40%: a bound on the share of stop words."""
    for clause in re.finditer(r"[^。！？；\n]*停用词[^。！？；\n]*", text):
        piece = clause.group(0)
        match = _ZH_SHARE.search(piece)
        if match is None:
            continue
        if match.group("pct"):
            fraction = float(match.group("pct")) / 100
        elif match.group("pct_zh"):
            fraction = (parse_zh_number(match.group("pct_zh")) or 0) / 100
        elif match.group("half"):
            fraction = 0.5
        else:
            den, num = parse_zh_number(match.group("den")), parse_zh_number(match.group("num"))
            fraction = num / den if den and num else 0.0
        if not 0 < fraction <= 1:
            continue
        if _ZH_CAP.search(piece):
            relation = Relation.AT_MOST if not re.search(r"低于|少于", piece) else Relation.LESS_THAN
        elif _ZH_FLOOR.search(piece):
            relation = Relation.AT_LEAST if not re.search(r"高于|超过|多于", piece) else Relation.MORE_THAN
        else:
            continue
        form = Count(unit=Unit.WORDS, filter=Filter(stop_words=True), relation=relation, n=0,
                     of=Measure(unit=Unit.WORDS), fraction=round(fraction, 4))
        kind, params = canonical(form)
        start, end = clause.start(), clause.end()
        kept = [f for f in found if not (overlaps(f, start, end) and f.kind in (Kind.COUNT, Kind.WORD_COUNT))]
        kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
        return kept
    return list(found)
