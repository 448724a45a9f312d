"""Items marked by a symbol of the request's own instead of Markdown bullets: "use -> instead of bullets".

The list readers take a list with a marker of its own for a Markdown list,
and the piece readers take "mark each item with ->" for a text opening every
bullet, so the layout writes "* -> item": the marker beside the bullet it
was meant to replace. A sentence that names a marker for the items and

- sets it against bullets ("instead of", "rather than", "in place of"
  bullets / bullet points / asterisks / list markers), or
- marks the items with it (mark, denote, label, flag, prefix, introduce,
  indicate ... each item / point / entry / line "with" / "by" it), or
- makes it the bullet ("use -> as the bullet", "as a list marker")

is read here instead (a sentence about sub-bullets is the sub-bullet reader's): no Markdown list (``structure(no_list)``) and the items
as lines opening with the marker: ``count(lines, starts_with=marker)``,
exactly as many as the request counts items ("List six things": 6, read from
the list reading it replaces or from a number before a plural noun), at least
one where it counts none.

The marker is the first quoted text of the sentence, else a bare run of one
to four symbols ("->", "=>", ">>", "~", "!?!?"). The Markdown bullets
themselves ("*", "-", "+") are no marker of their own: "use - instead of *"
still asks for a Markdown list. A sentence naming a separator ("separated
by", "delimiter") is the separator reader's (items joined on one line, not
marked). Chinese wordings are not read here.
"""

from __future__ import annotations

import re

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _QUOTED
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_UNITS
from reasoning.constraints.form import Count, Filter, Structure, Unit, canonical
from reasoning.constraints.form.model import Layout
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import parse_number

__all__ = ["detect_list_marker"]

_AGAINST_BULLETS = re.compile(
    r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of|replacing)\s+(?:the\s+|using\s+|standard\s+|usual\s+|normal\s+)?"
    r"(?:markdown\s+)?(?:bullets?|bullet[\s-]+points?|bulleted|asterisks?|list\s+markers?|dashes)\b",
    re.IGNORECASE)
_AS_BULLET = re.compile(
    r"\bas\s+(?:the|a|an|your|each|every)?\s*(?:item\s+|list\s+|bullet\s+)?(?:bullets?|bullet[\s-]+points?|markers?|"
    r"bullet\s+(?:symbol|character|marker)s?)\b", re.IGNORECASE)
_MARKING = frozenset({"mark", "denote", "label", "flag", "prefix", "introduce", "indicate", "tag"})
_ITEMS = frozenset({"item", "point", "entry", "line", "element", "bullet"})
_SEPARATING_WORDS = re.compile(r"\b(?:separat|delimit|divid|join)\w*", re.IGNORECASE)
_NESTED = re.compile(r"\bsub[\s-]?(?:bullet|point|item|list)", re.IGNORECASE)
#: The text from a sentence's start to the next period or line break (the parser may cut a sentence at "!?").
_CLAUSE = re.compile(r"[^\n]*?(?:\.(?=\s|$)|\n|$)")
#: A bare run of symbols standing as a word of its own.
_SYMBOLS = re.compile(r"(?<!\S)(?P<m>[^\w\s\"'“”‘’()\[\]{}<]{1,4}|[^\w\s\"'“”‘’()\[\]{}]{2,4})(?=\s|$|[,;:)])")
_MARKDOWN_BULLETS = frozenset({"*", "-", "+"})
_SENTENCE_MARKS = frozenset(".,;:!?")
_LIST_KINDS = (Kind.BULLET_COUNT, Kind.STRUCTURE)
_LIST_LAYOUTS = frozenset({Layout.LIST.value, Layout.NUMBERED_LIST.value, Layout.NESTED_LIST.value})


