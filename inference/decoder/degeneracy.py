"""Degenerate text: repetition loops, copies of the instructions, script drift, runs of non-language characters.

DESIGN.md's measured pitfall: masks alone can push a small model into a run of
emoji or digits once its preferred first tokens are masked. These checks run
on a step's text at its boundary (cheap string work) and feed the entropy
rule: a degenerate step is as uninformative as a high-entropy one.

A small model pushed off its preferred tokens also falls back on text it can
see: a step that restates the system message or the request ("你是一名严谨的合规
助理。请直接回答请求。" as the first sentence of an answer) answers nothing, and
neither does a one-character sentence of a Chinese answer ("确。", "请。") or a
fragment of an earlier sentence. A copy is judged on word (or Han character)
4-grams: a step of at least 8 words or characters whose 4-grams are nearly all
(80 %) the instructions' (``copy_grams``) is a copy.

A loop need not fit in one step: an answer that says "i.e." thirty times, one
short step at a time, or restates the request's sentence after every question,
repeats a phrase across steps. A phrase is a word 5-gram (8 Han characters);
the step that says one for the third time in an answer (``RepeatBound``: one
more time per 150 words already written, twice as often when the constraints
ask for two responses or a copy) loops, unless the phrase is made only of the
words the constraints' own texts hold (a keyword asked ten times, a section
marker, the text to repeat).

A domain answer (one with evidence or a decision to rest on) is also judged
for junk (``junk``, with the ``JunkRules`` of its request):

- a fragment: a list marker or punctuation with nothing after it, a bare
  label ("请求说明：", "Evidence:"), a sentence of fewer than three words or
  six Han characters ("证据。", "例如。"); a number, a date or a code is one
  item, and a sentence needs two words beside its items, more than two in
  Chinese ("(2017-06-26) 2022年5月3日，港湾。" has one, "EXP-R-102许可货值。"
  two);
- a sentence broken off (a budget's landing closed it where it stood): after
  a word that needs what follows it, an article, a preposition, a
  conjunction, an auxiliary ("The rules apply to.", "若货值高于。"); in
  Chinese, inside a word the request or the evidence goes on with
  ("请求上报反洗。" where they say 反洗钱) or before the content word they
  always follow it with ("请求上报反洗钱。" where they say 反洗钱报告官), or
  before the number they always follow it with ("出口货物的许可门槛。" where they say "许可门槛50000"); in
  English, inside a term the references always go on with a content word
  ("AML-R-017 applies to politically exposed." where they say "politically
  exposed person"); or a
  condition with no main clause ("If the nodule size is less than 6 mm.",
  "同时，若结节大小。");
- an echo of the request or of the evidence block's headings (nearly all of
  its word 3-grams are theirs), or of the answer so far (nearly all of its
  words lie in 3-grams of the sentences before it: "缺少结节大小。" after
  "缺少结节大小，规则无法判定本案。");
- garbled script: two or more adjacent Han characters the segmenter leaves
  as single words, each rare as a word of its own in the language's
  dictionary (jieba's frequencies), that neither the request nor the
  evidence spells ("禁止福制": 福 / 制).

Those rules are not applied to other answers, where a short heading or a
label may be what the constraints ask.

Script drift is judged against the scripts of the answer's language
(``answer_scripts``: the table the script controller uses,
``reasoning.language.LANGUAGE_SCRIPTS``, Latin for every other language), so an answer
required in Russian, Arabic or Hindi is measured against Cyrillic, Arabic or
Devanagari, not against Latin.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from spacy.lang.en.stop_words import STOP_WORDS as EN_STOP
from spacy.lang.zh.stop_words import STOP_WORDS as ZH_STOP

from inference.decoder.vocab import letter_script
from reasoning.constraints.model import Constraint, Kind
from reasoning.language import LANGUAGE_SCRIPTS
from reasoning.nlp import jieba_segmenter

__all__ = [
    "LATIN",
    "JunkRules",
    "RepeatBound",
    "Said",
    "answer_scripts",
    "copies",
    "copy_grams",
    "degeneracy",
    "junk",
    "junk_rules",
    "loops",
    "normalised_steps",
    "repeat_bound",
    "said",
]

LATIN: frozenset[str] = frozenset({"LATIN"})

_RULE_CHARS = set("-*=_#~.")
_DIGIT_RUN = 16
_SYMBOL_RUN = 8
_EMOJI_RUN = 4
_SAME_TOKEN_RUN = 6
_NGRAM = 3
_NGRAM_REPEATS = 3
_LONG_LATIN = 20  # Latin letters a step of a non-Latin answer may hold with none of its own
_COPY_GRAM = 4
_COPY_MIN_TOKENS = 8
_COPY_SHARE = 0.8
_FRAGMENT = 3  # Han characters a step may have and still be a fragment of an earlier step
_PHRASE = 5  # words of a phrase the loop rule counts
_PHRASE_HAN = 8  # Han characters of one
_PHRASE_TIMES = 2  # times an answer may say a phrase
_WORDS_PER_TIME = 150  # words of answer that earn one more time
# Constraints whose answer holds a text twice (two responses, the request and its answer).
_TWICE = frozenset({Kind.TWO_RESPONSES, Kind.REPEAT_PROMPT, Kind.COPY})
# Parameters that name a relation, unit or language, not a text of the answer.
_NOT_LITERAL = frozenset({"relation", "unit", "op", "language", "layout", "per", "of", "change"})
_COPY_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")

Grams = frozenset[tuple[str, ...]]

_JUNK_WORDS = 3  # a domain answer's sentence has at least this many words (Han characters count half)
_ECHO_GRAM = 3
_ECHO_SHARE = 0.8
_LABEL_WORDS = 4  # a sentence ending in a colon with at most this many words is a bare label
_RARE_SINGLE = 20_000  # jieba frequency under which a Han character is rare as a word of its own
_MARKER = re.compile(r"^\s*(?:\d+[.)、]|[-*•#]+)\s*")
_CITE = re.compile(r"\[E\d+\]")
# A code: letters and digits joined by separators, with a digit or a capital before a separator
# ("AML-R-024", cut short "AML-R-", "COVID-19"); not a hyphenated word, not a word before a period.
_CODE_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_-])(?=[\w./:-]*(?:\d|[A-Z][-_/:]))[A-Za-z0-9]+(?:[-_/:][A-Za-z0-9]*|\.[A-Za-z0-9]+)+"
)
_LATIN_WORD = re.compile(r"[^\W\d_\u3400-\u4dbf\u4e00-\u9fff]+")
_HAN_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
# A date, or a number with the Han characters that write its unit ("2022年5月3日", "200万",
# "6个月"): one item of a sentence, not words.
_QUANTITY = re.compile(
    r"\d{4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?"
    r"|\d[\d,.:/-]*\s*(?:个月|个|年|月|日|号|时|万|亿|千|百)?"
    r"|[零〇一二两三四五六七八九十百千万亿]+(?=[年月日个])"
)
# Words after which a sentence cannot end: it was closed where it stood (articles, prepositions,
# conjunctions, auxiliaries, comparatives). English by word; Chinese by jieba's word.
_OPEN_EN = frozenset(
    [
        "a", "an", "the", "of", "to", "for", "with", "from", "by", "than", "and", "or", "but",
        "nor", "if", "because", "whose", "is", "are", "was", "were", "be", "been", "being",
        "will", "shall", "must", "should", "would", "can", "could", "may", "might", "per",
        "via", "into", "onto", "between", "in", "on", "at", "such", "very", "more", "less",
    ]
)
_OPEN_ZH = frozenset(
    [
        "于", "向", "和", "与", "或", "及", "以及", "并", "并且", "而", "而且", "但", "但是", "或者", "如果", "若",
        "假如", "因为", "由于", "所以", "对", "对于", "在", "将", "把", "被", "从", "给", "为", "是", "高于", "低于",
        "超过", "不低于", "不高于", "不超过", "少于", "多于", "不少于", "等于", "达到", "包括", "根据", "按照", "依据", "关于",
        "通过", "须", "应", "应当", "必须", "需", "的话", "即", "即为",
    ]
)
_LAST_WORD = re.compile(r"([A-Za-z]+)[\s\W]*$")
_EN_WORD = re.compile(r"[A-Za-z0-9][\w'-]*")
_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z][\w'-]*)")
# Words that open a condition: a sentence that is one such clause has no main clause.
_CONDITION_EN = frozenset(["if", "unless", "when", "whenever", "once", "provided"])
_CONDITION_ZH = frozenset(["若", "如果", "假如", "倘若", "如", "当", "只要", "一旦", "除非", "要是"])
_CLAUSE = re.compile(r"[,;:，；：]")
_SENTENCE_MARKS = " \t\n.!?;:,。！？；：，、\"'”’」』"


def _copy_tokens(text: str) -> list[str]:
    return _COPY_TOKEN.findall(text.lower())


def copy_grams(texts: Iterable[str]) -> Grams:
    """The word / Han character 4-grams of ``texts`` (the instructions a step must not copy)."""
    found: set[tuple[str, ...]] = set()
    for text in texts:
        tokens = _copy_tokens(text)
        found.update(tuple(tokens[i : i + _COPY_GRAM]) for i in range(len(tokens) - _COPY_GRAM + 1))
    return frozenset(found)


def copies(step_text: str, grams: Grams) -> bool:
    """Whether ``step_text`` is a copy of the text ``grams`` were taken from (see the module doc)."""
    tokens = _copy_tokens(step_text)
    if not grams or len(tokens) < _COPY_MIN_TOKENS:
        return False
    own = [tuple(tokens[i : i + _COPY_GRAM]) for i in range(len(tokens) - _COPY_GRAM + 1)]
    return sum(1 for g in own if g in grams) >= _COPY_SHARE * len(own)


def _is_han(token: str) -> bool:
    return len(token) == 1 and "\u3400" <= token <= "\u9fff"


def _phrases(tokens: Sequence[str], first: int = 0) -> Iterable[tuple[str, ...]]:
    """The phrases of ``tokens`` that end at or after index ``first`` (5 words, or 8 Han characters)."""
    for i in range(len(tokens)):
        n = _PHRASE_HAN if _is_han(tokens[i]) else _PHRASE
        if i + n <= len(tokens) and i + n > first:
            yield tuple(tokens[i : i + n])


@dataclass(frozen=True)
class Said:
    """The phrases an answer already holds (``said``), which the loop rule counts a step against."""

    counts: Mapping[tuple[str, ...], int] = field(default_factory=dict)
    tail: tuple[str, ...] = ()  # the last words, which a phrase may continue into the step
    words: int = 0


def said(text: str) -> Said:
    """The phrases of ``text`` (an answer so far) and its last words, for :func:`loops`."""
    tokens = _copy_tokens(text)
    return Said(Counter(_phrases(tokens)), tuple(tokens[-(_PHRASE_HAN - 1) :]), len(tokens))


@dataclass(frozen=True)
class RepeatBound:
    """How often an answer may say one phrase, by what its constraints ask.

    ``times``: in an answer of up to 150 words (one more time per 150 words
    it already has); ``literals``: the words of the constraints' own texts
    (keywords, markers, phrases, a text to repeat): a phrase made only of
    them is the constraints' to repeat.
    """

    times: int = _PHRASE_TIMES
    literals: frozenset[str] = frozenset()


def _texts(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in _NOT_LITERAL:
                yield from _texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts(item)


def repeat_bound(constraints: Sequence[Constraint]) -> RepeatBound:
    """The ``RepeatBound`` of an answer under ``constraints`` (see the module doc)."""
    literals = frozenset(
        t for c in constraints for text in _texts(c.params) for t in _copy_tokens(text)
    )
    twice = any(c.kind in _TWICE for c in constraints)
    return RepeatBound(_PHRASE_TIMES * (2 if twice else 1), literals)


def loops(step_text: str, before: Said, bound: RepeatBound = RepeatBound()) -> bool:
    """Whether ``step_text`` says a phrase more often than ``bound`` allows the answer ``before`` it.

    The step's last word is left out while it may be unfinished (the text
    ends in a letter or digit), so a step judged as it grows is judged on
    words it keeps: once a step loops, every continuation of it does.
    """
    tokens = _copy_tokens(step_text)
    if tokens and step_text[-1:].isalnum() and not _is_han(tokens[-1]):
        tokens = tokens[:-1]
    if not tokens:
        return False
    allowed = bound.times + before.words // _WORDS_PER_TIME
    joined = [*before.tail, *tokens]
    new = Counter(_phrases(joined, first=len(before.tail)))
    return any(
        before.counts.get(p, 0) + n > allowed and not set(p) <= bound.literals
        for p, n in new.items()
    )


def _fragment(normalized: str, seen: frozenset[str]) -> str | None:
    """A Chinese step of one character, or of a few that an earlier step already holds."""
    letters = [c for c in normalized if c.isalpha()]
    if (
        not seen
        or not letters
        or len(letters) > _FRAGMENT
        or any(letter_script(c) != "CJK" for c in letters)
    ):
        return None
    if len(letters) == 1:
        return "repetition: a one-character sentence"
    core = "".join(letters)
    if any(core in s for s in seen):
        return "repetition: a fragment of an earlier step"
    return None


def answer_scripts(language: str) -> frozenset[str]:
    """The scripts (``vocab.letter_script`` names) an answer in ``language`` (ISO 639-1) is written in.

    Languages with a script of their own get it (``"ru"``: Cyrillic, ``"ja"``:
    CJK and kana); every other language, and an unknown code, gets Latin.
    """
    return LANGUAGE_SCRIPTS.get(language.lower().split("-")[0], LATIN)


def _script_drift(text: str, scripts: frozenset[str]) -> bool:
    """The step's letters leave the answer's ``scripts``.

    More than half of the letters in other scripts is drift. An answer in a
    non-Latin script tolerates Latin (names, terms, code: the usual second
    script), unless a long step (over 20 Latin letters) holds none of its own.
    """
    letters = [letter_script(c) for c in text if c.isalpha()]
    if len(letters) < 4:
        return False
    own = sum(1 for s in letters if s in scripts)
    tolerated = 0 if "LATIN" in scripts else sum(1 for s in letters if s == "LATIN")
    if (len(letters) - own - tolerated) / len(letters) > 0.5:
        return True
    return own == 0 and tolerated > _LONG_LATIN


def _non_language_run(text: str) -> str | None:
    """A long run of digits (numbers with separators stay well short of it), symbols or emoji."""
    digits, symbols, emoji = 0, 0, 0
    for ch in text:
        if ch.isspace() or ch.isalpha() or ch in _RULE_CHARS:
            digits = symbols = emoji = 0
            continue
        if ch.isdigit() or ch in ",.":
            digits += 1
            symbols = emoji = 0
        else:
            symbols += 1
            emoji = emoji + 1 if unicodedata.category(ch) == "So" else 0
            digits = 0
        if digits >= _DIGIT_RUN:
            return "a run of digits"
        if emoji >= _EMOJI_RUN:
            return "a run of emoji"
        if symbols >= _SYMBOL_RUN:
            return "a run of symbols"
    return None


@dataclass(frozen=True)
class JunkRules:
    """What a domain answer's junk rules compare a step with (``junk_rules``)."""

    echo: Grams = frozenset()  # word / Han 3-grams of the request and the evidence headings
    reference: str = ""  # the request and evidence, where a rare character sequence is a name


