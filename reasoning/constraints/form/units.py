"""Items of a text per unit, and the filters that select among them.

Counting rules of the named IFEval units are those of
:mod:`reasoning.constraints.textstats` (so verdicts agree with IFEval's
judge); ``characters`` are every character of the text as a reader counts its
length (spaces and line breaks included; ``Filter.nonspace`` leaves white
space out); the other units follow Unicode: punctuation is category ``P*``,
digits are ``str.isdigit``, emoji are what the ``emoji`` package lists.

``count(measure, text, settled=...)`` is monotone in the text for every unit
but ``paragraphs`` and ``lines`` (a blank line may still split one): appending
never lowers it. On a partial text, a word touching its end is left out
wherever the word itself is judged (its case, its affixes, its identity),
because the next token may still extend it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import lru_cache
from itertools import pairwise

import emoji

from reasoning.constraints import textstats
from reasoning.constraints.form.model import Filter, Measure, Unit
from reasoning.constraints.quantities import ZH_NUMBER
from reasoning.language import script_counts

__all__ = [
    "MONOTONE_UNITS", "NUMBER_SLOT", "count", "distinct_words", "has_han", "pieces", "section_label", "settled", "words",
]

_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
#: A hashtag: "#" after whitespace or a non-word mark, then word characters ("#travel", "#2024").
_HASHTAG = re.compile(r"(?<![\w#])#\w+")
_NESTED_BULLET = re.compile(r"^(?:[ ]{2,}|\t+)(?:[*+-]|\d+[.)])\s+\S", re.MULTILINE)
#: A Markdown ATX heading line: one to six '#' at the line's start, a space, then text.
_HEADING = re.compile(r"^[ ]{0,3}(#{1,6})[ \t]+\S", re.MULTILINE)
#: A list item line: a bullet ('*', '-', '+') or a number ('1.', '2)'), then its text.
_ITEM = re.compile(r"^[ \t]*(?:[*+-]|\d+[.)])[ \t]+(\S.*)$", re.MULTILINE)

#: Units whose count never decreases as text is appended.
MONOTONE_UNITS = frozenset(set(Unit) - {Unit.PARAGRAPHS, Unit.LINES, Unit.ANSWER})


def settled(text: str) -> str:
    """``text`` without a word piece touching its end."""
    match = re.search(r"\w+$", text)
    return text[: match.start()] if match else text


def words(text: str) -> list[str]:
    """Words as :func:`textstats.count_words` counts them."""
    return _WORD.findall(text)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """spaCy's English and Chinese stop-word lists (plain data; no pipeline is loaded)."""
    from spacy.lang.en.stop_words import STOP_WORDS
    from spacy.lang.zh.stop_words import STOP_WORDS as ZH_STOP_WORDS

    return frozenset(STOP_WORDS) | frozenset(ZH_STOP_WORDS)


def _is_stop(word: str) -> bool:
    return word.lower() in _stop_words()


def _case_ok(item: str, case: str) -> bool:
    if case == "upper":
        return item.isupper()
    if case == "lower":
        return item.islower()
    return item[:1].isupper()


def _script_ok(item: str, script: str) -> bool:
    counts = script_counts(item)
    return bool(counts) and set(counts) == {script}


def _length_ok(item: str, f: Filter) -> bool:
    length = sum(1 for ch in item if ch.isalnum())
    return (f.min_length is None or length >= f.min_length) and (f.max_length is None or length <= f.max_length)


def _prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))


def _length_class_ok(item: str, length_class: str) -> bool:
    length = sum(1 for ch in item if ch.isalnum())
    if length_class == "prime":
        return _prime(length)
    return length % 2 == (0 if length_class == "even" else 1)


def _palindrome(item: str) -> bool:
    core = [ch.lower() for ch in item if ch.isalnum()]
    return bool(core) and core == core[::-1]


def _keep(item: str, f: Filter) -> bool:
    """Whether ``item`` passes ``f``'s item tests (``negated``: fails them)."""
    return _passes(item, f) is not f.negated


def _passes(item: str, f: Filter) -> bool:
    low = item.lower()
    if f.length_class is not None and not _length_class_ok(item, f.length_class):
        return False
    if f.palindrome and not _palindrome(item):
        return False
    if (f.min_length is not None or f.max_length is not None) and not _length_ok(item, f):
        return False
    marks = textstats.half_width(low)
    if f.starts_with is not None and not marks.startswith(textstats.half_width(f.starts_with.lower())):
        return False
    if f.ends_with is not None and not marks.endswith(textstats.half_width(f.ends_with.lower())):
        return False
    if f.contains is not None and f.contains.lower() not in low:
        return False
    if f.case is not None and not _case_ok(item, f.case):
        return False
    if f.script is not None and not _script_ok(item, f.script):
        return False
    if f.one_of and low not in {w.lower() for w in f.one_of}:
        return False
    return not (f.stop_words is not None and _is_stop(item) is not f.stop_words)


