"""Verifiers of characters and marks: counts, scripts, case, delimited spans, nesting, language.

A *punctuation mark* is a character of a Unicode punctuation category. Emphasis
with *single asterisks* is ``*text*`` whose asterisks touch neither another
asterisk nor, inwards, white space (``**bold**`` is not). Brackets ``()``
``[]`` ``{}`` are *nested* n deep when they all pair up in order and some
pair lies inside n - 1 others; a list marker such as ``1)`` or ``a)`` opening
a line is no bracket. Quotation marks nest (:func:`quote_depth`) when each
pair (``“”``, ``‘’``, ``「」``, ``『』``, ``«»``, straight ``"`` and ``'``)
closes inside the pair around it; an apostrophe between letters (``don't``)
or with no open single quote to close (``dogs'``) is no quotation mark. The
answer's *language* is the one lingua's detector, over a fixed set of widely
written languages, finds most likely.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

from bench.heldout_judge.readings import (
    HAN,
    HAS_CONTENT,
    Judge,
    bounded,
    delimiter_pairs,
    emoji_count,
    words,
)

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_HASHTAG = re.compile(r"(?<![\w#])#[^\W\d_]\w*")
_LATIN = re.compile(r"[A-Za-z\uff21-\uff3a\uff41-\uff5a]")
_PERCENT = re.compile(r"\d+(?:[.,]\d+)?\s*(?:%|％|\bper\s?cent\b)", re.IGNORECASE)
_SINGLE_STAR = re.compile(r"(?<![*\w])\*(?![*\s])(?P<body>[^*\n]*?)(?<![\s*])\*(?![*\w])")
#: The languages the response-language judge tells apart (ISO 639-1 codes).
_LANGUAGES: dict[str, Language] = {
    "en": Language.ENGLISH,
    "fr": Language.FRENCH,
    "de": Language.GERMAN,
    "es": Language.SPANISH,
    "it": Language.ITALIAN,
    "pt": Language.PORTUGUESE,
    "nl": Language.DUTCH,
    "zh": Language.CHINESE,
    "ja": Language.JAPANESE,
    "ru": Language.RUSSIAN,
}
_BRACKETS = {")": "(", "]": "[", "}": "{"}
_LIST_PAREN = re.compile(r"^[ \t]*(?:\d+|[A-Za-z])\)", re.MULTILINE)
_QUOTE_PAIRS = {"“": "”", "‘": "’", "「": "」", "『": "』", "«": "»"}


def _char_count(args: Mapping[str, Any], text: str) -> bool:
    chars = str(args["chars"])
    return bounded(sum(text.count(c) for c in chars), args)


def _numbers(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_NUMBER.findall(text)), args)


def _emoji(args: Mapping[str, Any], text: str) -> bool:
    return bounded(emoji_count(text), args)


def _hashtags(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_HASHTAG.findall(text)), args)


def _chars(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(text.strip()), args)


def _nonspace_chars(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(not c.isspace() for c in text), args)


def _spans(args: Mapping[str, Any], text: str) -> bool:
    count = 0
    for left, right in delimiter_pairs(args):
        inner = f"[^{re.escape(left)}{re.escape(right)}\\n]*[^\\W_][^{re.escape(left)}{re.escape(right)}\\n]*"
        count += len(re.findall(re.escape(left) + inner + re.escape(right), text))
    return bounded(count, args)


def _lowercase(args: Mapping[str, Any], text: str) -> bool:
    return any(c.islower() for c in text) and not any(c.isupper() for c in text)


def _uppercase(args: Mapping[str, Any], text: str) -> bool:
    return any(c.isupper() for c in text) and not any(c.islower() for c in text)


def _percentages(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_PERCENT.findall(text)), args)


def _no_latin(args: Mapping[str, Any], text: str) -> bool:
    return bool(HAN.search(text)) and not _LATIN.search(text)


def _latin_only(args: Mapping[str, Any], text: str) -> bool:
    return bool(_LATIN.search(text)) and not HAN.search(text)


def _han_chars(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(HAN.findall(text)), args)


def _regex_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(1 for _ in re.finditer(str(args["regex"]), text)), args)


def _emphasis_spans(args: Mapping[str, Any], text: str) -> bool:
    found = [m for m in _SINGLE_STAR.finditer(text) if HAS_CONTENT.search(m.group("body"))]
    return bounded(len(found), args)


@functools.cache
def _detector() -> LanguageDetector:
    return LanguageDetectorBuilder.from_languages(*_LANGUAGES.values()).build()


def _response_language(args: Mapping[str, Any], text: str) -> bool:
    return _detector().detect_language_of(text) == _LANGUAGES[str(args["language"])]


def _marks_all(args: Mapping[str, Any], text: str) -> bool:
    return all(mark in text for mark in str(args["chars"]))


def _punctuation_only(args: Mapping[str, Any], text: str) -> bool:
    allowed = str(args["chars"])
    return bool(words(text)) and all(
        c in allowed for c in text if unicodedata.category(c).startswith("P")
    )


def _bracket_depth(args: Mapping[str, Any], text: str) -> bool:
    stack: list[str] = []
    deepest = 0
    for char in _LIST_PAREN.sub("", text):
        if char in "([{":
            stack.append(char)
            deepest = max(deepest, len(stack))
        elif char in _BRACKETS and (not stack or stack.pop() != _BRACKETS[char]):
            return False
    return not stack and deepest >= int(args["n"])


def quote_depth(text: str) -> int:
    """How deep quotation marks nest in ``text``; -1 when a pair is left open or closed out of order."""
    stack: list[str] = []
    deepest = 0
    padded = f" {text} "
    for i in range(1, len(padded) - 1):
        char, before, after = padded[i], padded[i - 1], padded[i + 1]
        if char in _QUOTE_PAIRS:
            stack.append(_QUOTE_PAIRS[char])
        elif char in "”」』»":
            if not stack or stack.pop() != char:
                return -1
        elif char in "'’":
            if before.isalnum() and after.isalnum():
                continue
            if stack and stack[-1] == char and not before.isspace():
                stack.pop()
            elif char == "'" and not before.isalnum() and not after.isspace():
                stack.append("'")
        elif char == '"':
            if stack and stack[-1] == '"':
                stack.pop()
            else:
                stack.append('"')
        deepest = max(deepest, len(stack))
    return -1 if stack else deepest


def _quote_depth(args: Mapping[str, Any], text: str) -> bool:
    return quote_depth(text) >= int(args["n"])


#: verifier id -> (function, how a strict reader decides it).
VERIFIERS: dict[str, tuple[Judge, str]] = {
    "char_count": (_char_count, "occurrences of any of `chars` (e.g. '!！') are within the bound"),
    "numbers": (
        _numbers,
        "numbers written in digits (a digit run with inner . or ,) are within the bound",
    ),
    "emoji": (
        _emoji,
        "emoji pictures (ZWJ sequences and skin tones count once) are within the bound",
    ),
    "hashtags": (
        _hashtags,
        "'#' followed by a letter, not inside a word, counted within the bound",
    ),
    "chars": (
        _chars,
        "characters of the answer, spaces included, ends stripped, are within the bound",
    ),
    "nonspace_chars": (_nonspace_chars, "characters other than white space are within the bound"),
    "spans": (
        _spans,
        "non-empty single-line spans between a pair's delimiters are within the bound",
    ),
    "lowercase": (_lowercase, "there are letters and none of them is a capital"),
    "uppercase": (_uppercase, "there are letters and none of them is lower case"),
    "percentages": (_percentages, "numbers followed by '%' or 'percent' are within the bound"),
    "no_latin": (_no_latin, "Han characters and not one Latin letter"),
    "latin_only": (_latin_only, "Latin letters and not one Han character"),
    "han_chars": (_han_chars, "Han characters are within the bound"),
    "regex_count": (
        _regex_count,
        "matches of `regex` (a date, a time ... written in the asked form) within the bound",
    ),
    "emphasis_spans": (
        _emphasis_spans,
        "spans in single asterisks (*like this*, not **bold**) are within the bound",
    ),
    "response_language": (
        _response_language,
        "the answer is written in `language` (ISO 639-1), as lingua's detector reads it",
    ),
    "marks_all": (_marks_all, "every character of `chars` occurs at least once"),
    "punctuation_only": (
        _punctuation_only,
        "there are words and every punctuation mark is one of `chars`",
    ),
    "bracket_depth": (_bracket_depth, "brackets all pair up and are nested at least `n` deep"),
    "quote_depth": (
        _quote_depth,
        "quotation marks all pair up and some pair lies inside `n` - 1 others",
    ),
}