def _grams(text: str, n: int) -> list[tuple[str, ...]]:
    tokens = _copy_tokens(text)
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def junk_rules(request: str, headings: Iterable[str], reference: str) -> JunkRules:
    """The ``JunkRules`` of a domain answer to ``request`` whose prompt showed
    ``headings`` (the evidence block's titles) and the evidence ``reference``."""
    grams: set[tuple[str, ...]] = set()
    for text in (request, *headings):
        grams.update(_grams(text, _ECHO_GRAM))
    return JunkRules(frozenset(grams), f"{request}\n{reference}")


def _garbled(text: str, reference: str) -> str | None:
    """Two or more adjacent rare single Han characters the reference does not spell."""
    jieba = jieba_segmenter()
    freq = jieba.dt.FREQ
    for run in _HAN_RUN.findall(text):
        if len(run) < 2 or run in reference:
            continue
        rare: list[str] = []
        for word in [*jieba.lcut(run, HMM=False), ""]:
            if len(word) == 1 and freq.get(word, 0) < _RARE_SINGLE:
                rare.append(word)
                continue
            if len(rare) >= 2 and "".join(rare) not in reference:
                return "".join(rare)
            rare = []
    return None


def _cut_word(run: str, reference: str) -> str | None:
    """The end of a Chinese sentence's last run where the budget cut it short: its last two
    words occur in ``reference``, and everywhere they do, a word of the reference goes on
    past their end ("上报反洗" in "上报反洗钱报告官": 反洗钱), a content word follows them
    (a term cut short: "上报反洗钱" of "上报反洗钱报告官") or a number follows at once (a
    relation without its value: "许可门槛" in "EXP-R-102许可门槛50000"). One occurrence
    followed by a mark, a function word or nothing of its run ends it."""
    jieba = jieba_segmenter()
    words = jieba.lcut(run, HMM=False)
    tail = "".join(words[-2:])
    if len(tail) < 2:
        return None
    seen = False
    for m in re.finditer(re.escape(tail), reference):
        end = m.end()
        if reference[end : end + 1].isdigit():
            seen = True
            continue
        at, hosted = next((a, w) for a, b, w in _han_words(reference) if a <= m.start() < b)
        for k, word in enumerate(hosted):
            if at < end < at + len(word):
                seen = True
                break
            if at + len(word) >= end:
                after = hosted[k + 1] if k + 1 < len(hosted) else ""
                if not after or after in ZH_STOP:
                    return None  # here the tail ends where a word ends
                seen = True
                break
            at += len(word)
    return str(words[-1]) if seen else None


