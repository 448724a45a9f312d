"""Judges of the second held-out set (``bench/data/heldout2.jsonl``), written apart from the product.

Nothing here imports ``reasoning`` or ``inference``, and none of it was
written from the product's extraction or verifiers: each judge reads an answer
as a strict human reader of the instruction would, and says how in one line
(``JUDGES``). Where an instruction means the same as one of the first set's,
its judge is the first set's (``bench.heldout_judge``), and so are the shared
readings of a *word*, a *sentence* and a count's bound. Readings added here:

- a *paragraph* is a block of lines separated from the next by a blank line,
  holding a letter, digit or Han character;
- a *list item* is a line that starts, after its indentation, with a bullet
  (``-`` ``*`` ``+`` ``•`` ... then a space) or a number, Latin letter or
  Chinese numeral followed by ``.`` + space, ``)``, ``、`` or ``）``; a
  *bullet* is an item of the first kind only;
- a text *begins with* a phrase when, after leading list markers, quotes and
  markdown emphasis or heading marks, it starts with the phrase (case and runs
  of white space aside) and the phrase does not stop inside a word;
- a text *ends with* a phrase likewise, closing quotes and emphasis aside; a
  phrase that ends in a letter, digit or Han character may be followed by one
  full stop or exclamation mark (the sentence's own end);
- a keyword written in Latin letters is counted as a whole word, case folded;
  one holding Han characters is counted as a substring (Chinese has no spaces).

An answer with nothing but white space (a refused run, a ``needs_confirmation``
answer) fails every judge, the bounds "at most" and "less than" included: it
did not do the task. ``judge(judge_id, args, text)`` is the one entry point; an unknown id is a
``KeyError`` (a typo in the set must not read as a failed answer).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bench.heldout_judge import JUDGES as FIRST_SET_JUDGES
from bench.heldout_judge import Judge, bounded, sentences, words

__all__ = [
    "JUDGES",
    "answered",
    "begins",
    "judge",
    "keyword_count",
    "list_items",
    "normal",
    "paragraphs",
    "pick",
    "strip_closers",
    "unlead",
]

_HAS_CONTENT = re.compile(r"[^\W_]")
_BLANK_LINE = re.compile(r"\n[ \t\u3000]*\n")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z\uff21-\uff3a\uff41-\uff5a]")
_WORD_CHAR = re.compile(r"[^\W_]")
_BULLET = r"[-*+•·▪●◦‣]\s+"
_ORDINAL = r"(?:\d+|[A-Za-z]|[一二三四五六七八九十]+)(?:\.\s+|[)、）]\s*)|[（(]\d+[）)]\s*"
_ITEM = re.compile(rf"^[ \t]*(?:{_BULLET}|{_ORDINAL})(?P<body>\S.*)$")
_BULLET_ITEM = re.compile(rf"^[ \t]*{_BULLET}(?P<body>\S.*)$")
_LEAD = re.compile(rf"^(?:\s+|{_BULLET}|{_ORDINAL}|#+\s*|>\s*|[*_`\"'“‘「『])*")
_CLOSERS = "\"'”’»」』*_`"
_SENTENCE_STOPS = ".!。！"
_PUNCT = re.compile(r"[\W_]")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+\S")
_PERCENT = re.compile(r"\d+(?:[.,]\d+)?\s*(?:%|％|\bper\s?cent\b)", re.IGNORECASE)
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_FENCE = re.compile(r"^```[\w-]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)


def paragraphs(text: str) -> list[str]:
    """The answer's paragraphs, stripped, in order (see the module doc)."""
    return [
        block.strip() for block in _BLANK_LINE.split(text.strip()) if _HAS_CONTENT.search(block)
    ]


def list_items(text: str, *, bullets_only: bool = False) -> list[str]:
    """The text of each list item (its marker removed), in order (see the module doc)."""
    pattern = _BULLET_ITEM if bullets_only else _ITEM
    found = []
    for line in text.splitlines():
        match = pattern.match(line)
        if match is not None:
            found.append(match.group("body").strip())
    return found


def normal(text: str) -> str:
    """``text`` with runs of white space made one space, ends stripped, case folded."""
    return " ".join(text.split()).casefold()


def _stops_inside_word(before: str, after: str) -> bool:
    """Whether a phrase ending in ``before`` is cut from a Latin word continuing with ``after``."""
    if not before or not after:
        return False
    latin_or_digit = _WORD_CHAR.match(before) and not _HAN.match(before)
    return bool(latin_or_digit and _WORD_CHAR.match(after) and not _HAN.match(after))


