"""Judges of the held-out set (``bench/data/heldout.jsonl``), written apart from the product.

Nothing here imports ``reasoning`` or ``inference``: the product's own
verifiers would grade themselves. Each judge reads an answer as a strict
reader of the instruction would, and says so in one line (``JUDGES``).

Shared readings (each is the strict one):

- a *word* is a run of letters or digits, with inner apostrophes or hyphens
  (``don't``, ``well-known`` are one word);
- a *sentence* is a piece of a line that ends at ``.`` ``!`` ``?`` ``。``
  ``！`` ``？`` (or at the line's end) and holds a letter, digit or Han
  character; list items and headings are sentences too;
- a *list item* is a line that starts, after its indentation, with ``-``
  ``*`` ``+`` ``•`` or a number / letter / Chinese numeral followed by
  ``.`` ``)`` or ``、``;
- a count's bound is ``{"relation", "n"}`` (``exactly``, ``at least``,
  ``at most``, ``less than``, ``more than``) or ``{"lo", "hi"}`` (both
  inclusive).

``judge(judge_id, args, text)`` is the one entry point; an unknown id is a
``KeyError`` (a typo in the set must not read as a failed answer).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["JUDGES", "Judge", "bounded", "emoji_count", "judge", "sentences", "words"]

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_LETTERS = re.compile(r"[^\W\d_]")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_HAS_CONTENT = re.compile(r"[^\W_]")
_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?:[-*+•·▪●◦]|\d+[.)、]|[A-Za-z][.)]|[一二三四五六七八九十]+、)\s+\S"
)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+\S")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_HASHTAG = re.compile(r"(?<![\w#])#[^\W\d_]\w*")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")
_CLOSERS = "\"'”’»)]}*_`"
_PUNCT = re.compile(r"[\W_]")
_EMOJI_RANGES = (
    (0x1F000, 0x1F02F),
    (0x1F0A0, 0x1F0FF),
    (0x1F170, 0x1F251),
    (0x1F300, 0x1F5FF),
    (0x1F600, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F7E0, 0x1F7FF),
    (0x1F900, 0x1F9FF),
    (0x1FA70, 0x1FAFF),
    (0x2600, 0x27BF),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3297),
    (0x3299, 0x3299),
    (0x2934, 0x2935),
    (0x2194, 0x21AA),
)
_SKIN_TONES = (0x1F3FB, 0x1F3FF)
_ZWJ = "\u200d"


def words(text: str) -> list[str]:
    """The answer's words, in order (see the module doc)."""
    return _WORD.findall(text)


def sentences(text: str) -> list[str]:
    """The answer's sentences, stripped, in order (see the module doc)."""
    found: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            if _HAS_CONTENT.search(piece):
                found.append(piece)
    return found


def _is_emoji(char: str) -> bool:
    point = ord(char)
    if _SKIN_TONES[0] <= point <= _SKIN_TONES[1]:
        return False
    return any(lo <= point <= hi for lo, hi in _EMOJI_RANGES)


def emoji_count(text: str) -> int:
    """Emoji pictures: a ZWJ sequence or an emoji with its skin tone is one picture."""
    count = 0
    previous = ""
    for char in text:
        if _is_emoji(char) and previous != _ZWJ:
            count += 1
        if char not in "\ufe0f":
            previous = char
    return count


def bounded(value: int, args: Mapping[str, Any]) -> bool:
    """``value`` within the bound of ``args`` (``relation`` + ``n``, or ``lo`` + ``hi``)."""
    if "lo" in args:
        return int(args["lo"]) <= value <= int(args["hi"])
    n = int(args["n"])
    relation = args["relation"]
    if relation == "exactly":
        return value == n
    if relation == "at least":
        return value >= n
    if relation == "at most":
        return value <= n
    if relation == "less than":
        return value < n
    if relation == "more than":
        return value > n
    raise ValueError(f"unknown relation {relation!r}")


def _strip_closers(text: str) -> str:
    return text.rstrip().rstrip(_CLOSERS).rstrip()


def _word_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(words(text)), args)


def _unique_words(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len({w.casefold() for w in words(text)}), args)


def _char_count(args: Mapping[str, Any], text: str) -> bool:
    chars = str(args["chars"])
    return bounded(sum(text.count(c) for c in chars), args)


def _numbers(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_NUMBER.findall(text)), args)


def _emoji(args: Mapping[str, Any], text: str) -> bool:
    return bounded(emoji_count(text), args)


def _hashtags(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_HASHTAG.findall(text)), args)


