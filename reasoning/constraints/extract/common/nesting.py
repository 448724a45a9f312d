"""Brackets or quotes nested k levels deep: no count of spans, no wrapped answer.

"Parentheses nested at least 3 levels deep", "brackets nested two levels",
"quotes nested 2 levels", 括号至少嵌套三层: the depth of nesting is no
quantity the form counts. The readers before took the number for a count
of bracketed spans ("at least 3 spans in parentheses") or the brackets for
a wrapper of the whole answer, which steer to flat brackets or to one pair
around everything; both are dropped here, so the sentence is reported as
``unrecognised`` (neither checked nor steered) rather than read wrongly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.model import Kind

__all__ = ["detect_nesting", "refine_nesting_chinese"]

_DELIMITER = r"(?:parenthes[ie]s|parenthetical|brackets?|braces?|quot(?:es?|ation\s+marks?|ations?))"
_NESTING = r"(?:nest(?:ed|ing|s)?|embedded|inside\s+(?:one\s+)?another|within\s+each\s+other|levels?\s+deep)"
#: The nesting said of the delimiters themselves ("parentheses nested 3 levels", "nested brackets"), not
#: of something else beside them ("nested loops ... examples in brackets").
_NESTED_DELIMITERS = re.compile(
    rf"\b{_DELIMITER}\W+(?:\w+\W+){{0,3}}?{_NESTING}\b|\b{_NESTING}\W+(?:\w+\W+){{0,2}}?{_DELIMITER}\b"
    rf"|\b{_DELIMITER}\s+(?:inside|within)\s+(?:other\s+|more\s+)?{_DELIMITER}\b", re.IGNORECASE)
#: A depth said with the nesting: "embedded" or "inside another" alone is no depth ("a quote embedded in the text").
_DEPTH = re.compile(r"\b(?:nest(?:ed|ing|s)?|levels?|layers?|deep(?:ly)?|each\s+other|one\s+another)\b"
                    rf"|\b{_DELIMITER}\s+(?:inside|within)\s+(?:other\s+|more\s+)?{_DELIMITER}\b", re.IGNORECASE)
_ZH_NESTED = re.compile(r"[^。！？\n]*(?:括号|引号)[^。！？\n]*嵌套[^。！？\n]*|[^。！？\n]*嵌套[^。！？\n]*(?:括号|引号)[^。！？\n]*")


def _dropped(f: Found, start: int, end: int) -> bool:
    if not overlaps(f, start, end):
        return False
    return f.kind in (Kind.WRAP, Kind.QUOTATION) or f.kind is Kind.COUNT and f.params.get("unit") == "spans"


def detect_nesting(ctx: Context) -> None:
    """Drop the span counts and wrappers read from a nesting depth (see the module doc)."""
    for sent in ctx.doc.sents:
        if _NESTED_DELIMITERS.search(sent.text) and _DEPTH.search(sent.text):
            ctx.found = [f for f in ctx.found if not _dropped(f, sent.start_char, sent.end_char)]


def refine_nesting_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """括号至少嵌套三层: the same, in Chinese."""
    kept = list(found)
    for match in _ZH_NESTED.finditer(text):
        kept = [f for f in kept if not _dropped(f, match.start(), match.end())]
    return kept