def unlead(text: str) -> str:
    """``text`` without its leading white space, list markers, quotes and emphasis or heading marks."""
    return _LEAD.sub("", text)


def begins(text: str, phrase: str) -> bool:
    """Whether ``text`` begins with ``phrase`` (see the module doc)."""
    body = normal(unlead(text))
    want = normal(phrase)
    if not want or not body.startswith(want):
        return False
    return not _stops_inside_word(want[-1], body[len(want) : len(want) + 1])


def strip_closers(text: str) -> str:
    """``text`` without its trailing white space, closing quotes and emphasis marks."""
    return text.rstrip().rstrip(_CLOSERS).rstrip()


def _ends(text: str, phrase: str) -> bool:
    want = normal(phrase)
    if not want:
        return False
    body = normal(strip_closers(text))
    candidates = [body]
    if _WORD_CHAR.match(want[-1]) and body[-1:] in _SENTENCE_STOPS:
        candidates.append(normal(strip_closers(body[:-1])))
    for candidate in candidates:
        if candidate.endswith(want):
            before = candidate[-len(want) - 1 : -len(want)] if len(candidate) > len(want) else ""
            if not _stops_inside_word(want[0], before):
                return True
    return False


def keyword_count(keyword: str, text: str) -> int:
    """Occurrences of ``keyword`` in ``text``: whole words, case folded, or Han substrings."""
    if _HAN.search(keyword):
        return text.count(keyword)
    pattern = rf"(?<![^\W_]){re.escape(keyword)}(?![^\W_])"
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def pick(items: Sequence[str], k: Any) -> list[str]:
    """``items`` when ``k`` is ``"every"`` (none: empty), else the k-th (1-based, -1 the last) or none."""
    if k == "every":
        return list(items)
    index = int(k) - 1 if int(k) > 0 else len(items) + int(k)
    return [items[index]] if 0 <= index < len(items) else []


def _sentence_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(sentences(text)), args)


def _paragraph_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(paragraphs(text)), args)


