"""Judges of the third held-out set (``bench/data/heldout3.jsonl``), written apart from the product.

Nothing here imports ``reasoning`` or ``inference``, and none of it was
written from the product's extraction, verifiers or controllers: each judge
reads an answer as a strict human reader of the instruction would, and says
how in one line (``JUDGES``). Where an instruction means the same as one of
the earlier sets', its judge is theirs (``bench.heldout_judge``,
``bench.heldout2_judge``), and so are their readings of a *word*, a
*sentence*, a *paragraph*, a *list item* (a *bullet* being an unnumbered
one), a phrase a text *begins with* and a count's bound. Readings added here:

- a *keyword* holding Han characters occurs as a substring; one in Latin
  letters occurs, case folded, where no letter or digit other than a Han
  character adjoins it (``UBO`` occurs in ``识别UBO，``, not in ``UBOs``);
- a *line* is a non-empty line of the answer; its *body* is the line without
  its leading list marker, quotes and emphasis or heading marks;
- a word's *letters* are its letters (digits, apostrophes and hyphens aside);
  *different* words are told apart case folded;
- a sentence *begins with* a word when its first word is that word, or that
  word followed by an apostrophe and a clitic (``I'm`` begins with ``I``);
- a text *wrapped* in a pair starts with the pair's left and ends with its
  right with something inside, and where left and right differ (“ ”, ( ))
  the left one is closed by the last character, not before (``“a”是b“c”``
  is not wrapped); a list item or the last line so wrapped may carry
  emphasis marks around it and one closing mark (``.`` ``,`` ``;`` ``!``
  ``。``) after the right delimiter;
- emphasis with *single asterisks* is ``*text*`` whose asterisks touch
  neither another asterisk nor, inwards, white space (``**bold**`` is not);
- parts *separated by* a separator line are the pieces between lines that
  hold only the separator: every piece must hold text;
- the answer's *language* is the one lingua's detector, over a fixed set of
  widely written languages, finds most likely.

An answer with nothing but white space (a refused run, a ``needs_confirmation``
answer) fails every judge, the bounds "at most" and "less than" included: it
did not do the task. ``judge(judge_id, args, text)`` is the one entry point; an
unknown id is a ``KeyError`` (a typo in the set must not read as a failed answer).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

from bench.heldout2_judge import JUDGES as SECOND_SET_JUDGES
from bench.heldout2_judge import (
    answered,
    begins,
    list_items,
    normal,
    paragraphs,
    pick,
    strip_closers,
    unlead,
)
from bench.heldout_judge import JUDGES as FIRST_SET_JUDGES
from bench.heldout_judge import Judge, bounded, sentences, words

__all__ = ["JUDGES", "judge", "lines"]

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAS_CONTENT = re.compile(r"[^\W_]")
_LETTER = re.compile(r"[^\W\d_]")
_DOUBLE_LETTER = re.compile(r"([^\W\d_])\1")
_NUMBERED = re.compile(r"^\s*(?P<n>\d+)[.)](?:\s+|$)")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(?P<text>\S.*)$")
_QA_TAG = re.compile(r"^(?P<tag>[QA])\s*[:：]", re.IGNORECASE)
_SINGLE_STAR = re.compile(r"(?<![*\w])\*(?![*\s])(?P<body>[^*\n]*?)(?<![\s*])\*(?![*\w])")
_CLITIC = re.compile(r"['’].*$")
_CLOSING_MARK = ".,;!。，；！"
_SENTENCE_MARKS = ".!。！"
_EMPHASIS = "*_`"
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


def lines(text: str) -> list[str]:
    """The answer's non-empty lines, stripped, in order."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _body(line: str) -> str:
    return unlead(line).strip()


def _pairs(args: Mapping[str, Any]) -> Sequence[Sequence[str]]:
    pairs: Sequence[Sequence[str]] = args["pairs"]
    return pairs


