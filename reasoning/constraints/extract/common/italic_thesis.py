"""Every piece opening with a thesis in HTML italics: "each section begins with a thesis in HTML italics (<i>...</i>)".

A sentence that names HTML italics ("<i>", "HTML italic(s)", "italic tags",
<i></i>标签) and an opening of every piece ("each section / paragraph / part
begins with", "start every paragraph with", 每个部分 / 每段 ... 开头) is two
forms over blank-line paragraphs (a section without markers is a
paragraph):

- ``position(paragraphs, k=0, starts_with, "<i>")``: the opening tag first,
  which the openings controller forces where a paragraph begins;
- ``count(spans, left="<i>", right="</i>", nonempty) at least 1`` per
  paragraph: the thesis is closed in the same paragraph (verified).

The readers before take the noun after "with" for the opening text ("begin
each paragraph with a thesis ...": the word "thesis"); that reading is
dropped, and so is a length said of the thesis ("a one-sentence thesis" is
no paragraph of one sentence). Italics without HTML named ("begin each paragraph with a thesis in
italics") are no HTML tag to force: only the wrong opening text is dropped
(the sentence is then reported ``unrecognised``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_EVERY
from reasoning.constraints.form import Count, Filter, Position, Unit, canonical
from reasoning.constraints.model import Kind, Relation

__all__ = ["detect_italic_thesis", "refine_italic_thesis_chinese"]

_ITALIC = re.compile(r"\bitalic", re.IGNORECASE)
_HTML_ITALIC = re.compile(r"<i>|</i>|\bhtml\b[^.\n]{0,30}?\bitalic|\bitalic\w*\s+(?:html\s+)?tags?\b", re.IGNORECASE)
_OPENING = frozenset({"begin", "start", "open", "lead", "commence"})
_PIECES = frozenset({"section", "paragraph", "part", "block"})
_DROPPED = (Kind.POSITION, Kind.START_PHRASE, Kind.KEYWORDS_PRESENT, Kind.NTH_PARAGRAPH_FIRST_WORD)


def _forms(start: int, end: int) -> list[Found]:
    opening = canonical(Position(unit=Unit.PARAGRAPHS, k=0, op="starts_with", text="<i>"))
    closed = canonical(Count(unit=Unit.SPANS, relation=Relation.AT_LEAST, n=1,
                             filter=Filter(left="<i>", right="</i>", nonempty=True), per=Unit.PARAGRAPHS))
    return [Found(kind=kind, params=params, start=start, end=end, confidence=0.85) for kind, params in (opening, closed)]


def _without(found: Sequence[Found], start: int, end: int) -> list[Found]:
    return [f for f in found if not (overlaps(f, start, end) and (
        f.kind in _DROPPED or f.kind is Kind.COUNT and (
            f.params.get("unit") == "spans" or f.params.get("per") == "paragraphs")))]


def detect_italic_thesis(ctx: Context) -> None:
    """Every paragraph opens with an HTML-italic thesis (see the module doc)."""
    for sent in ctx.doc.sents:
        if not _ITALIC.search(sent.text) and not _HTML_ITALIC.search(sent.text):
            continue
        lemmas = ctx.lemmas[sent.start:sent.end]
        if not (set(lemmas) & _OPENING and set(lemmas) & _PIECES and set(lemmas) & EN_EVERY):
            continue
        ctx.found = _without(ctx.found, sent.start_char, sent.end_char)
        if _HTML_ITALIC.search(sent.text):
            ctx.found += _forms(sent.start_char, sent.end_char)
        return


_ZH = re.compile(r"(?:每个|每一个|每|各)(?:部分|段|段落|节|小节)[^。！？\n]{0,30}?(?:<i>|斜体标签|HTML斜体)[^。！？\n]{0,20}?开头"
                 r"|(?:每个|每一个|每|各)(?:部分|段|段落|节|小节)[^。！？\n]{0,6}?开头[^。！？\n]{0,20}?(?:<i>|斜体标签|HTML斜体)")


def refine_italic_thesis_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """每个部分都以用<i></i>标签包裹的论点开头: the same two forms."""
    match = _ZH.search(text)
    if match is None:
        return list(found)
    return _without(found, match.start(), match.end()) + _forms(match.start(), match.end())
