"""Every mark of a named set at least once: "use each of these at least once: a comma, a semicolon and a colon".

A sentence that names two or more punctuation marks (the lexicon's mark
words, :data:`~reasoning.constraints.extract.lexicon.EN_UNITS` / ``ZH_UNITS`` entries
with their characters, and the interrobang ``?!``) and asks for them with an
inclusion verb or "at least once" / "each" / "every" (使用 / 包含 / 出现 / 至少 /
每个) is one minimum per mark: ``count(punctuation, chars=<the mark in both
widths>) at least 1``; the interrobang is a count of the text ``?!``; said
of each piece ("each sentence must contain a comma, a semicolon and a
colon", 每段都要包含逗号和分号) every minimum holds per sentence / paragraph /
line.
"Every standard punctuation mark" with no marks listed is the period,
comma, question mark, exclamation mark, semicolon and colon. The number
readers' one count of all punctuation in the sentence ("at least one of
these punctuation marks") is dropped: any one mark would meet it.

A sentence that refuses two or more marks outright, with no number ("do not
use semicolons, colons or dashes", "avoid semicolons and colons"), is none of
each (the count readers took the first mark only).

Not read: a bound from above ("no more than one comma and one colon",
"never use more than one of these marks"), which the count readers keep; one
mark alone, which they read too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_UNITS, STANDARD_MARKS, ZH_UNITS
from reasoning.constraints.form import Count, Filter, Unit, canonical
from reasoning.constraints.model import Kind, Relation

__all__ = ["detect_mark_set", "refine_mark_set_chinese"]

#: Mark words of the lexicon (lemmas, first word first) -> the characters each counts.
_EN_MARKS: Mapping[tuple[str, ...], str] = {
    key: str(entry[1]["chars"]) for key, entry in EN_UNITS.items()
    if entry[0] is Unit.PUNCTUATION and entry[1].get("chars")
}
_ZH_MARKS: Mapping[str, str] = {
    word: str(entry[1]["chars"]) for word, entry in ZH_UNITS.items()
    if entry[0] is Unit.PUNCTUATION and entry[1].get("chars")
}
_INTERROBANG = "?!"
#: Pieces "each" / "every" gives every mark to ("each sentence must contain a comma, a semicolon and a colon").
_EN_PIECES: Mapping[str, Unit] = {"sentence": Unit.SENTENCES, "paragraph": Unit.PARAGRAPHS, "line": Unit.LINES}
_ZH_PIECES: Mapping[str, Unit] = {"每句": Unit.SENTENCES, "每一句": Unit.SENTENCES, "每个句子": Unit.SENTENCES,
                                  "每段": Unit.PARAGRAPHS, "每一段": Unit.PARAGRAPHS, "每行": Unit.LINES,
                                  "每一行": Unit.LINES}
_ASKING = frozenset({"use", "include", "contain", "appear", "have", "feature", "employ", "incorporate", "least",
                     "once", "each", "every", "all"})
_CAPPING = re.compile(r"\b(?:no\s+more|at\s+most|fewer|less|avoid|never|without|don't|do\s+not|not\s+use|no)\b",
                      re.IGNORECASE)
#: A sentence refusing marks outright ("do not use semicolons, colons or dashes", "avoid ...", "never use ...").
_REFUSING = re.compile(r"\s*(?:please\s+)?(?:do\s+not|don't|never|avoid|you\s+must\s+not|you\s+may\s+not)\s+(?:use|using|include|including)?\b",
                       re.IGNORECASE)
_ZH_ASKING = re.compile(r"使用|用到|包含|包括|出现|至少|每个|每种|都要|都用")
_ZH_CAPPING = re.compile(r"不要|不得|不能|禁止|避免|最多|不超过|至多|不用")


def _marks_in(ctx: Context, start: int, end: int) -> list[tuple[str, int, int]]:
    """The marks named in tokens ``start..end``: (characters, first token, last token)."""
    found: list[tuple[str, int, int]] = []
    j = start
    keys = sorted(_EN_MARKS, key=len, reverse=True)
    while j < end:
        if ctx.lemmas[j] == "interrobang":
            found.append((_INTERROBANG, j, j))
            j += 1
            continue
        hit = next((k for k in keys if j + len(k) <= end and all(
            ctx.lemmas[j + i] == part or ctx.lowers[j + i] == part for i, part in enumerate(k))), None)
        if hit is None:
            j += 1
            continue
        chars = _EN_MARKS[hit]
        if all(c[0] != chars for c in found):
            found.append((chars, j, j + len(hit) - 1))
        j += len(hit)
    return found


def _minimum(chars: str, per: Unit | None) -> tuple[Kind, dict[str, object]]:
    if chars == _INTERROBANG:
        return canonical(Count(unit=Unit.KEYWORDS, relation=Relation.AT_LEAST, n=1, filter=Filter(text=chars),
                               per=per))
    return canonical(Count(unit=Unit.PUNCTUATION, relation=Relation.AT_LEAST, n=1, filter=Filter(chars=chars),
                           per=per))


def _replace(found: Sequence[Found], marks: Sequence[str], start: int, end: int,
             per: Unit | None = None) -> list[Found]:
    """``found`` without its punctuation counts in ``start..end``, with one minimum per mark (in every
    ``per`` piece when set)."""
    kept = [f for f in found if not (overlaps(f, start, end) and (
        f.kind is Kind.COUNT and f.params.get("unit") == "punctuation" or f.kind is Kind.LETTER_FREQUENCY))]
    for chars in marks:
        kind, params = _minimum(chars, per)
        kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
    return kept


def _refuse_marks(ctx: Context, start: int, end: int) -> None:
    """"Do not use semicolons, colons or dashes": none of each named mark (the count readers read the first)."""
    end = next((j for j in range(start + 1, end) if ctx.lowers[j] in (";", "but", "instead", "rather", "separate")
                or ctx.lemmas[j] in ("use", "separate") and j > start + 2), end)  # the refusing clause only
    marks = [m[0] for m in _marks_in(ctx, start, end) if m[0] != _INTERROBANG]
    if len(marks) < 2:
        return
    begin, finish = ctx.tokens[start].idx, ctx.tokens[end - 1].idx + len(ctx.tokens[end - 1].text)
    kept = [f for f in ctx.found if not (overlaps(f, begin, finish) and (
        f.kind is Kind.COUNT and f.params.get("unit") == "punctuation" or f.kind is Kind.LETTER_FREQUENCY))]
    for chars in marks:
        kind, params = canonical(Count(unit=Unit.PUNCTUATION, relation=Relation.AT_MOST, n=0, filter=Filter(chars=chars)))
        kept.append(Found(kind=kind, params=params, start=begin, end=finish, confidence=0.85))
    ctx.found = kept


def _list_end(ctx: Context, end: int) -> int:
    """Past a sentence ending in a colon, the end of the lines after it (up to a blank line)."""
    while end < len(ctx.tokens) and "\n\n" not in ctx.tokens[end].text and "\n\n" not in ctx.tokens[end - 1].whitespace_:
        end += 1
    return end


def detect_mark_set(ctx: Context) -> None:
    """One minimum per named mark (see the module doc)."""
    for sent in ctx.doc.sents:
        lemmas = set(ctx.lemmas[sent.start:sent.end])
        if _REFUSING.match(sent.text) and not any(t.like_num for t in sent):
            _refuse_marks(ctx, sent.start, sent.end)
            continue
        if not lemmas & _ASKING or _CAPPING.search(sent.text):
            continue
        end = _list_end(ctx, sent.end) if sent.text.rstrip().endswith(":") else sent.end
        marks = [m[0] for m in _marks_in(ctx, sent.start, end)]
        if "standard" in lemmas and "punctuation" in lemmas and lemmas & {"every", "all"}:
            marks = list(dict.fromkeys([*STANDARD_MARKS, *marks]))
        elif len([m for m in marks if m != _INTERROBANG]) < 1 or len(marks) < 2:
            continue
        last = ctx.tokens[end - 1]
        per = next((_EN_PIECES[ctx.lemmas[j + 1]] for j in range(sent.start, end - 1)
                    if ctx.lemmas[j] in ("each", "every") and ctx.lemmas[j + 1] in _EN_PIECES), None)
        ctx.found = _replace(ctx.found, marks, sent.start_char, last.idx + len(last.text), per)
        return


def refine_mark_set_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """每个标点都至少使用一次：句号、逗号、问号 …: one minimum per named mark."""
    for match in re.finditer(r"[^。！？\n]+(?:[。！？]|\n|$)", text):
        clause = match.group(0)
        if not _ZH_ASKING.search(clause) or _ZH_CAPPING.search(clause):
            continue
        named: dict[str, int] = {}
        rest = clause
        for word in sorted(_ZH_MARKS, key=len, reverse=True):
            at = rest.find(word)
            if at >= 0:
                named.setdefault(_ZH_MARKS[word], at)
                rest = rest.replace(word, "\0" * len(word))
        at = clause.find(_INTERROBANG)
        if at >= 0:
            named[_INTERROBANG] = at
        marks = sorted(named, key=named.__getitem__)
        if "所有" in clause and "标点" in clause:
            marks = list(dict.fromkeys([*STANDARD_MARKS, *marks]))
        elif len([m for m in marks if m != _INTERROBANG]) < 1 or len(marks) < 2:
            continue
        per = next((unit for word, unit in _ZH_PIECES.items() if word in clause), None)
        return _replace(found, marks, match.start(), match.end(), per)
    return list(found)
