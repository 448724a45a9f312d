"""Whether one sentence of a domain answer is supported, and by which evidence.

A compliance answer is audited line by line: every sentence the model
writes must rest on what it was shown -- the branch's evidence facts (the
deciding rules' own texts among them), the decision the rules gave (and the
grounds stated for it) and the request. :class:`SupportIndex` holds those
texts, read once; :meth:`SupportIndex.check` judges one sentence, cheaply
(regular expressions, a stem, one jieba segmentation; no parser, no model),
so the decoder can run it on every sentence of every beam.

What a sentence states, and how each item is checked:

- **rule ids**: tokens of the shape of the ontology's own rule ids
  (:func:`id_shapes`: "AML-R-024" gives capitals, a dash, a capital, a dash,
  three digits; lengths a little looser), each a whole token that must be
  one the sources hold. A number inside an id is no quantity;
- **dates** (ISO ``2022-05-03``, ``2022年5月3日``, ``3 May 2022``,
  ``May 3, 2022``) as whole dates;
- **numbers** as whole quantities: ``2,000,000``, ``2 million`` and
  ``200万`` are the same quantity; a number is never found inside another
  token ("24" is not in "AML-R-024", "2" not in "2,000,000"). Chinese
  numerals are quantities too where they are numbers beyond doubt: a run
  of two or more numeral characters that parses as one number ("两百万",
  "十二", "一百五十万"; "万一" does not parse), or a single one other than
  一 ("a", "one") before a unit ("三个月", "六毫米"). A list marker opening
  the sentence is no number;
- **names**: two or more capitalised words ("European Economic Area", a
  leading article dropped) and Chinese names (transliterations joined by
  ``·``, organisation names ending in a company or body suffix, words
  jieba's dictionary tags as a person's or a place's name: "王小明",
  "德国"), each found in the sources as written (case-insensitively);
- **codes**: other identifiers -- letters and digits joined by separators,
  with a capital and a digit ("TRF-2026-0042", "CY-4411") -- are held
  whole, as rule ids are: a code must be one the sources hold, no number
  is read inside one, and a piece of one is no word ("TRF" of
  "TRF-2026-0042" is not a word the sources hold, so "The evidence is a
  transfer of TRF." restates a fragment of an identifier, not a claim);
- **content words**: English words of three letters or more that are not
  stop words, compared by a crude stem (so "escalated" meets
  "escalation"). Chinese is written without spaces, and a segmenter's
  words are too coarse a unit: known words composed into a claim no source
  makes ("检查实良性肺炎": 检查, 良性, 肺炎 are each common) pass word by
  word, and dropping function words drops what a vague sentence claims
  ("这是一种公众人物": this is a kind of public figure). So Chinese content
  is measured in character pairs (``chinese_pairs``): every adjacent pair of
  Han characters, inside words and across their joins, each of which must
  be in the sources' text; pairs touching a discourse word ("因此", "本案")
  are left out. A sentence whose content units are mostly not in the
  sources (less than ``CONTENT_SHARE``) is unsupported, naming the missing
  words: a paraphrase of a rule text keeps most of its words and their
  order, an invented claim does not. A sentence with no content word (no
  English word beyond stop words, no Chinese word of two characters that is
  no stop word) states nothing to check.

Every strict item (id, code, date, number, name) must be supported; content words
by share. ``Support.support`` lists the evidence ids of the sources that
hold the sentence's items (best first): the step's evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Final

import msgspec
from spacy.lang.en.stop_words import STOP_WORDS as EN_STOP
from spacy.lang.zh.stop_words import STOP_WORDS as ZH_STOP

from reasoning.nlp import jieba_segmenter
from reasoning.rules.claims import stem

__all__ = [
    "CONTENT_SHARE",
    "IdShapes",
    "Source",
    "Support",
    "SupportIndex",
    "chinese_names",
    "chinese_pairs",
    "codes",
    "id_shapes",
    "proper_names",
    "zh_numeral",
]

#: Share of a sentence's content units (words; Chinese character pairs) the sources must hold.
CONTENT_SHARE: Final = 0.6

_CITATION: Final = re.compile(r"\[(E\d+)\]")
_HAN: Final = r"\u3400-\u4dbf\u4e00-\u9fff"
_LIST_MARKER: Final = re.compile(r"^\s*(?:\d+[.)、]|[-*•])\s*")
_MONTHS: Final = {
    m: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for m in names
}
_MONTH: Final = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATES: Final = (
    (re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"), "ymd"),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "ymd"),
    (re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE), "dmy"),
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.IGNORECASE), "mdy"),
)
# A whole number: not inside a code ("AML-R-024", "E21") or another number; thousands
# separators, decimals and a scale word kept; a unit may follow ("6mm", "24-hour").
_NUMBER: Final = re.compile(
    r"(?<![A-Za-z0-9_.,])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![0-9]|[.,]\d)"
    r"(?:\s*(million|billion|thousand|bn|mn|m\b|k\b|万|亿|千))?",
    re.IGNORECASE,
)
_SCALE: Final = {
    "million": 10**6, "mn": 10**6, "m": 10**6, "billion": 10**9, "bn": 10**9,
    "thousand": 10**3, "k": 10**3, "千": 10**3, "万": 10**4, "亿": 10**8,
}
# Two or more capitalised words, optionally joined by a lower-case particle ("Chamber of Commerce").
_NAME: Final = re.compile(
    r"\b[A-Z][\w'&-]*(?:(?:\s+(?:of|for|and|the|de|du|la|van|von|der))*\s+[A-Z][\w'&-]*)+"
)
_NAME_LEAD: Final = re.compile(
    r"^(?:(?:The|A|An|This|That|These|Those|Our|Its|In|On|At|By|For|If|As|Under|Per|Since|"
    r"Because|When|Where|Both|Each|Every|No|Any|All|Some|Such|Then|Thus|So|And|But|Or)\s+)+"
)
# Chinese numerals (``_zh_quantities``): digits, the units inside a section, the section scales.
_ZH_DIGITS: Final = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
    "九": 9,
}
_ZH_UNITS: Final = {"十": 10, "百": 100, "千": 1000}
_ZH_SCALES: Final = {"万": 10**4, "亿": 10**8}
_ZH_NUMERAL: Final = re.compile("[零〇一二两三四五六七八九十百千万亿]+")
# What a single numeral character is counted before (a period, a size, money, a count of times):
# dates ("五月", "三日") and years are left to the date forms.
_ZH_COUNTED: Final = re.compile(
    r"\s*(?:个月|个小时|小时|周|天|岁|次|倍|毫米|厘米|公里|欧元|美元|英镑|元|mm|cm|%|％)", re.IGNORECASE
)
# The dictionary's tags of a person's name (and a transliterated one) and a place's name.
_NAME_TAGS: Final = frozenset({"nr", "nrt", "ns"})
_ZH_TRANSLIT: Final = re.compile(rf"[{_HAN}]+(?:[·・•][{_HAN}]+)+")
_ZH_SUFFIXES: Final = "有限责任公司|股份有限公司|有限公司|集团|公司|协会|基金会|事务所|研究所"
_ZH_ORG: Final = re.compile(rf"[{_HAN}]{{2,12}}?(?:{_ZH_SUFFIXES})")
_ZH_SUFFIX: Final = re.compile(rf"(?:{_ZH_SUFFIXES})$")
_EN_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
# A code-like token (``codes``): letters and digits joined by separators.
_CODE: Final = re.compile(
    r"(?<![A-Za-z0-9_-])[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+(?![A-Za-z0-9_-]|[-_./:][A-Za-z0-9])"
)
_HAN_RUN: Final = re.compile(rf"[{_HAN}]+")
# Words that say how an answer is put, not what it claims (they carry no fact to support).
_DISCOURSE: Final = frozenset(
    ["therefore", "thus", "hence", "accordingly", "also", "however", "answer", "case",
     "following", "based", "given", "according", "note", "please", "yes", "per", "rule", "rules",
     "decision", "million", "billion", "thousand"]
)
_ZH_DISCOURSE: Final = frozenset(["因此", "所以", "根据", "依据", "综上", "此外", "另外", "本案", "请注意"])


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """A text a sentence may rest on: an evidence fact (``id`` its evidence id), the
    request, the decision or its grounds (``id`` empty: they support, but are not evidence)."""

    text: str
    id: str = ""


class Support(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on one sentence.

    ``supported``: every strict item is held and the content share is met
    (a sentence that states nothing checkable is supported: whether it is
    junk is the degeneracy rules' call). ``support``: the evidence ids that
    hold its items, best first. ``unsupported``: what no source holds (ids,
    numbers, dates, names first, then content words). ``invented_ids``: the
    rule-id-shaped tokens among them.
    """

    supported: bool
    support: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    invented_ids: tuple[str, ...] = ()
    content_share: float | None = None
    #: The ids, dates, numbers and names among ``unsupported`` (what content words cannot excuse).
    strict: tuple[str, ...] = ()
    #: A complete sentence with nothing to check: no id, name or content word, at most
    #: numbers and dates held ("其他方面都可。", "That is all.", "这将在第二天。"): it states
    #: nothing the sources could hold.
    empty: bool = False


