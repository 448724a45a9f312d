"""Verifiers of the whole answer's form: JSON, CSV, tables, headings, wrapping, a fixed opening or ending.

``wrapped`` reads a wrapped answer as :func:`bench.heldout_judge.readings.wrapped_in`
does (the left delimiter closed by the last character); ``wrapped_ends``, the
first set's, only asks that the answer start with a pair's left and end with
its right, something inside. *CSV* is the whole answer (one code fence
allowed) read by Python's ``csv`` reader: a header row and data rows, every
row with the header's number of cells. JSON may be in one code fence too.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from typing import Any

from bench.heldout_judge.readings import (
    EMPHASIS,
    SENTENCE_MARKS,
    Judge,
    begins,
    bounded,
    delimiter_pairs,
    ends,
    normal,
    strip_closers,
    strip_quotes_and_brackets,
    unlead,
    wrapped_in,
)

_HEADING = re.compile(r"^ {0,3}#{1,6}\s+\S")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_FENCE = re.compile(r"^```[\w-]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)
_HEADING_TEXT = re.compile(r"^ {0,3}#{1,6}\s+(?P<text>\S.*)$")


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


def _wrapped_ends(args: Mapping[str, Any], text: str) -> bool:
    body = text.strip()
    return any(
        len(body) > len(left) + len(right) and body.startswith(left) and body.endswith(right)
        for left, right in delimiter_pairs(args)
    )


def _starts_with(args: Mapping[str, Any], text: str) -> bool:
    def normal(value: str) -> str:
        return " ".join(value.split()).casefold()

    return normal(text).startswith(normal(str(args["text"])))


def _ends_with_char(args: Mapping[str, Any], text: str) -> bool:
    return strip_quotes_and_brackets(text)[-1:] in str(args["chars"]) and bool(text.strip())


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
    return ends(text, str(args["text"]))


def _opens_with(args: Mapping[str, Any], text: str) -> bool:
    return begins(text, str(args["text"]))


def _heading_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(_HEADING.match(line)) for line in text.splitlines()), args)


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


def _table(text: str) -> tuple[list[str], list[list[str]]] | None:
    """The first markdown table: its header cells and data rows' cells, or ``None``."""

    def cells(row: str) -> list[str]:
        return [cell.strip().strip(EMPHASIS).strip() for cell in row.strip().strip("|").split("|")]

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


def _table_header(args: Mapping[str, Any], text: str) -> bool:
    table = _table(text)
    return table is not None and [normal(c) for c in table[0]] == [
        normal(str(c)) for c in args["cells"]
    ]


def _wrapped(args: Mapping[str, Any], text: str) -> bool:
    return wrapped_in(text, delimiter_pairs(args), piece=False)


def _heading_upper(args: Mapping[str, Any], text: str) -> bool:
    found = [m.group("text") for line in text.splitlines() if (m := _HEADING_TEXT.match(line))]
    return bool(found) and all(
        any(c.isupper() for c in h) and not any(c.islower() for c in h) for h in found
    )


def _answer_is_one_of(args: Mapping[str, Any], text: str) -> bool:
    body = strip_closers(unlead(text.strip()))
    if body[-1:] in SENTENCE_MARKS:
        body = strip_closers(body[:-1])
    return normal(body) in {normal(str(o)) for o in args["options"]}


def _csv(args: Mapping[str, Any], text: str) -> bool:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    rows = [row for row in csv.reader(io.StringIO(body)) if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        return False
    header = [normal(cell) for cell in rows[0]]
    if header != [normal(str(c)) for c in args["header"]]:
        return False
    return all(len(row) == len(header) for row in rows) and bounded(len(rows) - 1, args)


#: verifier id -> (function, how a strict reader decides it).
VERIFIERS: dict[str, tuple[Judge, str]] = {
    "table_rows": (
        _table_rows,
        "a markdown table (header, rule row) whose data rows are within the bound",
    ),
    "wrapped_ends": (
        _wrapped_ends,
        "the whole answer starts with a pair's left and ends with its right, something inside",
    ),
    "starts_with": (
        _starts_with,
        "the answer begins with `text` (case and runs of white space aside)",
    ),
    "ends_with_char": (
        _ends_with_char,
        "the answer's last character (closing quotes aside) is one of `chars`",
    ),
    "json": (
        _json,
        "the whole answer (one code fence allowed) is JSON of `type`, an object holding `keys`",
    ),
    "ends_with_text": (_ends_with_text, "the answer ends with `text`"),
    "opens_with": (_opens_with, "the answer begins with `text`"),
    "heading_count": (_heading_count, "markdown heading lines ('#' to '######') within the bound"),
    "table_columns": (
        _table_columns,
        "a markdown table whose header and every data row have exactly `n` cells",
    ),
    "table_header": (
        _table_header,
        "a markdown table whose header cells are exactly `cells`, in order (case folded)",
    ),
    "wrapped": (_wrapped, "the whole answer is wrapped in one of `pairs` (see the module doc)"),
    "heading_upper": (
        _heading_upper,
        "there are markdown headings and none of them has a lower-case letter",
    ),
    "answer_is_one_of": (
        _answer_is_one_of,
        "the whole answer is one of `options` (case, quotes, emphasis and a final mark aside)",
    ),
    "csv": (
        _csv,
        "the whole answer is CSV with header `header` and a number of data rows within the bound",
    ),
}
