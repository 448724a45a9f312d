"""How many sentences of each type the answer holds, relative to one another (English and Chinese).

A sentence's type is the mark that ends it: a question ``?``, a statement
``.``, an exclamation ``!`` (:data:`TYPE_MARKS`; interrogative, declarative
and exclamatory sentences alike; 问句 / 疑问句, 陈述句, 感叹句). A ratio of two
types is a count of the sentences ending with one mark ``of`` those ending
with the other:

- "twice as many statements as questions", "three times as many
  declarative sentences as interrogative ones", 陈述句的数量是问句的两倍:
  ``count(sentences, ends_with=".", of=count(sentences, ends_with="?")) exactly 2``;
- "as many questions as exclamations", "equal numbers of statements,
  questions and exclamations", "the same number of questions and
  statements", 问句和陈述句数量相同: each type against the first, exactly 1;
- a number of each (问句和陈述句各两句, "two questions and two statements
  each"): each type exactly that many.

The sentence count read from the same words (各两句 is no two-sentence
answer) is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from reasoning.constraints.extract_en import _Ctx
from reasoning.constraints.form import Count, Filter, Measure, Unit, canonical
from reasoning.constraints.found import Found, overlaps
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.patterns import alternation
from reasoning.constraints.quantities import ZH_NUMBER, parse_number, parse_zh_number

__all__ = ["TYPE_MARKS", "refine_sentence_types_chinese", "refine_sentence_types_english", "type_forms"]

#: The mark that ends a sentence of each type.
TYPE_MARKS: Mapping[str, str] = {"question": "?", "statement": ".", "exclamation": "!"}

_EN_TYPES: Mapping[str, str] = {
    "question": "question", "questions": "question", "interrogative": "question", "interrogatives": "question",
    "statement": "statement", "statements": "statement", "declarative": "statement", "declaratives": "statement",
    "assertion": "statement", "assertions": "statement",
    "exclamation": "exclamation", "exclamations": "exclamation", "exclamatory": "exclamation",
    "exclamative": "exclamation", "exclamatives": "exclamation",
}
_EN_TYPE = (r"(?:question|interrogative|statement|declarative|assertion|exclamation|exclamatory|exclamative)s?"
            r"(?:\s+(?:sentence|one)s?)?")
_MULTIPLIER = (r"(?P<mult>twice|thrice|double|half|(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
               r"\s+times)\s+")
_EN_RATIO = re.compile(rf"\b(?:{_MULTIPLIER})?as\s+many\s+(?P<a>{_EN_TYPE})\s+as\s+(?:there\s+are\s+)?(?P<b>{_EN_TYPE})",
                       re.IGNORECASE)
_EN_EQUAL = re.compile(
    rf"\b(?:an?\s+|the\s+)?(?:equal|same|identical|matching)\s+(?:numbers?|amounts?|counts?)\s+of\s+"
    rf"(?P<list>{_EN_TYPE}(?:\s*(?:,|and|as)\s*(?:and\s+)?{_EN_TYPE})+)"
    rf"|(?P<list2>{_EN_TYPE}(?:\s*(?:,|and)\s*(?:and\s+)?{_EN_TYPE})+)(?:\s+\w+){{0,3}}?\s+in\s+equal\s+(?:numbers?|measure|amounts?)",
    re.IGNORECASE,
)
_ZH_TYPES: Mapping[str, str] = {"疑问句": "question", "问句": "question", "陈述句": "statement", "感叹句": "exclamation"}
_ZH_TYPE = rf"(?:{alternation(_ZH_TYPES)})"
_ZH_EACH = re.compile(rf"(?P<list>{_ZH_TYPE}(?:[和与及、跟]{_ZH_TYPE})+)各(?:写|用|有)?(?P<n>{ZH_NUMBER})(?:句|个)")
_ZH_RATIO = re.compile(rf"(?P<a>{_ZH_TYPE})(?:的数量|的句数|的数目)?(?:要|应|必须|应该)?是(?P<b>{_ZH_TYPE})(?:的数量)?的"
                       rf"(?P<mult>{ZH_NUMBER}|半)倍?")
_ZH_EQUAL = re.compile(rf"(?P<list>{_ZH_TYPE}(?:[和与及、跟]{_ZH_TYPE})+)(?:的)?(?:数量|句数|数目)?(?:要|应|必须|应该)?"
                       rf"(?:相同|相等|一样多|一样|同样多)")


def _measure(kind: str) -> Measure:
    return Measure(unit=Unit.SENTENCES, filter=Filter(ends_with=TYPE_MARKS[kind]))


def type_forms(kinds: Sequence[str], *, ratio: float | None = None, each: int | None = None) -> list[Count]:
    """The counts of a relation between sentence types: ``each`` that many of every type, or the first
    type ``ratio`` times the second (with more than two types and no ratio: every one as many as the first)."""
    if each is not None:
        return [Count(unit=Unit.SENTENCES, filter=_measure(k).filter, relation=Relation.EXACTLY, n=each)
                for k in dict.fromkeys(kinds)]
    distinct = list(dict.fromkeys(kinds))
    if len(distinct) < 2:
        return []
    if ratio is not None:
        pairs = [(distinct[0], distinct[1], ratio)]
    else:
        pairs = [(other, distinct[0], 1.0) for other in distinct[1:]]
    return [Count(unit=Unit.SENTENCES, filter=_measure(a).filter, relation=Relation.EXACTLY, n=0,
                  of=_measure(b), fraction=r) for a, b, r in pairs]


def _en_kind(phrase: str) -> str:
    return _EN_TYPES[phrase.lower().split()[0]]


def _multiplier(word: str | None) -> float:
    if not word:
        return 1.0
    low = word.lower()
    fixed = {"twice": 2.0, "double": 2.0, "thrice": 3.0, "half": 0.5}
    if low in fixed:
        return fixed[low]
    n = parse_number([low.split()[0]])
    return float(n) if n else 1.0


def _replace(found: list[Found], start: int, end: int, forms: list[Count]) -> list[Found]:
    """``found`` without the sentence counts inside the span, with ``forms`` added over it."""
    kept = [f for f in found if not (f.kind in (Kind.SENTENCE_COUNT, Kind.COUNT) and overlaps(f, start, end)
                                     and f.params.get("unit", "sentences") == "sentences"
                                     and not f.params.get("filter"))]
    for form in forms:
        kind, params = canonical(form)
        kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
    return kept


def refine_sentence_types_english(ctx: _Ctx) -> None:
    """"Twice as many statements as questions", "equal numbers of statements, questions and exclamations"."""
    for m in _EN_RATIO.finditer(ctx.text):
        forms = type_forms([_en_kind(m.group("a")), _en_kind(m.group("b"))], ratio=_multiplier(m.group("mult")))
        ctx.found = _replace(ctx.found, m.start(), m.end(), forms)
    for m in _EN_EQUAL.finditer(ctx.text):
        listed = m.group("list") or m.group("list2")
        kinds = [_EN_TYPES[w.lower()] for w in re.findall(r"[A-Za-z]+", listed) if w.lower() in _EN_TYPES]
        ctx.found = _replace(ctx.found, m.start(), m.end(), type_forms(kinds))


def _zh_kinds(listed: str) -> list[str]:
    return [_ZH_TYPES[w] for w in re.findall(_ZH_TYPE, listed)]


def refine_sentence_types_chinese(text: str, found: list[Found]) -> list[Found]:
    """问句和陈述句各两句, 陈述句的数量是问句的两倍, 问句和感叹句数量相同."""
    for m in _ZH_EACH.finditer(text):
        n = parse_zh_number(m.group("n"))
        if n is not None and n > 0:
            found = _replace(found, m.start(), m.end(), type_forms(_zh_kinds(m.group("list")), each=n))
    for m in _ZH_RATIO.finditer(text):
        mult = 0.5 if m.group("mult") == "半" else parse_zh_number(m.group("mult"))
        if mult:
            forms = type_forms([_ZH_TYPES[m.group("a")], _ZH_TYPES[m.group("b")]], ratio=float(mult))
            found = _replace(found, m.start(), m.end(), forms)
    for m in _ZH_EQUAL.finditer(text):
        found = _replace(found, m.start(), m.end(), type_forms(_zh_kinds(m.group("list"))))
    return found