@dataclass(frozen=True)
class IdShapes:
    """The shapes of an ontology's rule ids (``id_shapes``), as one pattern.

    ``pattern`` matches a whole id-shaped token; ``prefix`` matches every
    proper prefix of one that has reached its second part ("AML-R"), which is
    when the token-by-token refusal judges it.
    """

    pattern: re.Pattern[str] | None = None
    prefix: re.Pattern[str] | None = None
    chars: str = ""  # the separators ids use
    ids: frozenset[str] = frozenset()
    partial: re.Pattern[str] | None = None  # ``prefix`` anywhere, as a whole token

    def cut(self, text: str) -> list[str]:
        """Id-shaped tokens of ``text`` cut short ("AML-R-" then a space), the text's
        last token aside (it may still grow)."""
        if self.partial is None or self.pattern is None:
            return []
        return [
            m.group(0)
            for m in self.partial.finditer(text)
            if m.end() < len(text) and not self.pattern.fullmatch(m.group(0))
        ]

    def find(self, text: str) -> list[tuple[int, int]]:
        """Spans of the whole id-shaped tokens of ``text``."""
        if self.pattern is None:
            return []
        return [m.span() for m in self.pattern.finditer(text)]

    def refused(self, text: str, held: frozenset[str]) -> str | None:
        """The first id-shaped token of ``text`` that ``held`` does not hold, or None.

        A complete token is judged whole; the token the text ends in (it may
        still grow) is refused as soon as it is id-shaped past its first part
        and no held id starts with it, so an invented id is refused where it
        leaves every real one, not after it is written.
        """
        if self.pattern is None:
            return None
        for m in self.pattern.finditer(text):
            token = m.group(0)
            if m.end() == len(text):
                if not any(h.startswith(token) for h in held):
                    return token
            elif token not in held:
                return token
        cut = self.cut(text)
        if cut:
            return cut[0]
        assert self.prefix is not None
        tail = self.prefix.search(text)
        if tail is not None and not any(h.startswith(tail.group(0)) for h in held):
            return tail.group(0)
        return None


