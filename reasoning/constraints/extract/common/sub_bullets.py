"""Bullets each with sub-bullets: "3 bullet points marked with *, each with a sub-bullet marked with -".

A sentence that gives every bullet (each / every / under each) an exact
number of sub-bullets ("a sub-bullet", "one sub-point", "two sub-items",
每个要点下有一个子要点) is the nested list ``structure(nested_list, n,
sub_items)``: ``n`` the bullets the request counts (its bullet count or a
number before the bullet noun), ``sub_items`` the sub-bullets under each.
The decoder's template writes such a list with ``*`` items and ``  - ``
sub-items, the markers these requests name most ("marked with *", "a dash
for the sub-bullets"). The readers before took the markers for the items'
opening text ("every bullet should have one sub-bullet that starts with a
dash": every bullet starting with "-") and the sub-bullets for a count in
the whole answer ("exactly 1 nested bullet"); those readings are replaced.

A minimum of sub-bullets ("under every main point at least one sub-point",
每个要点下至少有两个子要点) is the same list with ``sub_at_least``; another bound
("at most two sub-points each") is left unread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _number_at
from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.lexicon import EN_EVERY
from reasoning.constraints.form import Structure, canonical
from reasoning.constraints.form.model import Layout
from reasoning.constraints.model import Kind
from reasoning.constraints.quantities import parse_zh_number, relation_before

__all__ = ["detect_sub_bullets", "refine_sub_bullets_chinese"]

_SUB = re.compile(r"^sub-?(?:bullet|point|item|list|entry|entries|bullets|points|items)s?$|^subpoints?$|^subbullets?$")
_ITEM_NOUNS = frozenset({"bullet", "point", "item", "entry"})
_MARKERS = frozenset({"-", "*", "+", "•"})


def _list_reading(f: Found) -> bool:
    if f.kind in (Kind.BULLET_COUNT, Kind.STRUCTURE):
        return f.params.get("layout") in (None, "list", "nested_list")
    if f.kind is Kind.COUNT:
        return f.params.get("unit") == "nested_bullets"
    return f.kind is Kind.POSITION and f.params.get("unit") == "bullets" and f.params.get("text") in _MARKERS


def _items(found: Sequence[Found]) -> int | None:
    for f in found:
        n = f.params.get("n")
        if f.kind in (Kind.BULLET_COUNT, Kind.STRUCTURE) and isinstance(n, int) and n > 1:
            return n
    return None


def _sub_word(ctx: Context, j: int) -> int:
    """Tokens the sub-bullet noun at ``j`` spans (0: none): "sub-bullet", "sub - bullet", "subpoint"."""
    if _SUB.match(ctx.lowers[j]):
        return 1
    if ctx.lowers[j] == "sub" and j + 2 < len(ctx.tokens) and ctx.lowers[j + 1] == "-" \
            and ctx.lemmas[j + 2] in _ITEM_NOUNS:
        return 3
    if ctx.lowers[j] in ("nested", "indented") and j + 1 < len(ctx.tokens) and ctx.lemmas[j + 1] in _ITEM_NOUNS:
        return 2  # "one nested bullet point under it"
    return 0


def _number_before(ctx: Context, j: int, floor: int) -> int | None:
    """The exact number of the noun at ``j``: "one", "two", "a" (1); None for a bound or none."""
    said = _bound_before(ctx, j, floor)
    return said[0] if said is not None and not said[1] else None


def _bound_before(ctx: Context, j: int, floor: int) -> tuple[int, bool] | None:
    """The number of the noun at ``j`` and whether it is a minimum ("at least two"); None for none or
    another bound ("at most two")."""
    k = j - 1
    while k >= floor and (ctx.tokens[k].pos_ == "ADJ" or ctx.tokens[k].text in _MARKERS):
        k -= 1
    if k < floor:
        return None
    if ctx.lowers[k] in ("a", "an", "single"):
        return (1, True) if k >= floor + 2 and ctx.lowers[k - 2 : k] == ["at", "least"] else (1, False)
    number = _number_at(ctx.doc, k)
    if number is None:
        return None
    before = relation_before(ctx.lowers[max(floor, number[1] - 4):number[1]])
    if before is None or before[0].value == "exactly":
        return number[0], False
    return (number[0], True) if before[0].value == "at least" else None


def _replace(found: Sequence[Found], n: int | None, sub_items: int, start: int, end: int,
             at_least: bool = False) -> list[Found]:
    kept = [f for f in found if not _list_reading(f)]
    kind, params = canonical(Structure(layout=Layout.NESTED_LIST, n=n, sub_items=sub_items, sub_at_least=at_least))
    return [*kept, Found(kind=kind, params=params, start=start, end=end, confidence=0.85)]


def detect_sub_bullets(ctx: Context) -> None:
    """A nested list of so many sub-bullets under every bullet (see the module doc)."""
    for sent in ctx.doc.sents:
        lemmas = set(ctx.lemmas[sent.start:sent.end])
        if not lemmas & EN_EVERY:
            continue
        for j in range(sent.start, sent.end):
            width = _sub_word(ctx, j)
            if not width:
                continue
            said = _bound_before(ctx, j, sent.start)
            if said is None or not 1 <= said[0] <= 5:
                # "each with at most two sub-points": a bound under every bullet, no total of the answer's
                ctx.found = [f for f in ctx.found if not (f.kind is Kind.COUNT and f.params.get("unit") ==
                                                          "nested_bullets" and sent.start_char <= f.start < sent.end_char)]
                return
            n = next((v for k in range(sent.start, j) if ctx.lemmas[k] in _ITEM_NOUNS
                      and (v := _number_before(ctx, k, sent.start)) is not None and v > 1), None) or _items(ctx.found)
            ctx.found = _replace(ctx.found, n, said[0], sent.start_char, sent.end_char, at_least=said[1])
            return


_ZH = re.compile(r"(?:每个|每一个|每条|每一条|每项|每一项)(?:要点|条目|项目|项|列表项)[^。！？\n]{0,12}?(?P<least>至少)?"
                 r"(?:有|列|写)?(?P<num>一|两|二|三|四|五|\d+)\s*(?:个|条|项)[^。！？\n]{0,10}?子(?:要点|项目|条目|项|列表)")


def refine_sub_bullets_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """每个要点下有一个用-标记的子要点: the nested list."""
    match = _ZH.search(text)
    if match is None:
        return list(found)
    sub_items = parse_zh_number(match.group("num"))
    if sub_items is None or not 1 <= sub_items <= 5:
        return list(found)
    return _replace(found, _items(found), sub_items, match.start(), match.end(), at_least=bool(match.group("least")))