def _first_word(clause: str) -> tuple[str, int]:
    """The first word of ``clause`` (lower case; a jieba word in Chinese) and its count of words."""
    clause = clause.strip()
    if _HAN_CHAR.match(clause[:1]):
        words = [w for w in jieba_segmenter().lcut(clause, HMM=False) if w.strip()]
    else:
        words = _LATIN_WORD.findall(clause)
    return (str(words[0]).lower(), len(words)) if words else ("", 0)


def _all_clauses_short(body: str) -> bool:
    """Whether every clause of an English sentence has fewer than three words and items
    ("In 2021, Lena Park.": pieces, no clause)."""
    clauses = [c for c in _CLAUSE.split(body.rstrip(_SENTENCE_MARKS)) if c.strip()]
    return len(clauses) > 1 and all(
        len(_LATIN_WORD.findall(c)) + len(re.findall(r"\d+", c)) < _JUNK_WORDS for c in clauses
    )


def _condition_alone(body: str) -> str | None:
    """The opener of a sentence that is a condition with no main clause ("If the nodule size is
    less than 6 mm.", "同时，若结节大小。"; a one-word opening clause such as "同时" aside)."""
    clauses = [c for c in _CLAUSE.split(body.rstrip(_SENTENCE_MARKS)) if c.strip()]
    while len(clauses) > 1 and _first_word(clauses[0])[1] <= 1:
        clauses = clauses[1:]
    if len(clauses) != 1:
        return None
    first, _ = _first_word(clauses[0])
    return first if first in _CONDITION_EN or first in _CONDITION_ZH else None