def _shape_parts(rule_id: str) -> list[tuple[str, int]] | None:
    """("A", n) capitals, ("a", n) lower case, ("9", n) digits, (sep, 1) literals; None: no id shape."""
    if not re.fullmatch(r"[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)*", rule_id):
        return None
    if not re.search(r"\d", rule_id) or not re.search(r"[A-Za-z]", rule_id):
        return None
    parts: list[tuple[str, int]] = []
    for ch in rule_id:
        kind = "A" if ch.isupper() else "a" if ch.islower() else "9" if ch.isdigit() else ch
        if parts and parts[-1][0] == kind and kind in "Aa9":
            parts[-1] = (kind, parts[-1][1] + 1)
        else:
            parts.append((kind, 1))
    return parts


def _part_pattern(kind: str, n: int) -> str:
    if kind == "A":
        return f"[A-Z]{{{max(1, n - 1)},{n + 1}}}"
    if kind == "a":
        return f"[a-z]{{{max(1, n - 1)},{n + 1}}}"
    if kind == "9":
        return f"[0-9]{{1,{n + 1}}}"
    return re.escape(kind)


def id_shapes(rule_ids: Iterable[str]) -> IdShapes:
    """The id shapes of an ontology's rule ids (those that are code-like tokens: letters
    and digits, optionally joined by ``-_./:``); none when no rule id is code-like
    (a rule named by a sentence is checked by its words, numbers and names)."""
    shapes: dict[str, list[tuple[str, int]]] = {}
    chars: set[str] = set()
    ids: set[str] = set()
    for rule_id in rule_ids:
        parts = _shape_parts(rule_id)
        if parts is None:
            continue
        ids.add(rule_id)
        chars.update(k for k, _ in parts if k not in "Aa9")
        shapes["".join(_part_pattern(k, n) for k, n in parts)] = parts
    if not shapes:
        return IdShapes()
    whole = "|".join(sorted(shapes, key=len, reverse=True))
    edge = r"[A-Za-z0-9" + re.escape("".join(sorted(chars))) + "]"
    pattern = re.compile(rf"(?<!{edge})(?:{whole})(?![A-Za-z0-9])")
    prefixes: set[str] = set()
    for parts in shapes.values():
        for k in range(2, len(parts)):
            head = "".join(_part_pattern(kind, n) for kind, n in parts[:k])
            last_kind, last_n = parts[k]
            if last_kind in "Aa9":
                kind_class = {"A": "[A-Z]", "a": "[a-z]", "9": "[0-9]"}[last_kind]
                prefixes.add(f"{head}{kind_class}{{1,{last_n + 1}}}")
            else:
                prefixes.add(head + re.escape(last_kind))
    alternatives = "|".join(sorted(prefixes, key=len, reverse=True))
    prefix = re.compile(rf"(?<!{edge})(?:{alternatives})$")
    partial = re.compile(rf"(?<!{edge})(?:{whole}|{alternatives})(?!{edge})")
    return IdShapes(pattern, prefix, "".join(sorted(chars)), frozenset(ids), partial)


