"""Items joined by a separator instead of bullet points: "list five fruits, using ' | ' as a separator instead of bullets".

The list readers take "five fruits ... bullet points" for a bullet count,
which steers the answer into the very list the request forbids. A sentence
that names a separator ("separator", "separate(d) by / with", "delimit",
分隔 / 隔开) and sets it against bullets or a list ("instead of", "rather
than", "not", "no", "without", 不要 / 不用 / 而不是) is read here instead:

- ``structure(no_list)``: no bulleted or numbered lines;
- the separator used between the items: a count of its character
  (``characters``, or ``punctuation`` for a punctuation mark) at least n - 1
  where the request counts n items (at least 1 otherwise); a separator of
  several characters (" -- ") is a count of that text (``keyword_frequency``).

The separator is the quoted text in the sentence (spaces around it left out
of the count) or a named mark ("semicolons", "commas", "slashes", "pipes",
"dashes", 分号 ...). A bullet count or list reading in the sentence is
dropped; the count of items it held gives n.

Not read: "separate the paragraphs with a blank line" (no bullets named),
"use bullet points separated by blank lines" (bullets asked, not refused).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _QUOTED
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import STANDARD_MARKS
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.form import Count, Filter, Structure, Unit, canonical
from reasoning.constraints.form.model import Layout
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import parse_number, parse_zh_number

__all__ = ["detect_bullet_separator", "refine_bullet_separator_chinese"]

_SEPARATING = frozenset({"separator", "separate", "delimit", "delimiter", "divide", "divider", "join"})
_REFUSED = re.compile(r"(?:\b(?:instead\s+of|rather\s+than|in\s+place\s+of|not|no|without|never|avoid)\b|n't)"
                      r"(?=[^.;!?\n]{0,30}?\b(?:bullets?|bulleted|lists?|points?|markdown)\b)", re.IGNORECASE)
_LIST_WORDS = frozenset({"bullet", "bulleted", "list", "point", "markdown"})
_MARKS: Mapping[str, str] = {"semicolon": ";", "comma": ",", "slash": "/", "pipe": "|", "dash": "-",
                             "hyphen": "-", "colon": ":", "period": ".", "ampersand": "&", "arrow": "->",
                             "bar": "|", "asterisk": "*", "tilde": "~"}
_ZH_MARKS: Mapping[str, str] = {"分号": "；", "逗号": "，", "顿号": "、", "斜杠": "/", "竖线": "|", "破折号": "——",
                                "冒号": "："}
_LIST_KINDS = (Kind.BULLET_COUNT, Kind.STRUCTURE)
#: A mark counted in both widths, as the count readers count a named mark ("commas": "," and "，").
_WIDTHS = {c: pair for pair in STANDARD_MARKS for c in pair}


def _separator_count(separator: str, items: int | None) -> tuple[Kind, dict[str, object]]:
    """The reading of the separator used between ``items`` items (None: not counted)."""
    sep = separator.strip() or separator
    n = max(1, items - 1) if items else 1
    if len(sep) == 1:
        unit = Unit.PUNCTUATION if unicodedata.category(sep).startswith("P") else Unit.CHARACTERS
        return canonical(Count(unit=unit, relation=Relation.AT_LEAST, n=n, filter=Filter(chars=_WIDTHS.get(sep, sep))))
    return canonical(Count(unit=Unit.KEYWORDS, relation=Relation.AT_LEAST, n=n, filter=Filter(text=sep)))


def _items_of(found: Sequence[Found]) -> int | None:
    for f in found:
        n = f.params.get("n")
        if f.kind in _LIST_KINDS and isinstance(n, int) and n > 0:
            return n
    return None


def _refuses(f: Found, separator: str) -> bool:
    """Whether ``f`` forbids the separator ("do not use bullet points; separate items with commas" read
    the negation over the commas too)."""
    if f.kind is Kind.NO_COMMA:
        return separator in ",，"
    chars = str((f.params.get("filter") or {}).get("chars", ""))
    return f.kind is Kind.COUNT and f.params.get("n") == 0 and bool(chars) and separator in chars


def _replace(found: list[Found], start: int, end: int, separator: str, items: int | None = None) -> list[Found]:
    """``found`` without its list readings in ``start..end``, with the no-list and separator readings
    (between ``items`` items, else as many as a dropped list reading counted)."""
    inside = [f for f in found if f.kind in _LIST_KINDS and overlaps(f, start, end)]
    items = items or _items_of(inside)
    sep = separator.strip() or separator
    kept = [f for f in found if not any(f is g for g in inside) and not (
        overlaps(f, start, end) and _refuses(f, sep))]
    no_list = canonical(Structure(layout=Layout.NO_LIST))
    if not any(f.kind is no_list[0] and f.params == no_list[1] for f in kept):
        kept.append(Found(kind=no_list[0], params=no_list[1], start=start, end=end, confidence=0.85))
    kind, params = _separator_count(separator, items)
    kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.8))
    return kept


def _named_separator(ctx: Context, start: int, end: int) -> str | None:
    """The mark the items are joined with: the first named after "with" / "by" / "using", else the first."""
    joined = next((j for j in range(start, end) if ctx.lowers[j] in ("with", "by", "using")), start)
    for j in [*range(joined, end), *range(start, joined)]:
        mark = _MARKS.get(ctx.lemmas[j])
        if mark is not None:
            return mark
    return None


def _count_before_noun(ctx: Context, j: int) -> int | None:
    """The number at token ``j`` when a plural noun follows it ("four tips", "5 fruits")."""
    token = ctx.tokens[j]
    if not token.like_num or ctx.tokens[j + 1].tag_ not in ("NNS", "NNPS"):
        return None
    value = parse_number([token.text])
    return value if value is not None and 1 < value <= 100 else None


def detect_bullet_separator(ctx: Context) -> None:
    """Replace a bullet reading by no list and the separator's count (see the module doc)."""
    for sent in ctx.doc.sents:
        lemmas = ctx.lemmas[sent.start:sent.end]
        if not any(lemma in _SEPARATING for lemma in lemmas) or not any(lemma in _LIST_WORDS for lemma in lemmas):
            continue
        if not _REFUSED.search(sent.text):
            continue
        quoted = next((m for m in _QUOTED.finditer(ctx.text, sent.start_char, sent.end_char)), None)
        separator = next(g for g in quoted.groups() if g is not None) if quoted is not None else None
        if separator is None or not separator.strip():
            separator = _named_separator(ctx, sent.start, sent.end)
        if separator is None or re.search(r"\w", separator):
            continue
        items = next((n for j in range(sent.start, sent.end - 1) if (n := _count_before_noun(ctx, j)) is not None), None)
        begin = min([sent.start_char, *(f.start for f in ctx.found if f.kind in _LIST_KINDS
                                        and overlaps(f, sent.start_char, sent.end_char))])
        ctx.found = _replace(ctx.found, begin, sent.end_char, separator, items)
        return