def _marker(text: str, start: int, end: int) -> tuple[str, int, int] | None:
    """The marker the sentence ``text[start:end]`` names: (marker, its start, its end)."""
    quoted = next(_QUOTED.finditer(text, start, end), None)
    if quoted is not None:
        value = next(g for g in quoted.groups() if g is not None).strip()
        if value and not re.search(r"\w", value) and value not in _MARKDOWN_BULLETS:
            return value, quoted.start(), quoted.end()
        return None
    stop = end
    while stop > start and text[stop - 1] in " \t\n.":
        stop -= 1  # the sentence's own closing period is no part of "->."
    for m in _SYMBOLS.finditer(text[:stop], start, stop):
        value = m.group("m")
        if len(value) > 1 and value[-1] in ",;:" and text[m.end():m.end() + 1] in ("", " ", "\n"):
            value = value[:-1]  # "marked with *, each ...": the comma after the mark is the sentence's
        if value in _MARKDOWN_BULLETS or value in _SENTENCE_MARKS:
            continue
        return value, m.start(), m.end()
    return None


def _asks_marker(ctx: Context, first: int, last: int, sentence: str) -> bool:
    """Whether the sentence of tokens ``first..last`` sets a marker for the items (see the module doc)."""
    if _AGAINST_BULLETS.search(sentence) or _AS_BULLET.search(sentence):
        return True
    marking = any(ctx.lemmas[j] in _MARKING and ctx.tokens[j].pos_ == "VERB" for j in range(first, last))
    return marking and any(lemma in _ITEMS for lemma in ctx.lemmas[first:last])  # "a check mark" marks nothing


def _items(ctx: Context) -> int | None:
    """How many items the request counts: a list reading's count, else a number before a plural noun."""
    for f in ctx.found:
        n = f.params.get("n")
        if f.kind in _LIST_KINDS and isinstance(n, int) and n > 0 and (
                f.kind is Kind.BULLET_COUNT or f.params.get("layout") in _LIST_LAYOUTS):
            return n
    for j, token in enumerate(ctx.tokens[:-1]):
        noun = ctx.tokens[j + 1]
        if token.like_num and noun.tag_ in ("NNS", "NNPS") and token.head.i == j + 1 \
                and (noun.lemma_.lower(),) not in EN_UNITS:  # "three paragraphs" counts no items
            value = parse_number([token.text])
            if value is not None and 1 < value <= 100:
                return value
    return None


def _about_marker(f: Found, marker: str, start: int, end: int) -> bool:
    """Whether reading ``f`` is the list or the marker-on-bullets reading this reader replaces."""
    if f.kind is Kind.BULLET_COUNT or f.kind is Kind.STRUCTURE and f.params.get("layout") in _LIST_LAYOUTS:
        return True
    return overlaps(f, start, end) and marker in repr(f.params)


def detect_list_marker(ctx: Context) -> None:
    """Replace a Markdown list marked by the request's own symbol by its lines (see the module doc)."""
    for sent in ctx.doc.sents:
        clause = _CLAUSE.match(ctx.text, sent.start_char)
        if clause is not None and (_SEPARATING_WORDS.search(clause.group()) or _NESTED.search(clause.group())):
            continue  # the separator's or the sub-bullets' reader's, whether or not the parser cut the sentence
            # at a mark ("use !?!? to separate")
        found = _marker(ctx.text, sent.start_char, sent.end_char)
        if found is None or not _asks_marker(ctx, sent.start, sent.end, sent.text):
            continue
        marker = found[0]
        items = _items(ctx)
        kept = [f for f in ctx.found if not _about_marker(f, marker, sent.start_char, sent.end_char)]
        begin, stop = sent.start_char, sent.end_char
        no_list = canonical(Structure(layout=Layout.NO_LIST))
        lines = canonical(Count(unit=Unit.LINES, filter=Filter(starts_with=marker),
                                relation=Relation.EXACTLY if items else Relation.AT_LEAST, n=items or 1))
        if not any(f.kind is no_list[0] and f.params == no_list[1] for f in kept):
            kept.append(Found(kind=no_list[0], params=no_list[1], start=begin, end=stop, confidence=0.85))
        kept.append(Found(kind=lines[0], params=lines[1], start=begin, end=stop, confidence=0.8))
        ctx.found = kept
        return