def _cut_term(text: str, reference: str) -> str | None:
    """The last word of an English sentence that ends inside a term: its last two words occur
    in ``reference``, and everywhere they do, a content word follows them ("politically
    exposed" of "politically exposed person", "the Financial" of "the Financial Intelligence
    Unit"); one occurrence followed by a mark or a function word ("due diligence and") ends it."""
    words = _EN_WORD.findall(text)
    if len(words) < 2:
        return None
    tail = r"\s+".join(re.escape(w) for w in words[-2:])
    seen = False
    for m in re.finditer(rf"(?<![\w-]){tail}(?![\w-])", reference, re.IGNORECASE):
        after = _NEXT_WORD.match(reference, m.end())
        if after is None or after.group(1).lower() in EN_STOP:
            return None
        seen = True
    return words[-1] if seen else None


def _broken_off(body: str, reference: str = "") -> str | None:
    """The word a sentence ends on when it cannot end there (see the module doc), or None.

    A sentence ending in a citation or a closing bracket ends on what it cites.
    ``reference``: the texts the answer rests on, where a Chinese word cut short goes on.
    """
    text = body.rstrip(_SENTENCE_MARKS)
    if not text or text[-1] in ")]）】":
        return None
    if _HAN_CHAR.match(text[-1]):
        run = _HAN_RUN.findall(text)[-1]
        last = str(jieba_segmenter().lcut(run, HMM=False)[-1])
        if last in _OPEN_ZH:
            return last
        return _cut_word(run, reference) if reference else None
    m = _LAST_WORD.search(text)
    if m is not None and m.end(1) == len(text) and m.group(1).lower() in _OPEN_EN:
        return m.group(1)
    return _cut_term(text, reference) if reference else None