def _wrapped_in(text: str, pairs: Sequence[Sequence[str]], *, piece: bool) -> bool:
    """Whether ``text`` is wrapped in one of ``pairs`` (see the module doc).

    A ``piece`` (a list item, a line) may also carry emphasis marks around the
    wrapped text and one closing mark after it.
    """
    body = text.strip()
    candidates = [body]
    if piece:
        candidates.append(body.strip(_EMPHASIS))
        if body[-1:] in _CLOSING_MARK:
            candidates.append(body[:-1].rstrip().strip(_EMPHASIS))
    for candidate in candidates:
        for left, right in pairs:
            inner = candidate[len(left) : len(candidate) - len(right)]
            if (
                len(candidate) > len(left) + len(right)
                and candidate.startswith(left)
                and candidate.endswith(right)
                and _HAS_CONTENT.search(inner)
                and (left == right or _closes_at_end(candidate, left, right))
            ):
                return True
    return False


def _closes_at_end(text: str, left: str, right: str) -> bool:
    """Whether the delimiter opening ``text`` is closed by its last character, not before."""
    depth = 0
    index = 0
    while index < len(text):
        if text.startswith(left, index):
            depth += 1
            index += len(left)
        elif text.startswith(right, index):
            depth -= 1
            index += len(right)
            if depth == 0:
                return index == len(text)
        else:
            index += 1
    return False


def _first_word(text: str) -> str:
    found = words(unlead(text))
    return found[0].casefold() if found else ""


def _mentions(keyword: str, text: str) -> list[re.Match[str]]:
    """The occurrences of ``keyword`` in ``text``, case folded (see the module doc)."""
    found = re.finditer(re.escape(keyword), text, flags=re.IGNORECASE)
    if _HAN.search(keyword):
        return list(found)
    return [
        m
        for m in found
        if not _joins(text[m.start() - 1 : m.start()]) and not _joins(text[m.end() : m.end() + 1])
    ]


def _joins(char: str) -> bool:
    """Whether ``char`` beside a Latin keyword makes it part of a longer word."""
    return bool(char) and bool(_HAS_CONTENT.match(char)) and not _HAN.match(char)


def _count(keyword: str, text: str) -> int:
    return len(_mentions(keyword, text))


def _table(text: str) -> tuple[list[str], list[list[str]]] | None:
    """The first markdown table: its header cells and data rows' cells, or ``None``."""

    def cells(row: str) -> list[str]:
        return [cell.strip().strip(_EMPHASIS).strip() for cell in row.strip().strip("|").split("|")]

    rows = [line.strip() for line in text.splitlines()]
    for index, row in enumerate(rows):
        if index and _TABLE_RULE.match(row) and rows[index - 1].count("|") >= 1:
            data = []
            for after in rows[index + 1 :]:
                if after.count("|") < 1:
                    break
                data.append(cells(after))
            return cells(rows[index - 1]), data
    return None


def _acrostic(args: Mapping[str, Any], text: str) -> bool:
    word = str(args["word"]).casefold()
    found = lines(text)
    if len(found) != len(word):
        return False
    for line, letter in zip(found, word, strict=True):
        first = _LETTER.search(_body(line))
        if first is None or first.group().casefold() != letter:
            return False
    return True


def _items_sorted(args: Mapping[str, Any], text: str) -> bool:
    keys = [normal(_body(item)) for item in list_items(text)]
    return len(keys) >= 2 and keys == sorted(keys)


def _numbered_sequence(args: Mapping[str, Any], text: str) -> bool:
    found = [int(m.group("n")) for line in text.splitlines() if (m := _NUMBERED.match(line))]
    return found == [int(n) for n in args["numbers"]]


def _same_first_last_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    if len(found) < 2:
        return False
    first, last = ([w.casefold() for w in words(s)] for s in (found[0], found[-1]))
    return bool(first) and first == last


def _table_header(args: Mapping[str, Any], text: str) -> bool:
    table = _table(text)
    return table is not None and [normal(c) for c in table[0]] == [
        normal(str(c)) for c in args["cells"]
    ]


def _first_line_upper(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    if not found:
        return False
    first = found[0]
    return any(c.isupper() for c in first) and not any(c.islower() for c in first)


def _regex_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(1 for _ in re.finditer(str(args["regex"]), text)), args)


def _keyword_only_in_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    keyword = str(args["keyword"])
    k = int(args["k"])
    index = k - 1 if k > 0 else len(found) + k
    return (
        0 <= index < len(found)
        and _count(keyword, found[index]) >= 1
        and all(_count(keyword, s) == 0 for i, s in enumerate(found) if i != index)
    )