def proper_names(text: str) -> tuple[str, ...]:
    """Names of two or more capitalised words in ``text`` ("International Chamber of
    Commerce"; a leading article, preposition or conjunction dropped), in order, each once."""
    found: dict[str, None] = {}
    for m in _NAME.finditer(text):
        name = _NAME_LEAD.sub("", m.group(0))
        if " " in name:
            found[name] = None
    return tuple(found)


def chinese_names(text: str) -> tuple[str, ...]:
    """Chinese names in ``text``: transliterations joined by ``·``, organisation names, and
    the words the segmenter's dictionary tags as a person's or a place's name ("王小明",
    "托马斯", "德国") that are no part of those (the words touching a dot, the four
    characters before a suffix and the suffix)."""
    found: dict[str, None] = {}
    taken: set[int] = set()
    for m in _ZH_TRANSLIT.finditer(text):
        found[m.group(0)] = None
        for i in range(m.start(), m.end()):
            if text[i] in "·・•":
                taken.update((i - 1, i + 1))
    for m in _ZH_ORG.finditer(text):
        found[m.group(0)] = None
        suffix = _ZH_SUFFIX.search(m.group(0))
        head = m.start() + (suffix.start() if suffix else 0)
        taken.update(range(max(m.start(), head - 4), m.end()))
    tags = _name_tags()
    for run in _HAN_RUN.finditer(text):
        at = run.start()
        for word in jieba_segmenter().lcut(run.group(0), HMM=False):
            own = set(range(at, at + len(word)))
            if len(word) >= 2 and not own & taken and tags.get(word) in _NAME_TAGS:
                found[word] = None
            at += len(word)
    return tuple(found)


def _name_cores(name: str) -> list[str]:
    """The ways ``name`` (a ``chinese_names`` match, which may hold the words around
    it: "向乔恩·多伊转账") may be written in a source, shortest last.

    A transliteration: every window holding all its dots with two characters
    (or all there are) on each side; an organisation: every tail that keeps
    its suffix and two characters before it.
    """
    dots = [i for i, ch in enumerate(name) if ch in "·・•"]
    if dots:
        first, last = dots[0], dots[-1]
        lefts = range(max(0, first - 2) + 1)
        rights = range(len(name), min(len(name), last + 3) - 1, -1)
        return [name[a:b] for a in lefts for b in rights]
    suffix = _ZH_SUFFIX.search(name)
    if suffix is None:  # a name the dictionary tags: as it is written
        return [name]
    return [name[a:] for a in range(max(0, suffix.start() - 2) + 1)]


def _to_date(groups: tuple[str, ...], order: str) -> date | None:
    try:
        if order == "ymd":
            y, m, d = int(groups[0]), int(groups[1]), int(groups[2])
        elif order == "dmy":
            y, m, d = int(groups[2]), _MONTHS[groups[1].lower()], int(groups[0])
        else:
            y, m, d = int(groups[2]), _MONTHS[groups[0].lower()], int(groups[1])
        return date(y, m, d)
    except (ValueError, KeyError):
        return None