def distinct_words(text: str, f: Filter) -> frozenset[str]:
    """The words of ``text`` that pass ``f``, lowercased, each once (what ``unique_words`` counts)."""
    return frozenset(w.lower() for w in words(text) if _keep(w, f))


def _filtered(items: list[str], f: Filter) -> int:
    return sum(1 for item in items if _keep(item, f))


def _initial(word: str) -> str:
    """A word's first letter when it is a cased letter (Latin, Greek, Cyrillic ...), else ''."""
    first = word[:1]
    return first.lower() if first.lower() != first.upper() else ""


def _off_alphabet(previous: str, word: str) -> bool:
    """Whether ``word`` does not start with the Latin letter after ``previous``'s first (z: a)."""
    before, first = previous[:1].lower(), word[:1].lower()
    if not ("a" <= before <= "z" and "a" <= first <= "z"):
        return True
    return ord(first) != ord("a") + (ord(before) - ord("a") + 1) % 26


def _repeats(previous: str, word: str, adjacency: str) -> bool:
    if adjacency == "word":
        return previous.lower() == word.lower()
    if adjacency == "alphabet":
        return _off_alphabet(previous, word)
    initial = _initial(word)
    return bool(initial) and initial == _initial(previous)


_HAN = re.compile(r"[\u3400-\u9fff]")


def has_han(text: str) -> bool:
    """Whether ``text`` holds a Han character (its words are then the segmenter's, not whitespace's)."""
    return _HAN.search(text) is not None


_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")


def _segmented_words(text: str) -> list[str]:
    """Words for a length filter: Latin-script words as :func:`words` has them, Han runs cut into words by jieba.

    :func:`words` counts each Han character as a word (IFEval's word count);
    a length said of Chinese words ("每个词不超过四个字") needs the words
    themselves, or every word would be one character long. jieba is loaded
    only for a text with Han characters under such a filter.
    """
    out: list[str] = []
    for run in _HAN_RUN.findall(text):
        if "\u3400" <= run[0] <= "\u9fff":
            import jieba  # deferred: only Chinese text under a length filter needs the segmenter

            out.extend(piece for piece in jieba.lcut(run) if piece.strip())
        else:
            out.append(run)
    return out


def _words(text: str, f: Filter) -> int:
    lengths = f.min_length is not None or f.max_length is not None
    found = _segmented_words(text) if lengths and has_han(text) else words(text)
    if f.occurrence is not None:
        return _later_uses(found, f, f.occurrence)
    if f.same_as_previous is None:
        return _filtered(found, f)
    return sum(1 for previous, word in pairwise(found)
               if _repeats(previous, word, f.same_as_previous) and _keep(word, f))


def _later_uses(found: list[str], f: Filter, occurrence: int) -> int:
    """The words of ``found`` passing ``f`` that are at least the ``occurrence``-th use of that word."""
    seen: dict[str, int] = {}
    later = 0
    for word in found:
        if not _keep(word, f):
            continue
        key = word.lower()
        seen[key] = seen.get(key, 0) + 1
        later += seen[key] >= occurrence
    return later


def _characters(text: str, f: Filter) -> int:
    if f.chars is not None:
        return sum(1 for ch in text if ch in f.chars)
    if f == Filter():
        return len(text)
    return sum(1 for ch in text if not (f.nonspace and ch.isspace()) and _keep(ch, f))


def _letters(text: str, f: Filter) -> int:
    if f.text is not None:
        return text.lower().count(f.text.lower()) if len(f.text) == 1 else 0
    return sum(1 for ch in text if ch.isalpha() and _keep(ch, f))


def _punctuation(text: str, f: Filter) -> int:
    marks = (ch for ch in text if unicodedata.category(ch).startswith("P"))
    return sum(1 for ch in marks if f.chars is None or ch in f.chars)


def _keywords(text: str, f: Filter) -> int:
    keyword = f.text or ""
    if not keyword:
        return 0
    if f.whole_word:
        return len(re.findall(r"\b" + re.escape(keyword) + r"\b", text, flags=re.IGNORECASE))
    return len(re.findall(re.escape(keyword), text, flags=re.IGNORECASE))


def _paragraphs(text: str, f: Filter) -> int:
    if f.separator == "***":
        count = textstats.markdown_paragraphs(text)
        return -1 if count is None else count
    if f.separator is not None:
        return sum(1 for p in text.split(f.separator) if p.strip())
    return _filtered([p.strip() for p in textstats.blank_line_paragraphs(text) if p.strip()], f)


NUMBER_SLOT = "{n}"
"""Where a section marker holds its number inside it (``第{n}部分``: 第一部分, 第2部分); else the number follows."""