@lru_cache(maxsize=256)
def _han_words(text: str) -> tuple[tuple[int, int, tuple[str, ...]], ...]:
    """Each Han run of ``text`` (a request's fixed reference: asked again for every sentence
    of every beam) with its start, end and jieba words."""
    jieba = jieba_segmenter()
    return tuple(
        (m.start(), m.end(), tuple(jieba.lcut(m.group(0), HMM=False))) for m in _HAN_RUN.finditer(text)
    )


@lru_cache(maxsize=256)
def _answer_grams(before: str) -> frozenset[tuple[str, ...]]:
    """The word 3-grams of the answer so far (beams sharing a prefix ask for the same one)."""
    return frozenset(_grams(_CITE.sub(" ", before), _ECHO_GRAM))


def _restates(body: str, before: str) -> bool:
    """Whether nearly all (80 %) of the words or Han characters of ``body`` lie in a 3-gram
    the answer ``before`` it holds: pieces of earlier sentences put back together
    ("缺少货值，则适用。" after "缺少货值，…则适用EXP-R-102…") restate them."""
    tokens = _copy_tokens(body)
    earlier = _answer_grams(before)
    covered = [False] * len(tokens)
    for i in range(len(tokens) - _ECHO_GRAM + 1):
        if tuple(tokens[i : i + _ECHO_GRAM]) in earlier:
            covered[i : i + _ECHO_GRAM] = [True] * _ECHO_GRAM
    return bool(tokens) and sum(covered) >= _ECHO_SHARE * len(tokens)


