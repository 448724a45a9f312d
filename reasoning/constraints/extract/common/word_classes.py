"""Counts of words of a closed class or a listed set: "at least 3 different coordinating conjunctions", "5 pronouns".

A bound on a number of pronouns, coordinating conjunctions (并列连词, 代词)
or of the people / names a request lists ("mention at least 2 of these
people: Alice, Bob, Carol") is a count of the words that are one of a set
(``Filter.one_of``): the closed English class (the coordinating
conjunctions for, and, nor, but, or, yet, so; the personal, possessive,
reflexive and relative pronouns) or the listed one-word names. "Different",
"distinct", "unique" (不同的) count each word once (``unique_words``). The
relation is the quantity readers' ("at least", "no more than", 至少, 最多);
a bare number is at least that many.

Not read: person names with no list (no set to count from: reported
unrecognised), a listed name of two words (the word counter splits it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.phrases import _number_at
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.form import Count, Filter, Unit, canonical
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import parse_zh_number, relation_before

__all__ = ["COORDINATING_CONJUNCTIONS", "PRONOUNS", "detect_word_classes", "refine_word_classes_chinese"]

COORDINATING_CONJUNCTIONS = ("for", "and", "nor", "but", "or", "yet", "so")
PRONOUNS = ("i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "yourselves", "he", "him",
            "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "we", "us", "our", "ours",
            "ourselves", "they", "them", "their", "theirs", "themselves", "who", "whom", "whose", "which")
_CLASSES: Mapping[str, tuple[str, ...]] = {"conjunction": COORDINATING_CONJUNCTIONS, "pronoun": PRONOUNS}
_DISTINCT = frozenset({"different", "distinct", "unique", "various"})
_PEOPLE = frozenset({"people", "person", "name", "character", "individual", "figure"})
_FLIP = {Relation.AT_LEAST: Relation.LESS_THAN, Relation.MORE_THAN: Relation.AT_MOST}


def _count_form(words: Sequence[str], relation: Relation, n: int, distinct: bool) -> tuple[Kind, dict[str, object]]:
    unit = Unit.UNIQUE_WORDS if distinct else Unit.WORDS
    return canonical(Count(unit=unit, relation=relation, n=n, filter=Filter(one_of=tuple(words))))


def _quantity(ctx: Context, head: int, floor: int) -> tuple[Relation, int, int] | None:
    """(relation, n, first token) of the number before the class noun at ``head``."""
    k = head - 1
    while k >= floor and (ctx.tokens[k].pos_ in ("ADJ", "PROPN", "DET") or ctx.lemmas[k] in _DISTINCT
                          or ctx.lowers[k] in ("coordinating", "personal", "of", "following")):
        k -= 1
    if k < floor:
        return None
    number = _number_at(ctx.doc, k)
    if number is None:
        return None
    value, first, _ = number
    before = relation_before(ctx.lowers[max(floor, first - 4):first])
    relation = before[0] if before is not None else Relation.AT_LEAST
    if before is not None:
        first -= before[1]
    if any(ctx.lowers[x] in ("not", "never", "n't", "no") for x in range(floor, first)) and relation in _FLIP:
        relation = _FLIP[relation]  # "do not use more than 2 pronouns"
    return relation, value, first


def _listed_names(ctx: Context, start: int, end: int) -> list[str]:
    """One-word proper names listed after a colon in ``start..end``: "these people: Alice, Bob, Carol"."""
    colon = next((j for j in range(start, end) if ctx.tokens[j].text == ":"), None)
    if colon is None:
        return []
    names = [ctx.tokens[j].text for j in range(colon + 1, end) if ctx.tokens[j].pos_ == "PROPN"]
    joined = [j for j in range(colon + 1, end) if ctx.tokens[j].text in (",", "and", "or")]
    return names if len(names) >= 2 and len(joined) >= len(names) - 1 else []


def detect_word_classes(ctx: Context) -> None:
    """Counts of pronouns, coordinating conjunctions and listed names (see the module doc)."""
    for sent in ctx.doc.sents:
        for j in range(sent.start, sent.end):
            lemma = ctx.lemmas[j]
            words: Sequence[str] | None = _CLASSES.get(lemma)
            if words is None and lemma in _PEOPLE:
                listed = _listed_names(ctx, j, sent.end)
                words = listed or None
            if words is None:
                continue
            quantity = _quantity(ctx, j, sent.start)  # "at least 2 of these people" too
            if quantity is None:
                continue
            relation, n, first = quantity
            distinct = any(ctx.lemmas[k] in _DISTINCT for k in range(first, j)) or lemma in _PEOPLE
            kind, params = _count_form(words, relation, n, distinct)
            begin, end = ctx.tokens[first].idx, sent.end_char
            ctx.found = [f for f in ctx.found if not (overlaps(f, begin, end) and f.kind in (
                Kind.COUNT, Kind.WORD_COUNT, Kind.KEYWORDS_PRESENT, Kind.KEYWORD_FREQUENCY))]
            ctx.found.append(Found(kind=kind, params=params, start=begin, end=end, confidence=0.8))
            break


_ZH = re.compile(r"(?P<rel>至少|最少|不少于|最多|至多|不超过)?\s*(?:使用|用|包含|出现)?\s*(?P<num>\d+|[一二两三四五六七八九十]+)\s*个"
                 r"(?P<distinct>不同的?)?\s*(?P<cls>并列连词|连词|代词|人称代词)")
#: The one-character members (the word counter counts each Han character as a word).
_ZH_PRONOUNS = ("我", "你", "您", "他", "她", "它", "咱")
_ZH_CONJUNCTIONS = ("和", "与", "及", "或", "而", "但", "且")
_ZH_RELATIONS = {"至少": Relation.AT_LEAST, "最少": Relation.AT_LEAST, "不少于": Relation.AT_LEAST,
                 "最多": Relation.AT_MOST, "至多": Relation.AT_MOST, "不超过": Relation.AT_MOST}


def refine_word_classes_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """至少使用三个不同的并列连词, 至少使用5个代词: the same counts, of the English class words and the
    one-character Chinese ones (我, 你, 他 ...; 和, 与, 或, 但 ...)."""
    match = _ZH.search(text)
    if match is None:
        return list(found)
    n = parse_zh_number(match.group("num"))
    if n is None:
        return list(found)
    words = PRONOUNS + _ZH_PRONOUNS if "代词" in match.group("cls") else COORDINATING_CONJUNCTIONS + _ZH_CONJUNCTIONS
    relation = _ZH_RELATIONS.get(match.group("rel") or "", Relation.AT_LEAST)
    kind, params = _count_form(words, relation, n, bool(match.group("distinct")))
    start, end = match.start(), match.end()
    kept = [f for f in found if not (overlaps(f, start, end) and f.kind in (Kind.COUNT, Kind.WORD_COUNT))]
    return [*kept, Found(kind=kind, params=params, start=start, end=end, confidence=0.8)]