def _keyword_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(_count(str(args["keyword"]), text), args)


def _keywords_all(args: Mapping[str, Any], text: str) -> bool:
    return all(_count(str(word), text) >= 1 for word in args["words"])


def _forbidden_words(args: Mapping[str, Any], text: str) -> bool:
    return bool(_HAS_CONTENT.search(text)) and all(
        _count(str(word), text) == 0 for word in args["words"]
    )


def _avg_sentence_words(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and sum(len(words(s)) for s in found) / len(found) <= float(args["n"])


def _qa_pairs(args: Mapping[str, Any], text: str) -> bool:
    tags = [m.group("tag").upper() for line in lines(text) if (m := _QA_TAG.match(_body(line)))]
    return tags == ["Q", "A"] * int(args["n"])


def _wrapped(args: Mapping[str, Any], text: str) -> bool:
    return _wrapped_in(text, _pairs(args), piece=False)


def _item_wrapped(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(
        _wrapped_in(item, _pairs(args), piece=True) for item in found
    )


def _items_with_digit(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(any(c.isdigit() for c in item) for item in found)


def _paragraph_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    first, second = int(args["first"]), int(args["second"])
    if len(found) < max(first, second):
        return False
    shorter = len(words(found[first - 1]))
    return shorter > 0 and len(words(found[second - 1])) >= float(args["min_ratio"]) * shorter


def _distinct_words(text: str) -> set[str]:
    return {w.casefold() for w in words(text)}


def _double_letter_words(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(_DOUBLE_LETTER.search(w)) for w in _distinct_words(text)), args)


def _long_words(args: Mapping[str, Any], text: str) -> bool:
    least = int(args["min_letters"])
    found = [w for w in _distinct_words(text) if len(_LETTER.findall(w)) >= least]
    return bounded(len(found), args)


def _sentence_words(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    return bool(chosen) and all(bounded(len(words(s)), args) for s in chosen)


def _keyword_more_than(args: Mapping[str, Any], text: str) -> bool:
    more = _count(str(args["more"]), text)
    less = _count(str(args["less"]), text)
    return less >= 1 and more > less


def _exact_casing(args: Mapping[str, Any], text: str) -> bool:
    word = str(args["word"])
    found = _mentions(word, text)
    return bool(found) and all(m.group() == word for m in found)


def _heading_upper(args: Mapping[str, Any], text: str) -> bool:
    found = [m.group("text") for line in text.splitlines() if (m := _HEADING.match(line))]
    return bool(found) and all(
        any(c.isupper() for c in h) and not any(c.islower() for c in h) for h in found
    )


def _sentence_start_not(args: Mapping[str, Any], text: str) -> bool:
    banned = {str(w).casefold() for w in args["words"]}
    found = sentences(text)
    return bool(found) and all(_CLITIC.sub("", _first_word(s)) not in banned for s in found)


def _item_word_count(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(bounded(len(words(item)), args) for item in found)


def _sentences_containing(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(_count(str(args["keyword"]), s) >= 1 for s in found)


def _sentence_k_end(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    return bool(chosen) and all(strip_closers(s)[-1:] in str(args["chars"]) for s in chosen)


def _last_line_wrapped(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    return bool(found) and _wrapped_in(found[-1], _pairs(args), piece=True)


def _lines_decreasing(args: Mapping[str, Any], text: str) -> bool:
    lengths = [len(line) for line in lines(text)]
    return len(lengths) >= 2 and all(a > b for a, b in itertools.pairwise(lengths))


def _item_start_any(args: Mapping[str, Any], text: str) -> bool:
    options = [normal(str(o)) for o in args["options"]]
    found = [normal(item.lstrip(_EMPHASIS)) for item in list_items(text)]
    return bool(found) and all(any(item.startswith(o) for o in options) for item in found)


def _items_distinct_start(args: Mapping[str, Any], text: str) -> bool:
    starts = [_first_word(item) for item in list_items(text)]
    return len(starts) >= 2 and all(starts) and len(set(starts)) == len(starts)


def _lines_match(args: Mapping[str, Any], text: str) -> bool:
    pattern = re.compile(str(args["regex"]))
    found = lines(text)
    return bool(found) and all(pattern.fullmatch(_body(line)) for line in found)


def _lines_start_seq(args: Mapping[str, Any], text: str) -> bool:
    texts = [str(t) for t in args["texts"]]
    found = lines(text)
    return len(found) == len(texts) and all(
        begins(line, want) for line, want in zip(found, texts, strict=True)
    )


def _is_line(line: str, want: str) -> bool:
    body = normal(strip_closers(_body(line)))
    if body == want:
        return True
    return want[-1:] not in _SENTENCE_MARKS and body[-1:] in _SENTENCE_MARKS and (
        normal(strip_closers(body[:-1])) == want
    )


def _line_repeat(args: Mapping[str, Any], text: str) -> bool:
    want = normal(str(args["text"]))
    return bounded(sum(_is_line(line, want) for line in lines(text)), args)


def _keywords_in_order(args: Mapping[str, Any], text: str) -> bool:
    where = [_mentions(str(w), text) for w in args["words"]]
    return all(where) and all(a[0].start() < b[0].start() for a, b in itertools.pairwise(where))


def _emphasis_spans(args: Mapping[str, Any], text: str) -> bool:
    found = [m for m in _SINGLE_STAR.finditer(text) if _HAS_CONTENT.search(m.group("body"))]
    return bounded(len(found), args)


def _separated_parts(args: Mapping[str, Any], text: str) -> bool:
    separator = str(args["separator"])
    parts: list[list[str]] = [[]]
    for line in text.strip().splitlines():
        if line.strip() == separator:
            parts.append([])
        else:
            parts[-1].append(line)
    bodies = ["\n".join(part).strip() for part in parts]
    if len(bodies) != int(args["n"]) or not all(_HAS_CONTENT.search(b) for b in bodies):
        return False
    return not args.get("distinct") or len({normal(b) for b in bodies}) == len(bodies)


@functools.cache
def _detector() -> LanguageDetector:
    return LanguageDetectorBuilder.from_languages(*_LANGUAGES.values()).build()


def _response_language(args: Mapping[str, Any], text: str) -> bool:
    return _detector().detect_language_of(text) == _LANGUAGES[str(args["language"])]


def _answer_is_one_of(args: Mapping[str, Any], text: str) -> bool:
    body = strip_closers(unlead(text.strip()))
    if body[-1:] in _SENTENCE_MARKS:
        body = strip_closers(body[:-1])
    return normal(body) in {normal(str(o)) for o in args["options"]}


#: judge id -> (function, how a strict reader decides it), before the empty-answer rule.
_READINGS: dict[str, tuple[Judge, str]] = {
    **{
        judge_id: FIRST_SET_JUDGES[judge_id]
        for judge_id in ("word_count", "char_count", "lines", "spans", "sentence_max_words")
    },
    **{
        judge_id: SECOND_SET_JUDGES[judge_id]
        for judge_id in (
            "sentence_count",
            "paragraph_count",
            "lowercase",
            "uppercase",
            "caps_words",
            "json",
            "ends_with_text",
            "opens_with",
            "title_line",
            "marker_lines",
            "paragraph_start",
            "sentence_start",
            "bullet_items",
            "postscript",
            "latin_only",
            "han_chars",
        )
    },
    "wrapped": (
        _wrapped,
        "the whole answer is wrapped in one of `pairs` (see the module doc)",
    ),
    "keyword_count": (_keyword_count, "occurrences of `keyword` are within the bound"),
    "keywords_all": (_keywords_all, "every one of `words` occurs at least once"),
    "forbidden_words": (_forbidden_words, "none of `words` occurs (an empty answer fails)"),
    "acrostic": (
        _acrostic,
        "exactly one line per letter of `word`, each line's first letter spelling it, case folded",
    ),
    "items_sorted": (
        _items_sorted,
        "two or more list items, in alphabetical order of their text (case folded)",
    ),
    "numbered_sequence": (
        _numbered_sequence,
        "the numbers of the numbered items, in order, are exactly `numbers`",
    ),
    "same_first_last_sentence": (
        _same_first_last_sentence,
        "two or more sentences, the first and last made of the same words (case folded)",
    ),
    "table_header": (
        _table_header,
        "a markdown table whose header cells are exactly `cells`, in order (case folded)",
    ),
    "first_line_upper": (
        _first_line_upper,
        "the first line has capital letters and no lower-case letter",
    ),
    "regex_count": (
        _regex_count,
        "matches of `regex` (a date, a time ... written in the asked form) within the bound",
    ),
    "keyword_only_in_sentence": (
        _keyword_only_in_sentence,
        "`keyword` occurs in the k-th (-1 the last) sentence and in no other sentence",
    ),
    "avg_sentence_words": (
        _avg_sentence_words,
        "the mean number of words per sentence is at most `n`",
    ),
    "qa_pairs": (
        _qa_pairs,
        "the lines opening with 'Q:' / 'A:' alternate Q, A, exactly `n` pairs",
    ),
    "item_wrapped": (
        _item_wrapped,
        "there are list items and each one's text is wrapped in one of `pairs`",
    ),
    "items_with_digit": (
        _items_with_digit,
        "there are list items and each holds a digit",
    ),
    "paragraph_ratio": (
        _paragraph_ratio,
        "paragraph `second` has at least `min_ratio` times the words of paragraph `first`",
    ),
    "double_letter_words": (
        _double_letter_words,
        "different words holding a doubled letter ('ee', 'll') are within the bound",
    ),
    "long_words": (
        _long_words,
        "different words of at least `min_letters` letters are within the bound",
    ),
    "sentence_words": (
        _sentence_words,
        "the k-th (or every) sentence's number of words is within the bound",
    ),
    "keyword_more_than": (
        _keyword_more_than,
        "`less` occurs at least once and `more` occurs more often than it",
    ),
    "exact_casing": (
        _exact_casing,
        "`word` occurs, and every occurrence, read case folded, is spelled exactly `word`",
    ),
    "heading_upper": (
        _heading_upper,
        "there are markdown headings and none of them has a lower-case letter",
    ),
    "sentence_start_not": (
        _sentence_start_not,
        "no sentence's first word is one of `words`, a clitic aside (I'm begins with I)",
    ),
    "item_word_count": (
        _item_word_count,
        "there are list items and each one's number of words is within the bound",
    ),
    "sentences_containing": (
        _sentences_containing,
        "there are sentences and each holds `keyword`",
    ),
    "sentence_k_end": (
        _sentence_k_end,
        "the k-th (or every) sentence ends (closing quotes aside) with one of `chars`",
    ),
    "last_line_wrapped": (
        _last_line_wrapped,
        "the last line is wrapped in one of `pairs` (emphasis aside)",
    ),
    "lines_decreasing": (
        _lines_decreasing,
        "two or more lines, each with fewer characters than the line before it",
    ),
    "item_start_any": (
        _item_start_any,
        "there are list items and each begins (emphasis aside) with one of `options`",
    ),
    "items_distinct_start": (
        _items_distinct_start,
        "two or more list items and no two of them begin with the same word",
    ),
    "lines_match": (
        _lines_match,
        "every line's body (list marker and emphasis aside) matches `regex` whole",
    ),
    "lines_start_seq": (
        _lines_start_seq,
        "exactly one line per text of `texts`, the i-th line beginning with the i-th text",
    ),
    "line_repeat": (
        _line_repeat,
        "lines that are `text` alone (a final full stop or exclamation mark aside) within the bound",
    ),
    "keywords_in_order": (
        _keywords_in_order,
        "every one of `words` occurs, their first occurrences in the given order",
    ),
    "emphasis_spans": (
        _emphasis_spans,
        "spans in single asterisks (*like this*, not **bold**) are within the bound",
    ),
    "separated_parts": (
        _separated_parts,
        "exactly `n` parts with text between lines holding only `separator` (all different if `distinct`)",
    ),
    "response_language": (
        _response_language,
        "the answer is written in `language` (ISO 639-1), as lingua's detector reads it",
    ),
    "answer_is_one_of": (
        _answer_is_one_of,
        "the whole answer is one of `options` (case, quotes, emphasis and a final mark aside)",
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