def junk(step_text: str, rules: JunkRules, before: str = "") -> str | None:
    """Why a sentence of a domain answer is junk (a fragment, a sentence broken off, an echo,
    garbled script), or None. ``before``: the answer before the sentence, which it must not echo."""
    body = _CITE.sub(" ", _MARKER.sub("", step_text, count=1)).strip()
    if not _LATIN_WORD.search(body) and not _HAN_CHAR.search(body):
        return "fragment: a list marker or punctuation with nothing after it"
    # A code ("AML-R-024", even cut short: "AML-R-") and a quantity are one item each, not words.
    items = len(_CODE_TOKEN.findall(body))
    plain = _CODE_TOKEN.sub(" ", body)
    items += len(_QUANTITY.findall(plain))
    plain = _QUANTITY.sub(" ", plain)
    words = len(_LATIN_WORD.findall(plain)) + len(_HAN_CHAR.findall(plain)) / 2
    han = _HAN_CHAR.search(body) is not None
    if body.rstrip()[-1:] in (":", "：") and words + items <= _LABEL_WORDS:
        return "fragment: a bare label"
    # Beside its items a sentence needs two words, and more than two in Chinese (whose words
    # are counted as half their characters: "EXP-R-102许可货值。" is a code and a label).
    least = _JUNK_WORDS - 0.5 if han else _JUNK_WORDS - 1
    if words + items < _JUNK_WORDS or words < least:
        return "fragment: too short to state anything"
    broken = _broken_off(step_text, rules.reference)
    if broken is not None:
        return f"fragment: the sentence breaks off after {broken!r}"
    condition = _condition_alone(body)
    if condition is not None:
        return f"fragment: a condition ({condition!r}) with no main clause"
    if not han and _all_clauses_short(body):
        return "fragment: no clause of three words"
    own = _grams(body, _ECHO_GRAM)
    if own and sum(1 for g in own if g in rules.echo) >= _ECHO_SHARE * len(own):
        return "echo: the step repeats the request or the evidence headings"
    if own and before and _restates(body, before):
        return "echo: the sentence restates the answer before it"
    garbled = _garbled(body, rules.reference) if han else None
    if garbled:
        return f"garbled script: {garbled!r}"
    return None