def _dates(text: str) -> list[tuple[int, int, date]]:
    out: list[tuple[int, int, date]] = []
    for pattern, order in _DATES:
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b, _ in out):
                continue
            when = _to_date(m.groups(), order)
            if when is not None:
                out.append((m.start(), m.end(), when))
    return out


def _value(digits: str, decimals: str | None, scale: str | None) -> Decimal | None:
    try:
        value = Decimal(digits.replace(",", "") + (decimals or ""))
    except InvalidOperation:
        return None
    if scale:
        value *= _SCALE[scale.lower()]
    return value.normalize()


def zh_numeral(run: str) -> int | None:
    """The value of a run of Chinese numeral characters, or None where it is no one number.

    Sections of digit-unit pairs ("一百五十") closed by a scale ("万", "亿");
    a leading 十 is ten ("十二"); two digits in a row, a unit or scale with
    no digit before it ("万一", "千万" as an adverb) parse as nothing.
    """
    total = section = 0
    digit: int | None = None
    for i, ch in enumerate(run):
        if ch in _ZH_DIGITS:
            if digit is not None and digit != 0:
                return None
            digit = _ZH_DIGITS[ch]
        elif ch in _ZH_UNITS:
            if digit is None and ch == "十" and (i == 0 or run[i - 1] in _ZH_SCALES):
                digit = 1
            if not digit:
                return None
            section += digit * _ZH_UNITS[ch]
            digit = None
        else:
            section += digit or 0
            if not section:
                return None
            total = (total + section) * _ZH_SCALES[ch] if ch == "亿" else total + section * _ZH_SCALES[ch]
            section, digit = 0, None
    return total + section + (digit or 0)


def _zh_numerals(text: str, skip: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int, Decimal]]:
    """The Chinese numerals of ``text`` outside ``skip`` that are numbers beyond doubt
    (see the module doc): (start, end, value)."""
    out: list[tuple[int, int, Decimal]] = []
    for m in _ZH_NUMERAL.finditer(text):
        if any(a <= m.start() < b for a, b in skip):
            continue
        run = m.group(0)
        if len(run) == 1 and (run not in _ZH_DIGITS or run in "一零〇" or not _ZH_COUNTED.match(text, m.end())):
            continue
        value = zh_numeral(run)
        if value is not None:
            out.append((m.start(), m.end(), Decimal(value).normalize()))
    return out


def _quantities(text: str, skip: Sequence[tuple[int, int]]) -> list[tuple[str, frozenset[Decimal]]]:
    """The whole numbers of ``text`` outside ``skip``: (as written, its values).

    A scaled number ("2 million", "200万") has its scaled value; the bare
    digits' value is kept beside it only where the sources are read, so a
    sentence's "200" finds "200万" but a sentence's "200万" needs 2,000,000.
    Chinese numerals ("两百万") are read after the digits (``_zh_numerals``).
    """
    out: list[tuple[str, frozenset[Decimal]]] = []
    spans = list(skip)
    for m in _NUMBER.finditer(text):
        if any(a <= m.start() < b for a, b in skip):
            continue
        value = _value(m.group(1), m.group(2), m.group(3))
        if value is not None:
            out.append((m.group(0).strip(), frozenset({value})))
            spans.append(m.span())
    return out + [(text[a:b], frozenset({v})) for a, b, v in _zh_numerals(text, spans)]


@lru_cache(maxsize=1)
def _name_tags() -> dict[str, str]:
    """The part-of-speech tag of every word of jieba's dictionary."""
    jieba_segmenter()
    import jieba.posseg

    return dict(jieba.posseg.dt.word_tag_tab)


