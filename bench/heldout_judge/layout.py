"""Verifiers of paragraphs and lines: counts, positions, starts and ends, templates, parts.

Parts *separated by* a separator line are the pieces between lines that hold
only the separator: every piece must hold text. A line follows a *template*
when, emphasis marks aside, it is the template line with each ``{}`` filled
by some text (a full-width colon ``：`` and an ASCII one are the same mark
there). A line is in *title case* when its first and last words and every
word not in ``MINOR_WORDS`` begin with a capital letter (words opening with a
digit aside).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from bench.heldout_judge.readings import (
    HAN_SCRIPT,
    HAS_CONTENT,
    LETTER,
    MINOR_WORDS,
    SENTENCE_MARKS,
    Judge,
    at,
    begins,
    blocks,
    bounded,
    delimiter_pairs,
    ends,
    keyword_count,
    line_body,
    lines,
    normal,
    paragraphs,
    pick,
    sentences,
    split_sentences,
    spread,
    strip_closers,
    unlead,
    words,
    wrapped_in,
)


def _lines(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(line.strip()) for line in text.splitlines()), args)


def _paragraph_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(paragraphs(text)), args)


def _sentences_per_paragraph(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    return bool(found) and all(bounded(len(sentences(p)), args) for p in found)


def _paragraphs_containing(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    return bool(found) and all(keyword_count(str(args["keyword"]), p) >= 1 for p in found)


def _title_line(args: Mapping[str, Any], text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    first = lines[0].strip().strip("#*_ \t")
    return any(
        first.startswith(left)
        and first.endswith(right)
        and bool(HAS_CONTENT.search(first[len(left) : len(first) - len(right)]))
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


def _paragraph_start(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(paragraphs(text), args["k"])
    return bool(chosen) and all(begins(p, str(args["text"])) for p in chosen)


def _paragraph_end(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(paragraphs(text), args["k"])
    return bool(chosen) and all(ends(p, str(args["text"])) for p in chosen)


def _paragraph_balance(args: Mapping[str, Any], text: str) -> bool:
    counts = [len(words(p)) for p in paragraphs(text)]
    if "n" in args and len(counts) != int(args["n"]):
        return False
    return len(counts) >= 2 and spread(counts) <= int(args["max_diff"])


def _line_max_chars(args: Mapping[str, Any], text: str) -> bool:
    found = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(found) and all(len(line) <= int(args["n"]) for line in found)


def _line_end(args: Mapping[str, Any], text: str) -> bool:
    found = [line for line in text.splitlines() if line.strip()]
    return bool(found) and all(strip_closers(line)[-1:] in str(args["chars"]) for line in found)


def _postscript(args: Mapping[str, Any], text: str) -> bool:
    marker = str(args["marker"])
    lines = [line.strip().lstrip("*_").strip() for line in text.splitlines() if line.strip()]
    return any(
        line.startswith(marker) and bool(HAS_CONTENT.search(line[len(marker) :]))
        for line in lines[1:]
    )


def _acrostic(args: Mapping[str, Any], text: str) -> bool:
    word = str(args["word"]).casefold()
    found = lines(text)
    if len(found) != len(word):
        return False
    for line, letter in zip(found, word, strict=True):
        first = LETTER.search(line_body(line))
        if first is None or first.group().casefold() != letter:
            return False
    return True


def _first_line_upper(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    if not found:
        return False
    first = found[0]
    return any(c.isupper() for c in first) and not any(c.islower() for c in first)


def _paragraph_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = paragraphs(text)
    first, second = int(args["first"]), int(args["second"])
    if len(found) < max(first, second):
        return False
    shorter = len(words(found[first - 1]))
    return shorter > 0 and len(words(found[second - 1])) >= float(args["min_ratio"]) * shorter


def _last_line_wrapped(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    return bool(found) and wrapped_in(found[-1], delimiter_pairs(args), piece=True)


def _lines_decreasing(args: Mapping[str, Any], text: str) -> bool:
    lengths = [len(line) for line in lines(text)]
    return len(lengths) >= 2 and all(a > b for a, b in itertools.pairwise(lengths))


def _lines_match(args: Mapping[str, Any], text: str) -> bool:
    pattern = re.compile(str(args["regex"]))
    found = lines(text)
    return bool(found) and all(pattern.fullmatch(line_body(line)) for line in found)


def _lines_start_seq(args: Mapping[str, Any], text: str) -> bool:
    texts = [str(t) for t in args["texts"]]
    found = lines(text)
    return len(found) == len(texts) and all(
        begins(line, want) for line, want in zip(found, texts, strict=True)
    )


def _is_line(line: str, want: str) -> bool:
    body = normal(strip_closers(line_body(line)))
    if body == want:
        return True
    return want[-1:] not in SENTENCE_MARKS and body[-1:] in SENTENCE_MARKS and (
        normal(strip_closers(body[:-1])) == want
    )


def _line_repeat(args: Mapping[str, Any], text: str) -> bool:
    want = normal(str(args["text"]))
    return bounded(sum(_is_line(line, want) for line in lines(text)), args)


def _separated_parts(args: Mapping[str, Any], text: str) -> bool:
    separator = str(args["separator"])
    parts: list[list[str]] = [[]]
    for line in text.strip().splitlines():
        if line.strip() == separator:
            parts.append([])
        else:
            parts[-1].append(line)
    bodies = ["\n".join(part).strip() for part in parts]
    if len(bodies) != int(args["n"]) or not all(HAS_CONTENT.search(b) for b in bodies):
        return False
    return not args.get("distinct") or len({normal(b) for b in bodies}) == len(bodies)


def _separated_line(args: Mapping[str, Any], text: str) -> bool:
    separator = str(args["separator"])
    for line in lines(text):
        parts = [part.strip() for part in line.split(separator)]
        if len(parts) == int(args["n"]) and all(HAS_CONTENT.search(p) for p in parts):
            return True
    return False


def _unemphasised(line: str) -> str:
    return line.replace("**", "").replace("__", "").replace("：", ":").strip()


def _template(args: Mapping[str, Any], text: str) -> bool:
    wanted = [str(t) for t in args["lines"]]
    found = lines(text)
    if len(found) != len(wanted):
        return False
    for line, template in zip(found, wanted, strict=True):
        pattern = r"\s*".join(
            r"\S.*?" if part == "{}" else re.escape(part)
            for part in re.split(r"(\{\})", _unemphasised(template))
            if part
        )
        if not re.fullmatch(pattern, _unemphasised(line)):
            return False
    return True


def _title_case(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    if not found:
        return False
    first = [w for w in words(unlead(found[0])) if not w[0].isdigit()]
    if not first:
        return False
    return all(
        w[0].isupper() for i, w in enumerate(first)
        if i in (0, len(first) - 1) or w.casefold() not in MINOR_WORDS
    )


def _one_word_lines(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    return bool(found) and all(len(words(line)) == 1 for line in found)


def _paragraph_keyword(args: Mapping[str, Any], text: str) -> bool:
    paragraph = at(blocks(text), int(args["k"]))
    return paragraph is not None and keyword_count(str(args["keyword"]), paragraph) >= 1


def _paragraph_sentences(args: Mapping[str, Any], text: str) -> bool:
    paragraph = at(blocks(text), int(args["k"]))
    return paragraph is not None and bounded(len(split_sentences(paragraph)), args)


def _paragraph_sentence_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = blocks(text)
    first, second = at(found, int(args["first"])), at(found, int(args["second"]))
    if first is None or second is None:
        return False
    base = len(split_sentences(first))
    return base > 0 and len(split_sentences(second)) == int(args["ratio"]) * base


def _plain(line: str) -> str:
    return normal(line.replace("**", "").replace("__", "").strip("*_ \t"))


def _line_is(args: Mapping[str, Any], text: str) -> bool:
    line = at(lines(text), int(args["k"]))
    return line is not None and _plain(line) == normal(str(args["text"]))


def _line_han_count(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    return bool(found) and all(len(HAN_SCRIPT.findall(line)) == int(args["n"]) for line in found)


#: verifier id -> (function, how a strict reader decides it).
VERIFIERS: dict[str, tuple[Judge, str]] = {
    "lines": (_lines, "non-empty lines are within the bound"),
    "paragraph_count": (_paragraph_count, "the number of paragraphs is within the bound"),
    "sentences_per_paragraph": (
        _sentences_per_paragraph,
        "every paragraph's number of sentences is within the bound",
    ),
    "paragraphs_containing": (
        _paragraphs_containing,
        "every paragraph holds `keyword` at least once",
    ),
    "title_line": (_title_line, "the first non-empty line is a title wrapped in one of `pairs`"),
    "marker_lines": (
        _marker_lines,
        "lines starting (emphasis aside) with the marker `regex` are within the bound",
    ),
    "paragraph_start": (_paragraph_start, "the k-th (or every) paragraph begins with `text`"),
    "paragraph_end": (_paragraph_end, "the k-th (or every) paragraph ends with `text`"),
    "paragraph_balance": (
        _paragraph_balance,
        "two or more (or `n`) paragraphs, word counts of the longest and shortest within `max_diff`",
    ),
    "line_max_chars": (
        _line_max_chars,
        "every non-empty line has at most `n` characters (ends stripped)",
    ),
    "line_end": (_line_end, "every non-empty line ends (closing quotes aside) with one of `chars`"),
    "postscript": (
        _postscript,
        "a line after the first begins (emphasis aside) with `marker` and has text after it",
    ),
    "acrostic": (
        _acrostic,
        "exactly one line per letter of `word`, each line's first letter spelling it, case folded",
    ),
    "first_line_upper": (
        _first_line_upper,
        "the first line has capital letters and no lower-case letter",
    ),
    "paragraph_ratio": (
        _paragraph_ratio,
        "paragraph `second` has at least `min_ratio` times the words of paragraph `first`",
    ),
    "last_line_wrapped": (
        _last_line_wrapped,
        "the last line is wrapped in one of `pairs` (emphasis aside)",
    ),
    "lines_decreasing": (
        _lines_decreasing,
        "two or more lines, each with fewer characters than the line before it",
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
    "separated_parts": (
        _separated_parts,
        "exactly `n` parts with text between lines holding only `separator` (all different if `distinct`)",
    ),
    "separated_line": (
        _separated_line,
        "a line holds exactly `n` non-empty items separated by `separator`",
    ),
    "template": (
        _template,
        "exactly one line per template line, each the template with every {} filled",
    ),
    "title_case": (_title_case, "the first line is in title case (see the module doc)"),
    "one_word_lines": (_one_word_lines, "there are lines and each holds exactly one word"),
    "paragraph_keyword": (
        _paragraph_keyword,
        "the k-th paragraph (-1 the last, -2 the one before) holds `keyword`",
    ),
    "paragraph_sentences": (
        _paragraph_sentences,
        "the k-th paragraph (-1 the last) has a number of sentences within the bound",
    ),
    "paragraph_sentence_ratio": (
        _paragraph_sentence_ratio,
        "paragraph `second` has exactly `ratio` times the sentences of paragraph `first` (one or more)",
    ),
    "line_is": (
        _line_is,
        "the k-th non-empty line (-1 the last, -2 the one before) is `text`, emphasis and case aside",
    ),
    "line_han_count": (
        _line_han_count,
        "there are lines and each holds exactly `n` Han characters (punctuation aside)",
    ),
}