def section_label(marker: str, k: int | str) -> str:
    """The k-th section's label as :func:`count` counts it: "Section 3", or 第3部分 for the marker 第{n}部分."""
    return marker.replace(NUMBER_SLOT, str(k)) if NUMBER_SLOT in marker else f"{marker} {k}"


def _sections(text: str, f: Filter) -> int:
    splitter = (f.marker or "Section").strip()
    if NUMBER_SLOT in splitter:
        before, _, after = splitter.partition(NUMBER_SLOT)
        numeral = r"\s?" + ZH_NUMBER + r"\s?"
        return len(re.split(r"\s?" + re.escape(before) + numeral + re.escape(after) + r"\s?", text)) - 1
    return len(re.split(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", text)) - 1


def _headings(text: str, f: Filter) -> int:
    """Markdown heading lines ("## Costs"); with ``marker`` ("###") only headings of that level."""
    level = (f.marker or "").strip()
    return sum(1 for marks in _HEADING.findall(text) if not level or marks == level)


def _spans(text: str, f: Filter) -> int:
    left, right = f.left or "", f.right or ""
    if not left or not right:
        return 0
    pattern = re.escape(left) + (r"[^\n]+?" if f.nonempty else r".*?") + re.escape(right)
    found = re.findall(pattern, text)
    if f.nonempty:
        found = [s for s in found if s[len(left) : len(s) - len(right)].strip(left + right).strip()]
    return len(found)


_COUNTERS: Mapping[Unit, Callable[[str, Filter], int]] = {
    Unit.CHARACTERS: _characters,
    Unit.LETTERS: _letters,
    Unit.WORDS: _words,
    Unit.UNIQUE_WORDS: lambda text, f: len(distinct_words(text, f)),
    Unit.SENTENCES: lambda text, f: _filtered(textstats.split_sentences(text), f),
    Unit.PARAGRAPHS: _paragraphs,
    Unit.LINES: lambda text, f: _filtered([ln.strip() for ln in text.splitlines() if ln.strip()], f),
    Unit.BULLETS: lambda text, f: textstats.count_bullets(text),
    Unit.NESTED_BULLETS: lambda text, f: len(_NESTED_BULLET.findall(text)),
    Unit.SECTIONS: _sections,
    Unit.PUNCTUATION: _punctuation,
    Unit.DIGITS: lambda text, f: sum(1 for ch in text if ch.isdigit()),
    Unit.NUMBERS: lambda text, f: len(_NUMBER.findall(text)),
    Unit.EMOJI: lambda text, f: emoji.emoji_count(text),
    Unit.HASHTAGS: lambda text, f: len(_HASHTAG.findall(text)),
    Unit.HEADINGS: _headings,
    Unit.CAPITAL_WORDS: lambda text, f: textstats.count_capital_words(text),
    Unit.KEYWORDS: _keywords,
    Unit.HIGHLIGHTS: lambda text, f: textstats.count_highlights(text),
    Unit.PLACEHOLDERS: lambda text, f: textstats.count_placeholders(text),
    Unit.SPANS: _spans,
    Unit.ANSWER: lambda text, f: 1 if text.strip() else 0,
}

#: Units whose items are judged by their whole word: one touching the end of a partial text is not counted yet.
_WORDISH = frozenset({Unit.UNIQUE_WORDS, Unit.CAPITAL_WORDS})


def count(measure: Measure, text: str, *, partial: bool = False) -> int:
    """How many items of ``measure.unit`` that pass ``measure.filter`` ``text`` holds.

    -1 for ``***`` paragraphs with an empty one between dividers (IFEval fails such a text).
    """
    f = measure.filter
    wordish = (
        measure.unit in _WORDISH
        or (measure.unit is Unit.KEYWORDS and f.whole_word)
        or (measure.unit is Unit.WORDS and f != Filter())
    )
    checked = settled(text) if partial and wordish else text
    return _COUNTERS[measure.unit](checked, f)


def pieces(unit: Unit, text: str) -> list[str]:
    """The sentences, paragraphs, lines or list items of ``text`` (for per-item bounds and positions).

    A list item (``bullets``) is the text of a bulleted or numbered line
    after its marker: "- ✅ Done" is "✅ Done".
    """
    if unit is Unit.SENTENCES:
        return textstats.split_sentences(text)
    if unit is Unit.PARAGRAPHS:
        return [p.strip() for p in textstats.blank_line_paragraphs(text) if p.strip()]
    if unit is Unit.LINES:
        return [ln.strip() for ln in text.splitlines() if ln.strip()]
    if unit is Unit.WORDS:
        return text.split()
    if unit is Unit.BULLETS:
        return [item.strip() for item in _ITEM.findall(text)]
    return [text.strip()] if text.strip() else []