def _word_at(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    k = int(args["k"])
    index = k - 1 if k > 0 else len(found) + k
    return 0 <= index < len(found) and found[index].casefold() == str(args["word"]).casefold()


def _initial_count(args: Mapping[str, Any], text: str) -> bool:
    letter = str(args["letter"]).casefold()
    return bounded(sum(w.casefold().startswith(letter) for w in words(text)), args)


def _no_adjacent_same_initial(args: Mapping[str, Any], text: str) -> bool:
    found = [w.casefold() for w in words(text)]
    return bool(found) and all(a[0] != b[0] for a, b in itertools.pairwise(found))


def _letter_absent(args: Mapping[str, Any], text: str) -> bool:
    return str(args["letter"]).casefold() not in text.casefold() and bool(words(text))


def _max_word_length(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and all(len(_LETTERS.findall(w)) <= int(args["n"]) for w in found)


def _sentence_max_words(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(len(words(s)) <= int(args["n"]) for s in found)


def _sentence_max_chars(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(len(_PUNCT.sub("", s)) <= int(args["n"]) for s in found)


def _sentence_end(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(_strip_closers(s)[-1:] in str(args["chars"]) for s in found)


def _chars(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(text.strip()), args)


def _nonspace_chars(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(not c.isspace() for c in text), args)


def _lines(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(line.strip()) for line in text.splitlines()), args)


def _no_list(args: Mapping[str, Any], text: str) -> bool:
    return bool(words(text)) and not any(_ITEM.match(line) for line in text.splitlines())


def _numbered_items(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(_NUMBERED.match(line)) for line in text.splitlines()), args)


def _indent(spaces: str) -> int:
    return len(spaces.replace("\t", "    "))


def _nested_list(args: Mapping[str, Any], text: str) -> bool:
    groups: list[int] = []
    for line in text.splitlines():
        item = _ITEM.match(line)
        if item is None:
            continue
        if _indent(item.group("indent")) < 2:
            groups.append(0)
        elif groups:
            groups[-1] += 1
    if len(groups) != int(args["top"]):
        return False
    lo = int(args.get("sub_min", 1))
    hi = int(args.get("sub_max", 10**6))
    return all(lo <= subs <= hi for subs in groups)


def _table_rows(args: Mapping[str, Any], text: str) -> bool:
    rows = [line.strip() for line in text.splitlines()]
    for index, row in enumerate(rows):
        if index and _TABLE_RULE.match(row) and rows[index - 1].count("|") >= 2:
            data = 0
            for after in rows[index + 1 :]:
                if not after.startswith("|") or after.count("|") < 2:
                    break
                data += 1
            return bounded(data, args)
    return False


def _pairs(args: Mapping[str, Any]) -> Sequence[Sequence[str]]:
    pairs: Sequence[Sequence[str]] = args["pairs"]
    return pairs


def _wrapped(args: Mapping[str, Any], text: str) -> bool:
    body = text.strip()
    return any(
        len(body) > len(left) + len(right) and body.startswith(left) and body.endswith(right)
        for left, right in _pairs(args)
    )


def _spans(args: Mapping[str, Any], text: str) -> bool:
    count = 0
    for left, right in _pairs(args):
        inner = f"[^{re.escape(left)}{re.escape(right)}\\n]*[^\\W_][^{re.escape(left)}{re.escape(right)}\\n]*"
        count += len(re.findall(re.escape(left) + inner + re.escape(right), text))
    return bounded(count, args)


def _starts_with(args: Mapping[str, Any], text: str) -> bool:
    def normal(value: str) -> str:
        return " ".join(value.split()).casefold()

    return normal(text).startswith(normal(str(args["text"])))


def _ends_with_char(args: Mapping[str, Any], text: str) -> bool:
    return _strip_closers(text)[-1:] in str(args["chars"]) and bool(text.strip())


Judge = Callable[[Mapping[str, Any], str], bool]

#: judge id -> (function, how a strict reader decides it).
JUDGES: dict[str, tuple[Judge, str]] = {
    "word_count": (_word_count, "the number of words is within the bound"),
    "unique_words": (_unique_words, "distinct words (case folded) are within the bound"),
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
    "word_at": (_word_at, "the k-th word (1-based, -1 the last) is `word`, case folded"),
    "initial_count": (
        _initial_count,
        "words starting with `letter` (case folded) are within the bound",
    ),
    "no_adjacent_same_initial": (
        _no_adjacent_same_initial,
        "no two words in a row start with the same letter",
    ),
    "letter_absent": (
        _letter_absent,
        "the letter appears nowhere, in either case (an empty answer fails)",
    ),
    "max_word_length": (_max_word_length, "no word has more than `n` letters"),
    "sentence_max_words": (_sentence_max_words, "every sentence has at most `n` words"),
    "sentence_max_chars": (
        _sentence_max_chars,
        "every sentence has at most `n` characters besides spaces and punctuation",
    ),
    "sentence_end": (
        _sentence_end,
        "every sentence ends (closing quotes aside) with one of `chars`",
    ),
    "chars": (
        _chars,
        "characters of the answer, spaces included, ends stripped, are within the bound",
    ),
    "nonspace_chars": (_nonspace_chars, "characters other than white space are within the bound"),
    "lines": (_lines, "non-empty lines are within the bound"),
    "no_list": (
        _no_list,
        "no line is a bulleted, numbered or lettered list item (an empty answer fails)",
    ),
    "numbered_items": (
        _numbered_items,
        "lines starting with '1.' or '1)' style numbers are within the bound",
    ),
    "nested_list": (
        _nested_list,
        "exactly `top` top-level items, each followed by sub_min..sub_max indented items",
    ),
    "table_rows": (
        _table_rows,
        "a markdown table (header, rule row) whose data rows are within the bound",
    ),
    "wrapped": (
        _wrapped,
        "the whole answer starts with a pair's left and ends with its right, something inside",
    ),
    "spans": (
        _spans,
        "non-empty single-line spans between a pair's delimiters are within the bound",
    ),
    "starts_with": (
        _starts_with,
        "the answer begins with `text` (case and runs of white space aside)",
    ),
    "ends_with_char": (
        _ends_with_char,
        "the answer's last character (closing quotes aside) is one of `chars`",
    ),
}


def judge(judge_id: str, args: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` meets the instruction ``judge_id`` with ``args``."""
    function, _ = JUDGES[judge_id]
    return function(args, text)
