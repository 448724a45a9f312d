"""A template of labelled slots to fill: "fill in this template: Summary: [summary] Risks: [risks]".

A request that names a template or a format to follow ("fill in this
template", "use the following format exactly", "follow the template
'...'", "answer in the form: ...", 按以下模板回答, 格式如下) and shows it, with
two or more labelled slots in square brackets or blanks of underscores
("Summary: [summary]", "Name: ___": a label and a colon or "=" before the
slot), is the whole answer as a pattern
(``regex_format``): the template's text verbatim (its runs of white space
as any white space), each slot filled with text of its own (one line of 1
to 120 characters, no bracket: a slot left as "[summary]" is not filled).
The template is the text after the request's colon (on its line and the
lines after, up to a blank line) or the quoted text holding the slots.
The decoder runs the pattern as a grammar; the verifier matches it.

Not read: slots without a template word ("write [name] somewhere": the
placeholders reader's), a template of one labelled slot, slots with no label
("[essay] ****** [poem]": responses between a divider; "list [sport] and
[country] for each").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _QUOTED
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.sentence_bounds import MARKS, sentence_bounds
from reasoning.constraints.model import Kind

__all__ = ["detect_template", "refine_template_chinese", "template_pattern"]

_NAMED = re.compile(r"\b(?:template|format|form|layout|structure|fill\s+(?:in|out))\b|模板|格式|模版|填写|如下填", re.IGNORECASE)
_SLOT = re.compile(r"\[[^\[\]\n]{1,40}\]|_{3,}")
_FILL = r"[^\[\]\n]{1,120}"


def template_pattern(template: str) -> str:
    """The answer the template asks for: its text verbatim, white space any, each ``[slot]`` filled."""
    parts: list[str] = []
    at = 0
    for slot in _SLOT.finditer(template):
        parts.append(_literal(template[at:slot.start()]))
        parts.append(_FILL)
        at = slot.end()
    parts.append(_literal(template[at:]))
    return "".join(parts)


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(piece) for piece in re.split(r"\s+", text)) if text.strip() else (
        r"\s+" if text else "")


def _labelled(template: str) -> int:
    """How many slots of ``template`` follow a label ("Summary: [summary]", "Name = [name]")."""
    return sum(1 for slot in _SLOT.finditer(template) if re.search(r"\w\s*[:：=]\s*$", template[:slot.start()]))


def _template_at(text: str, start: int) -> tuple[int, int] | None:
    """The template after ``start``: a quoted text holding slots, or the text after the next colon."""
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    for quoted in _QUOTED.finditer(text, start, line_end):
        inner = next(g for g in quoted.groups() if g is not None)
        if len(_SLOT.findall(inner)) >= 2:
            begin = quoted.start() + quoted.group(0).find(inner)
            return begin, begin + len(inner)
    colon = re.compile(r"[:：]").search(text, start, line_end)
    opening = colon.end() if colon is not None else line_end  # "fill out the form below.\nName: [name] ..."
    block_end = text.find("\n\n", opening)
    block_end = len(text) if block_end < 0 else block_end
    begin = opening
    while begin < block_end and text[begin].isspace():
        begin += 1
    end = block_end
    last = list(_SLOT.finditer(text, begin, end))
    if len(last) < 2:
        return None
    tail = text.find("\n", last[-1].end(), end)
    return begin, (tail if tail >= 0 else end)


def _read(text: str, found: Sequence[Found]) -> list[Found] | None:
    for named in _NAMED.finditer(text):
        sentence_start = sentence_bounds(text, named.start(), named.start(), MARKS)[0]
        at = _template_at(text, sentence_start)
        if at is None:
            continue
        begin, end = at
        template = text[begin:end].strip()
        if _labelled(template) < 2:
            continue  # "[essay] ****** [poem]", "list [sport] and [country]": no labelled slots
        kept = [f for f in found if not (overlaps(f, sentence_start, end) and f.kind in (
            Kind.PLACEHOLDERS, Kind.KEYWORDS_PRESENT, Kind.START_PHRASE, Kind.END_PHRASE, Kind.STRUCTURE,
            Kind.POSITION, Kind.COUNT))]
        kept.append(Found(kind=Kind.REGEX_FORMAT, params={"pattern": template_pattern(template)},
                          start=sentence_start, end=end, confidence=0.85))
        return kept
    return None


def detect_template(ctx: Context) -> None:
    """The template's answer pattern (see the module doc)."""
    if any(f.kind is Kind.REGEX_FORMAT for f in ctx.found):
        return
    read = _read(ctx.text, ctx.found)
    if read is not None:
        ctx.found = read


def refine_template_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """按以下模板回答：摘要：[摘要] 风险：[风险]: the same pattern."""
    if any(f.kind is Kind.REGEX_FORMAT for f in found):
        return list(found)
    read = _read(text, found)
    return read if read is not None else list(found)