def _sentences_per_paragraph(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    return bool(found) and all(bounded(len(sentences(p)), args) for p in found)


def _keyword_count_judge(args: Mapping[str, Any], text: str) -> bool:
    return bounded(keyword_count(str(args["keyword"]), text), args)


def _keywords_all(args: Mapping[str, Any], text: str) -> bool:
    return all(keyword_count(str(word), text) >= 1 for word in args["words"])


def _forbidden_words(args: Mapping[str, Any], text: str) -> bool:
    has_content = bool(_HAS_CONTENT.search(text))
    return has_content and all(keyword_count(str(word), text) == 0 for word in args["words"])


def _paragraphs_containing(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    return bool(found) and all(keyword_count(str(args["keyword"]), p) >= 1 for p in found)


def _lowercase(args: Mapping[str, Any], text: str) -> bool:
    return any(c.islower() for c in text) and not any(c.isupper() for c in text)


def _uppercase(args: Mapping[str, Any], text: str) -> bool:
    return any(c.isupper() for c in text) and not any(c.islower() for c in text)


def _caps_words(args: Mapping[str, Any], text: str) -> bool:
    shouted = [
        w for w in words(text) if sum(c.isalpha() for c in w) >= 2 and w.isupper()
    ]
    return bounded(len(shouted), args)


def _json(args: Mapping[str, Any], text: str) -> bool:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    try:
        value = json.loads(body)
    except ValueError:
        return False
    kind = args.get("type", "any")
    if kind == "object" and not isinstance(value, dict):
        return False
    if kind == "array" and not isinstance(value, list):
        return False
    keys = args.get("keys", [])
    return not keys or (isinstance(value, dict) and all(key in value for key in keys))


def _ends_with_text(args: Mapping[str, Any], text: str) -> bool:
    return _ends(text, str(args["text"]))


def _opens_with(args: Mapping[str, Any], text: str) -> bool:
    return begins(text, str(args["text"]))


def _title_line(args: Mapping[str, Any], text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    first = lines[0].strip().strip("#*_ \t")
    return any(
        first.startswith(left)
        and first.endswith(right)
        and bool(_HAS_CONTENT.search(first[len(left) : len(first) - len(right)]))
        for left, right in args["pairs"]
    )


def _marker_lines(args: Mapping[str, Any], text: str) -> bool:
    marker = re.compile(str(args["regex"]))
    count = 0
    for line in text.splitlines():
        stripped = line.strip()
        if marker.match(stripped) or marker.match(stripped.lstrip("*_")):
            count += 1
    return bounded(count, args)


def _heading_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(_HEADING.match(line)) for line in text.splitlines()), args)


def _paragraph_start(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(paragraphs(text), args["k"])
    return bool(chosen) and all(begins(p, str(args["text"])) for p in chosen)


def _paragraph_end(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(paragraphs(text), args["k"])
    return bool(chosen) and all(_ends(p, str(args["text"])) for p in chosen)


def _sentence_start(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    return bool(chosen) and all(begins(s, str(args["text"])) for s in chosen)


def _sentence_end_word(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    want = str(args["word"]).casefold()
    return bool(chosen) and all(words(s)[-1:] and words(s)[-1].casefold() == want for s in chosen)


def _spread(counts: Sequence[int]) -> int:
    return max(counts) - min(counts)


def _sentence_balance(args: Mapping[str, Any], text: str) -> bool:
    counts = [len(words(s)) for s in sentences(text)]
    return len(counts) >= 2 and _spread(counts) <= int(args["max_diff"])


def _paragraph_balance(args: Mapping[str, Any], text: str) -> bool:
    counts = [len(words(p)) for p in paragraphs(text)]
    if "n" in args and len(counts) != int(args["n"]):
        return False
    return len(counts) >= 2 and _spread(counts) <= int(args["max_diff"])


def _line_max_chars(args: Mapping[str, Any], text: str) -> bool:
    found = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(found) and all(len(line) <= int(args["n"]) for line in found)


def _line_end(args: Mapping[str, Any], text: str) -> bool:
    found = [line for line in text.splitlines() if line.strip()]
    return bool(found) and all(strip_closers(line)[-1:] in str(args["chars"]) for line in found)


def _bullet_items(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(list_items(text, bullets_only=True)), args)


def _item_max_words(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(len(words(item)) <= int(args["n"]) for item in found)


def _item_max_chars(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(
        len(_PUNCT.sub("", "".join(item.split()))) <= int(args["n"]) for item in found
    )


def _item_start(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    want = normal(str(args["text"]))
    return bool(found) and all(normal(item).startswith(want) for item in found)


def _percentages(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_PERCENT.findall(text)), args)


def _postscript(args: Mapping[str, Any], text: str) -> bool:
    marker = str(args["marker"])
    lines = [line.strip().lstrip("*_").strip() for line in text.splitlines() if line.strip()]
    return any(
        line.startswith(marker) and bool(_HAS_CONTENT.search(line[len(marker) :]))
        for line in lines[1:]
    )


def _no_latin(args: Mapping[str, Any], text: str) -> bool:
    return bool(_HAN.search(text)) and not _LATIN.search(text)


def _latin_only(args: Mapping[str, Any], text: str) -> bool:
    return bool(_LATIN.search(text)) and not _HAN.search(text)


def _han_chars(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(_HAN.findall(text)), args)


def _first_word_in(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and found[0].casefold() in {str(o).casefold() for o in args["options"]}


def _sentences_with_digit(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(any(c.isdigit() for c in s) for s in found)


def _sentence_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    ending = sum(strip_closers(s)[-1:] in str(args["chars"]) for s in found)
    return bool(found) and ending / len(found) >= float(args["min_ratio"])


def _suffix_count(args: Mapping[str, Any], text: str) -> bool:
    suffix = str(args["suffix"]).casefold()
    found = [w for w in words(text) if len(w) > len(suffix) and w.casefold().endswith(suffix)]
    return bounded(len(found), args)


def _max_word_repeat(args: Mapping[str, Any], text: str) -> bool:
    counts = Counter(w.casefold() for w in words(text))
    return bool(counts) and max(counts.values()) <= int(args["n"])


def _table_columns(args: Mapping[str, Any], text: str) -> bool:
    def cells(row: str) -> int:
        return len(row.strip().strip("|").split("|"))

    rows = [line.strip() for line in text.splitlines()]
    for index, row in enumerate(rows):
        if index and _TABLE_RULE.match(row) and rows[index - 1].count("|") >= 2:
            data = []
            for after in rows[index + 1 :]:
                if after.count("|") < 2:
                    break
                data.append(after)
            n = int(args["n"])
            return bool(data) and cells(rows[index - 1]) == n and all(cells(r) == n for r in data)
    return False


def answered(function: Judge) -> Judge:
    """``function``, failing an answer that is only white space."""

    def checked(args: Mapping[str, Any], text: str) -> bool:
        return bool(text.strip()) and function(args, text)

    return checked


#: judge id -> (function, how a strict reader decides it), before the empty-answer rule.
_READINGS: dict[str, tuple[Judge, str]] = {
    **{
        judge_id: FIRST_SET_JUDGES[judge_id]
        for judge_id in (
            "word_count",
            "char_count",
            "numbers",
            "word_at",
            "chars",
            "lines",
            "nested_list",
            "spans",
        )
    },
    "sentence_count": (_sentence_count, "the number of sentences is within the bound"),
    "paragraph_count": (_paragraph_count, "the number of paragraphs is within the bound"),
    "sentences_per_paragraph": (
        _sentences_per_paragraph,
        "every paragraph's number of sentences is within the bound",
    ),
    "keyword_count": (_keyword_count_judge, "occurrences of `keyword` are within the bound"),
    "keywords_all": (_keywords_all, "every one of `words` occurs at least once"),
    "forbidden_words": (
        _forbidden_words,
        "none of `words` occurs (an empty answer fails)",
    ),
    "paragraphs_containing": (
        _paragraphs_containing,
        "every paragraph holds `keyword` at least once",
    ),
    "lowercase": (_lowercase, "there are letters and none of them is a capital"),
    "uppercase": (_uppercase, "there are letters and none of them is lower case"),
    "caps_words": (
        _caps_words,
        "words of two or more letters written wholly in capitals are within the bound",
    ),
    "json": (
        _json,
        "the whole answer (one code fence allowed) is JSON of `type`, an object holding `keys`",
    ),
    "ends_with_text": (_ends_with_text, "the answer ends with `text`"),
    "opens_with": (_opens_with, "the answer begins with `text`"),
    "title_line": (
        _title_line,
        "the first non-empty line is a title wrapped in one of `pairs`",
    ),
    "marker_lines": (
        _marker_lines,
        "lines starting (emphasis aside) with the marker `regex` are within the bound",
    ),
    "heading_count": (_heading_count, "markdown heading lines ('#' to '######') within the bound"),
    "paragraph_start": (_paragraph_start, "the k-th (or every) paragraph begins with `text`"),
    "paragraph_end": (_paragraph_end, "the k-th (or every) paragraph ends with `text`"),
    "sentence_start": (_sentence_start, "the k-th (or every) sentence begins with `text`"),
    "sentence_end_word": (
        _sentence_end_word,
        "the k-th (or every) sentence's last word is `word`, case folded",
    ),
    "sentence_balance": (
        _sentence_balance,
        "two or more sentences, word counts of the longest and shortest within `max_diff`",
    ),
    "paragraph_balance": (
        _paragraph_balance,
        "two or more (or `n`) paragraphs, word counts of the longest and shortest within `max_diff`",
    ),
    "line_max_chars": (
        _line_max_chars,
        "every non-empty line has at most `n` characters (ends stripped)",
    ),
    "line_end": (_line_end, "every non-empty line ends (closing quotes aside) with one of `chars`"),
    "bullet_items": (_bullet_items, "bulleted (not numbered) list items are within the bound"),
    "item_max_words": (
        _item_max_words,
        "there are list items and each has at most `n` words",
    ),
    "item_max_chars": (
        _item_max_chars,
        "there are list items and each has at most `n` characters besides spaces and punctuation",
    ),
    "item_start": (_item_start, "there are list items and each begins with `text`"),
    "percentages": (
        _percentages,
        "numbers followed by '%' or 'percent' are within the bound",
    ),
    "postscript": (
        _postscript,
        "a line after the first begins (emphasis aside) with `marker` and has text after it",
    ),
    "no_latin": (_no_latin, "Han characters and not one Latin letter"),
    "latin_only": (_latin_only, "Latin letters and not one Han character"),
    "han_chars": (_han_chars, "Han characters are within the bound"),
    "first_word_in": (_first_word_in, "the first word is one of `options`, case folded"),
    "sentences_with_digit": (
        _sentences_with_digit,
        "there are sentences and each holds a digit",
    ),
    "sentence_ratio": (
        _sentence_ratio,
        "the share of sentences ending with one of `chars` is at least `min_ratio`",
    ),
    "suffix_count": (
        _suffix_count,
        "words ending with `suffix` (longer than it, case folded) are within the bound",
    ),
    "max_word_repeat": (
        _max_word_repeat,
        "no word (case folded) occurs more than `n` times (an empty answer fails)",
    ),
    "table_columns": (
        _table_columns,
        "a markdown table whose header and every data row have exactly `n` cells",
    ),
}


#: judge id -> (function, how a strict reader decides it); an empty answer fails each.
JUDGES: dict[str, tuple[Judge, str]] = {
    judge_id: (answered(function), reading) for judge_id, (function, reading) in _READINGS.items()
}


def judge(judge_id: str, args: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` meets the instruction ``judge_id`` with ``args``."""
    function, _ = JUDGES[judge_id]
    return function(args, text)
