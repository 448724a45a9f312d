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
  each"): each type exactly that many; under the relation said with 各
  (陈述句和疑问句，各至少两句): at least that many of each, never of all the
  sentences together; a number of one type (正好包含两个问句): that type;
- a list of numbers of types ("exactly two questions, two exclamations and
  one plain statement", 两个问句、一个感叹句和三个陈述句): each type that many,
  under the relation said before the list ("at least" ...), exactly by
  default; "at least two of each" after a ratio, each type at least that
  many; a type refused beside them ("... and no exclamations"): at most 0
  of that type (the count of its mark read from the same words goes).

The sentence count read from the same words (各两句 is no two-sentence
answer) is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.form import Count, Filter, Measure, Unit, canonical
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import (
    ZH_NUMBER,
    ZH_RELATIONS_AFTER,
    ZH_RELATIONS_BEFORE,
    parse_number,
    parse_zh_number,
)

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
_QUALITY = r"(?:(?:plain|ordinary|simple|regular|normal|full)\s+)?"
_EN_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_EN_RELATION = r"(?:exactly|precisely|at\s+least|at\s+most|no\s+more\s+than|no\s+fewer\s+than|up\s+to)"
_EN_ITEM = rf"{_EN_NUMBER}\s+{_QUALITY}{_EN_TYPE}"
#: "exactly two questions, two exclamations and one plain statement": a number of each of two or more types.
_EN_LIST = re.compile(rf"\b(?:(?P<rel>{_EN_RELATION})\s+)?(?P<list>{_EN_ITEM}(?:\s*(?:,|and|,\s*and)\s*{_EN_ITEM})+)\b",
                      re.IGNORECASE)
_EN_ITEM_RE = re.compile(rf"(?P<n>{_EN_NUMBER})\s+{_QUALITY}(?P<t>{_EN_TYPE})", re.IGNORECASE)
#: "at least two of each" said after a ratio or a list of types.
_EN_OF_EACH = re.compile(rf"\b(?P<rel>{_EN_RELATION})\s+(?P<n>{_EN_NUMBER})\s+of\s+each\b", re.IGNORECASE)
#: "no exclamations", "without any questions": a type refused.
_EN_NONE = re.compile(rf"\b(?:no|without\s+any|without|zero)\s+{_QUALITY}(?P<t>{_EN_TYPE})", re.IGNORECASE)
_MULTIPLIER = (r"(?P<mult>twice|thrice|double|half|(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
               r"\s+times)\s+")
_EN_RATIO = re.compile(rf"\b(?:{_MULTIPLIER})?as\s+many\s+{_QUALITY}(?P<a>{_EN_TYPE})\s+as\s+(?:there\s+are\s+)?"
                       rf"{_QUALITY}(?P<b>{_EN_TYPE})",
                       re.IGNORECASE)
_EN_EQUAL = re.compile(
    rf"\b(?:an?\s+|the\s+)?(?:equal|same|identical|matching)\s+(?:numbers?|amounts?|counts?)\s+of\s+"
    rf"(?P<list>{_EN_TYPE}(?:\s*(?:,|and|as)\s*(?:and\s+)?{_EN_TYPE})+)"
    rf"|(?P<list2>{_EN_TYPE}(?:\s*(?:,|and)\s*(?:and\s+)?{_EN_TYPE})+)(?:\s+\w+){{0,3}}?\s+in\s+equal\s+(?:numbers?|measure|amounts?)",
    re.IGNORECASE,
)
_ZH_TYPES: Mapping[str, str] = {"疑问句": "question", "问句": "question", "陈述句": "statement", "感叹句": "exclamation"}
_ZH_TYPE = rf"(?:{alternation(_ZH_TYPES)})"
_ZH_ITEM = rf"{ZH_NUMBER}\s*(?:个|句)\s*{_ZH_TYPE}"
#: 两个问句、一个感叹句和三个陈述句: a number of each of two or more types.
_ZH_LIST = re.compile(rf"(?P<list>{_ZH_ITEM}(?:\s*[、，,和与及]\s*{_ZH_ITEM})+)")
_ZH_ITEM_RE = re.compile(rf"(?P<n>{ZH_NUMBER})\s*(?:个|句)\s*(?P<t>{_ZH_TYPE})")
#: 问句和陈述句各两句, 包含陈述句和疑问句，各至少两句: a number of each type, under the relation said with it.
_ZH_EACH = re.compile(rf"(?P<list>{_ZH_TYPE}(?:[和与及、跟]{_ZH_TYPE})+)[^。！？；;\n各]{{0,6}}?各(?:自)?(?:要|需|需要|必须|应|应该)?"
                      rf"(?P<rel0>{alternation(ZH_RELATIONS_BEFORE)})?(?:写|用|有|包含|出现)?"
                      rf"(?P<rel>{alternation(ZH_RELATIONS_BEFORE)})?\s*(?P<n>{ZH_NUMBER})\s*(?:句|个)"
                      rf"(?:话|句子)?(?P<after>{alternation(ZH_RELATIONS_AFTER)})?")
#: 正好包含两个问句, 至少三个感叹句: a number of one type, under the relation said with it.
_ZH_ONE = re.compile(rf"(?:(?P<rel>{alternation(ZH_RELATIONS_BEFORE)})\s*)?(?:包含|有|写|用|使用|出现)?\s*"
                     rf"(?:(?P<rel2>{alternation(ZH_RELATIONS_BEFORE)})\s*)?(?P<n>{ZH_NUMBER})\s*(?:个|句)\s*(?P<t>{_ZH_TYPE})")
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


#: Every end mark of a sentence type.
_TYPE_MARK_CHARS: Final = frozenset("".join(TYPE_MARKS.values()))


def _replace(found: list[Found], start: int, end: int, forms: list[Count]) -> list[Found]:
    """``found`` without the sentence counts, and the counts of a type's end mark, inside the span, with
    ``forms`` added over it."""
    marks = _TYPE_MARK_CHARS
    kept = [f for f in found if not (f.kind in (Kind.SENTENCE_COUNT, Kind.COUNT) and overlaps(f, start, end) and (
        f.params.get("unit", "sentences") == "sentences" and not f.params.get("filter")
        or f.params.get("unit") in ("punctuation", "characters")
        and set(str((f.params.get("filter") or {}).get("chars", ""))) & marks))]
    for form in forms:
        kind, params = canonical(form)
        kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
    return kept


def _en_relation(said: str | None) -> Relation:
    low = " ".join((said or "").lower().split())
    return {"at least": Relation.AT_LEAST, "no fewer than": Relation.AT_LEAST, "at most": Relation.AT_MOST,
            "no more than": Relation.AT_MOST, "up to": Relation.AT_MOST}.get(low, Relation.EXACTLY)


def _numbered(kinds: Sequence[tuple[str, int]], relation: Relation) -> list[Count]:
    return [Count(unit=Unit.SENTENCES, filter=_measure(k).filter, relation=relation, n=n) for k, n in kinds]


def refine_sentence_types_english(ctx: Context) -> None:
    """"Twice as many statements as questions", "equal numbers of statements, questions and exclamations",
    "exactly two questions, two exclamations and one statement", "at least two of each", "no exclamations"."""
    typed: list[tuple[int, int, list[str]]] = []
    for m in _EN_RATIO.finditer(ctx.text):
        kinds = [_en_kind(m.group("a")), _en_kind(m.group("b"))]
        forms = type_forms(kinds, ratio=_multiplier(m.group("mult")))
        ctx.found = _replace(ctx.found, m.start(), m.end(), forms)
        typed.append((m.start(), m.end(), kinds))
    for m in _EN_EQUAL.finditer(ctx.text):
        listed = m.group("list") or m.group("list2")
        kinds = [_EN_TYPES[w.lower()] for w in re.findall(r"[A-Za-z]+", listed) if w.lower() in _EN_TYPES]
        ctx.found = _replace(ctx.found, m.start(), m.end(), type_forms(kinds))
        typed.append((m.start(), m.end(), kinds))
    for m in _EN_LIST.finditer(ctx.text):
        items = [(_en_kind(i.group("t")), parse_number([i.group("n")])) for i in _EN_ITEM_RE.finditer(m.group("list"))]
        numbered = [(k, n) for k, n in items if n is not None]
        if len({k for k, _ in numbered}) < 2:
            continue
        ctx.found = _replace(ctx.found, m.start(), m.end(), _numbered(numbered, _en_relation(m.group("rel"))))
        typed.append((m.start(), m.end(), [k for k, _ in numbered]))
    for start, end, kinds in typed:
        begin, stop = sentence_bounds(ctx.text, start, end)
        each = _EN_OF_EACH.search(ctx.text, end, stop)
        n = parse_number([each.group("n")]) if each is not None else None
        if each is not None and n is not None:
            forms = _numbered([(k, n) for k in dict.fromkeys(kinds)], _en_relation(each.group("rel")))
            ctx.found = _replace(ctx.found, each.start(), each.end(), forms)
        for refused in _EN_NONE.finditer(ctx.text, begin, stop):
            kind = _en_kind(refused.group("t"))
            ctx.found = _replace(ctx.found, refused.start(), refused.end(), _numbered([(kind, 0)], Relation.AT_MOST))


def _zh_kinds(listed: str) -> list[str]:
    return [_ZH_TYPES[w] for w in re.findall(_ZH_TYPE, listed)]


def refine_sentence_types_chinese(text: str, found: list[Found]) -> list[Found]:
    """问句和陈述句各两句, 陈述句的数量是问句的两倍, 问句和感叹句数量相同."""
    for m in _ZH_EACH.finditer(text):
        n = parse_zh_number(m.group("n"))
        if n is not None and n > 0:
            said = m.group("rel0") or m.group("rel") or m.group("after")
            relation = (ZH_RELATIONS_BEFORE.get(said) or ZH_RELATIONS_AFTER.get(said)) if said else Relation.EXACTLY
            kinds = [(k, n) for k in dict.fromkeys(_zh_kinds(m.group("list")))]
            found = _replace(found, m.start(), m.end(), _numbered(kinds, relation or Relation.EXACTLY))
    for m in _ZH_RATIO.finditer(text):
        mult = 0.5 if m.group("mult") == "半" else parse_zh_number(m.group("mult"))
        if mult:
            forms = type_forms([_ZH_TYPES[m.group("a")], _ZH_TYPES[m.group("b")]], ratio=float(mult))
            found = _replace(found, m.start(), m.end(), forms)
    for m in _ZH_EQUAL.finditer(text):
        found = _replace(found, m.start(), m.end(), type_forms(_zh_kinds(m.group("list"))))
    for m in _ZH_LIST.finditer(text):
        items = [(_ZH_TYPES[i.group("t")], parse_zh_number(i.group("n"))) for i in _ZH_ITEM_RE.finditer(m.group("list"))]
        numbered = [(k, n) for k, n in items if n is not None]
        if len({k for k, _ in numbered}) >= 2:
            found = _replace(found, m.start(), m.end(), _numbered(numbered, Relation.EXACTLY))
    for m in _ZH_ONE.finditer(text):
        n = parse_zh_number(m.group("n"))
        typed = any(f.kind is Kind.COUNT and (f.params.get("filter") or {}).get("ends_with") and overlaps(f, m.start(), m.end())
                    for f in found)
        if n is None or typed or text[max(0, m.start() - 1) : m.start()] in ("第", "每"):
            continue  # read with the other types, or an ordinal (第一个问句)
        relation = ZH_RELATIONS_BEFORE.get(m.group("rel") or m.group("rel2") or "", Relation.EXACTLY)
        found = _replace(found, m.start(), m.end(), _numbered([(_ZH_TYPES[m.group("t")], n)], relation))
    return found