def chinese_pairs(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The character pairs of ``text``'s Chinese that carry its claim, each with the words it
    touches (for a report), and its content words (two characters or more, no stop word).

    Every adjacent pair of Han characters counts -- inside words and across their joins,
    function words included ("这是一种…" claims a type) -- except those touching a
    discourse word ("因此", "本案"), which says how the answer is put, not what it claims.
    """
    jieba = jieba_segmenter()
    pairs: list[tuple[str, str]] = []
    content: list[str] = []
    for run in _HAN_RUN.findall(text):
        words = jieba.lcut(run, HMM=False)
        owner = [i for i, word in enumerate(words) for _ in word]  # the word of each character
        content.extend(w for w in words if len(w) >= 2 and w not in ZH_STOP and w not in _ZH_DISCOURSE)
        for k in range(len(run) - 1):
            first, second = words[owner[k]], words[owner[k + 1]]
            if first in _ZH_DISCOURSE or second in _ZH_DISCOURSE:
                continue
            pairs.append((run[k : k + 2], first if first is second else first + second))
    return pairs, content


def codes(text: str, skip: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Spans of the codes of ``text`` outside ``skip``: tokens of letters and digits joined
    by separators that hold a capital and a digit ("TRF-2026-0042", "CY-4411", "COVID-19";
    not "24-hour", "2021-03-01" or "e.g."). A code names something as a whole: a piece
    of one is neither a word nor a number of the text."""
    return [
        m.span()
        for m in _CODE.finditer(text)
        if re.search(r"[A-Z]", m.group(0))
        and re.search(r"\d", m.group(0))
        and not any(a <= m.start() < b for a, b in skip)
    ]


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with ``spans`` turned to spaces (what is judged there is judged as a whole)."""
    for a, b in spans:
        text = text[:a] + " " * (b - a) + text[b:]
    return text


def _content_en(text: str) -> list[str]:
    return [
        w
        for w in (x.lower() for x in _EN_WORD.findall(text))
        if len(w) >= 3 and w not in EN_STOP and w not in _DISCOURSE
    ]


@dataclass
class _Read:
    """What one source holds, read once."""

    id: str
    lowered: str
    ids: frozenset[str]
    codes: frozenset[str]
    values: frozenset[Decimal]
    dates: frozenset[date]
    stems: frozenset[str]


@dataclass
class SupportIndex:
    """The sources one branch's sentences may rest on, read once (see the module doc).

    ``shapes``: the ontology's rule-id shapes (``id_shapes``).
    """

    sources: Sequence[Source]
    shapes: IdShapes = field(default_factory=IdShapes)

    def __post_init__(self) -> None:
        self._read = [self._read_one(s) for s in self.sources if s.text.strip()]
        self.held_ids: frozenset[str] = frozenset().union(*(r.ids for r in self._read))
        self._codes: frozenset[str] = frozenset().union(*(r.codes for r in self._read))
        self._values = frozenset().union(*(r.values for r in self._read))
        self._dates = frozenset().union(*(r.dates for r in self._read))
        self._stems = frozenset().union(*(r.stems for r in self._read))
        self._text = "\n".join(r.lowered for r in self._read)

    def _read_one(self, source: Source) -> _Read:
        text = source.text
        id_spans = self.shapes.find(text)
        ids = frozenset(text[a:b] for a, b in id_spans)
        cites = [m.span() for m in _CITATION.finditer(text)]
        code_spans = codes(text, id_spans)
        held_codes = frozenset(text[a:b].casefold() for a, b in code_spans)
        dates = _dates(text)
        skip = [*id_spans, *code_spans, *cites, *((a, b) for a, b, _ in dates)]
        values: set[Decimal] = set()
        for _, found in _quantities(text, skip):
            values |= found
        for m in _NUMBER.finditer(text):  # the bare digits of a scaled number too
            if not any(a <= m.start() < b for a, b in skip):
                bare = _value(m.group(1), m.group(2), None)
                if bare is not None:
                    values.add(bare)
        when = {d for _, _, d in dates}
        values |= {Decimal(d.year) for d in when}
        stems = frozenset(stem(w) for w in _content_en(_blanked(text, code_spans)))
        return _Read(
            source.id, text.lower(), ids, held_codes, frozenset(values), frozenset(when), stems
        )

    def check(self, sentence: str, *, complete: bool = True, terms: Sequence[str] = ()) -> Support:
        """Judge ``sentence`` (see the module doc).

        ``complete`` False judges a sentence still being written: its last
        token may grow ("2" of "2,000,000"), so it is left out, and content
        words are not judged (a share can still change); what is judged
        cannot become supported by more text, so a failure is final.
        ``terms``: names the caller knows the sentence states (the ontology's
        labels it mentions: "Malta"), each held like a name.
        """
        text = _LIST_MARKER.sub(lambda m: " " * len(m.group(0)), sentence, count=1)
        text = _CITATION.sub(lambda m: " " * len(m.group(0)), text)
        if not complete:
            text = re.sub(r"[\w,.·-]+$", "", text)
        hits: dict[str, int] = {}
        missing: list[str] = []
        invented: list[str] = []
        id_spans = self.shapes.find(text)
        for a, b in id_spans:
            token = text[a:b]
            if token in self.held_ids:
                self._credit(hits, lambda r, t=token: t in r.ids, 3)
            else:
                invented.append(token)
        invented += self.shapes.cut(text.rstrip(" .。!?！？)）"))
        code_spans = codes(text, id_spans)
        for a, b in code_spans:
            code = text[a:b].casefold()
            if code in self._codes:
                self._credit(hits, lambda r, c=code: c in r.codes, 2)
            else:
                missing.append(text[a:b])
        dates = _dates(text)
        for _, _, when in dates:
            if when in self._dates:
                self._credit(hits, lambda r, d=when: d in r.dates, 3)
            else:
                missing.append(when.isoformat())
        skip = [*id_spans, *code_spans, *((a, b) for a, b, _ in dates)]
        for written, values in _quantities(text, skip):
            if values & self._values:
                self._credit(hits, lambda r, v=values: bool(v & r.values), 2)
            else:
                missing.append(written)
        for term in terms:
            needle = term.lower()
            if re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", self._text):
                self._credit(hits, lambda r, n=needle: n in r.lowered, 2)
            else:
                missing.append(term)
        names, zh_names = proper_names(text), chinese_names(text)
        for name in names:
            needle = name.lower()
            if needle in self._text:
                self._credit(hits, lambda r, n=needle: n in r.lowered, 2)
            else:
                missing.append(name)
        for name in zh_names:
            cores = _name_cores(name)
            found = next((n for n in cores if n in self._text), None)
            if found is not None:
                self._credit(hits, lambda r, n=found: n in r.lowered, 2)
            else:
                missing.append(cores[-1])
        strict = (*invented, *missing)
        share: float | None = None
        # A number or date alone claims nothing ("这将在第二天。"): it needs a word to be about.
        checked = bool(id_spans or code_spans or strict or terms or names or zh_names)
        if complete:
            # Ids, codes and Chinese numerals are judged above, not as content ("两百万" is a
            # quantity).
            blank = [*id_spans, *code_spans, *((a, b) for a, b, _ in _zh_numerals(text))]
            plain = "".join(" " if any(a <= i < b for a, b in blank) else ch for i, ch in enumerate(text))
            share, absent = self._content(plain, hits)
            if share is not None and share < CONTENT_SHARE:
                missing.extend(absent)
        unsupported = (*invented, *missing)
        support = tuple(i for i, _ in sorted(hits.items(), key=lambda kv: -kv[1]) if i)
        return Support(
            supported=not unsupported,
            support=support,
            unsupported=tuple(dict.fromkeys(unsupported)),
            invented_ids=tuple(dict.fromkeys(invented)),
            content_share=share,
            strict=tuple(dict.fromkeys(strict)),
            empty=complete and share is None and not checked,
        )

    def _content(self, text: str, hits: dict[str, int]) -> tuple[float | None, list[str]]:
        """The share of the content units (English words, Chinese character pairs) the
        sources hold, and the missing words."""
        en = _content_en(re.sub(rf"[{_HAN}]+", " ", text))
        total, held = len(en), 0
        absent: list[str] = []
        for word in en:
            s = stem(word)
            if s in self._stems:
                held += 1
                self._credit(hits, lambda r, x=s: x in r.stems, 1)
            else:
                absent.append(word)
        pairs, words = chinese_pairs(text)
        if not en and not words:
            return None, []  # nothing the sentence claims: no content word
        for pair, touched in pairs:
            total += 1
            if pair in self._text:
                held += 1
            else:
                absent.append(touched)
        for word in words:
            if word in self._text:
                self._credit(hits, lambda r, x=word: x in r.lowered, 1)
        if not total:
            return None, []
        return held / total, list(dict.fromkeys(absent))

    def _credit(self, hits: dict[str, int], holds: object, weight: int) -> None:
        for r in self._read:
            if r.id and callable(holds) and holds(r):
                hits[r.id] = hits.get(r.id, 0) + weight