_ZH_SEPARATOR = r"[“\"「‘'][^”\"」’']{1,4}[”\"」’']|" + alternation(_ZH_MARKS)  # a quoted separator or a named mark
_ZH_SEPARATING = re.compile(
    rf"(?:用|以|使用)\s*(?P<sep>{_ZH_SEPARATOR})\s*(?:来)?(?:分隔|隔开|分开|连接)"
    r"[^。！？\n]{0,20}?(?:不要|不用|不得|而不是|不使用|别用)[^。！？\n]{0,6}?(?:项目符号|列表|要点符号|圆点)"
    r"|(?:不要|不用|不得|不使用|别用)[^。！？\n]{0,6}?(?:项目符号|列表|要点符号|圆点)[^。！？\n]{0,10}?"
    rf"(?:用|以|使用|而是用|改用)\s*(?P<sep2>{_ZH_SEPARATOR})"
)
_ZH_ITEMS = re.compile(r"(?P<num>\d+|[一二两三四五六七八九十]+)\s*[个种条项点件]")


def refine_bullet_separator_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """用“|”分隔，不要使用项目符号: no list, and the separator between the items."""
    kept = list(found)
    for match in _ZH_SEPARATING.finditer(text):
        raw = match.group("sep") or match.group("sep2") or ""
        separator = _ZH_MARKS.get(raw, raw.strip("“”\"「」‘’'"))
        if not separator.strip():
            continue
        start, end = sentence_bounds(text, match.start(), match.end(), "\n。！？", with_mark=False)
        counted = _ZH_ITEMS.search(text, start, end)
        items = parse_zh_number(counted.group("num")) if counted is not None else None
        kept = [f for f in kept if not (f.kind in _LIST_KINDS and overlaps(f, start, end))]
        kept = _replace(kept, match.start(), match.end(), separator, items)
        return kept
    return kept