def normalised_steps(steps: Iterable[str]) -> frozenset[str]:
    """Steps as the repetition check compares them (white space collapsed, lower case)."""
    return frozenset(" ".join(s.split()).lower() for s in steps)


def degeneracy(
    step_text: str,
    step_tokens: Sequence[int],
    earlier_steps: Sequence[str] | frozenset[str],
    scripts: frozenset[str] = LATIN,
    instructions: Grams = frozenset(),
    before: Said | None = None,
    bound: RepeatBound = RepeatBound(),
    own_text: str | None = None,
    junk_of: JunkRules | None = None,
) -> str | None:
    """Why the step is degenerate, or None. Deterministic, no model.

    ``earlier_steps``: the answer's earlier steps, as texts or already
    ``normalised_steps`` (a frozenset, which a caller judging many
    candidates of one beam computes once). ``scripts``: the answer's scripts
    (``answer_scripts`` of its language). ``instructions``: the ``copy_grams``
    of the text the answer must not copy (empty: none). ``before``: the
    answer's text so far as ``said`` counts it (None: the loop rule is not
    applied); ``bound``: how often it may say a phrase (``repeat_bound``).
    ``own_text``: the text of the step's tokens the model chose, when the
    steering forced some (an opening, a literal): the copy rule judges only
    it, so a forced text is never a copy and the model's own restatement of
    the instructions after it still is (None: the whole step is the model's).
    ``junk_of``: the ``JunkRules`` of a domain answer (None: not one); a
    complete sentence of one is also judged by :func:`junk`.
    """
    normalized = " ".join(step_text.split()).lower()
    long_enough = (
        len(normalized) > 8 or sum(1 for c in normalized if letter_script(c) == "CJK") >= 2
    )
    seen = (
        earlier_steps if isinstance(earlier_steps, frozenset) else normalised_steps(earlier_steps)
    )
    if long_enough and normalized in seen:
        return "repetition: the step repeats an earlier step"
    run = 1
    for a, b in itertools.pairwise(step_tokens):
        run = run + 1 if a == b else 1
        if run >= _SAME_TOKEN_RUN:
            return "repetition: one token repeated"
    grams = Counter(
        tuple(step_tokens[i : i + _NGRAM]) for i in range(len(step_tokens) - _NGRAM + 1)
    )
    if grams and max(grams.values()) >= _NGRAM_REPEATS:
        return "repetition: a phrase loops"
    if before is not None and loops(step_text, before, bound):
        return "repetition: the answer says a phrase again"
    fragment = _fragment(normalized, seen)
    if fragment:
        return fragment
    if copies(step_text if own_text is None else own_text, instructions):
        return "copy: the step repeats the instructions"
    reason = _non_language_run(step_text)
    if reason:
        return reason
    if _script_drift(step_text, scripts):
        return "script drift: the step leaves the response's script"
    if junk_of is not None:
        return junk(step_text, junk_of)
    return None
