"""Verifiers of list items, numbering and outlines.

The first set's *list item* is a line that starts, after its indentation,
with ``-`` ``*`` ``+`` ``•`` or a number / letter / Chinese numeral followed
by ``.`` ``)`` or ``、``; the later sets read items as
:func:`bench.heldout_judge.readings.list_items`. A *list marker* (the fifth
set's) opens a line and is followed by the item's text; a *standard* marker is
``-``, ``*``, ``+`` or ``•`` followed by a space, or a number followed by
``.``, ``)`` or ``、``; a *sub-bullet* is a line opening with the sub-item
marker, indented when it is the same marker as the top items'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bench.heldout_judge.readings import (
    EMPHASIS,
    HAS_CONTENT,
    PUNCT,
    Judge,
    bounded,
    delimiter_pairs,
    first_word,
    line_body,
    lines,
    list_items,
    normal,
    unlead,
    words,
    wrapped_in,
)

_LIST_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?:[-*+•·▪●◦]|\d+[.)、]|[A-Za-z][.)]|[一二三四五六七八九十]+、)\s+\S"
)
_NUMBERED_ITEM = re.compile(r"^\s*\d+[.)]\s+\S")
_ITEM_NUMBER = re.compile(r"^\s*(?P<n>\d+)[.)](?:\s+|$)")
_QA_TAG = re.compile(r"^(?P<tag>[QA])\s*[:：]", re.IGNORECASE)
_STANDARD_MARKER = re.compile(r"^(?:[-*+•]\s|\d+[.)、．）])")
_OUTLINE_NUMBER = re.compile(r"^(?:[*_#]+\s*)?(?P<number>\d+(?:\.\d+)*)[.)、]?\s+\S")
_SECTION_ITEM = re.compile(r"^(?:[-*+•]\s|\d+[.)、．）]\s*)")


def _no_list(args: Mapping[str, Any], text: str) -> bool:
    return bool(words(text)) and not any(_LIST_ITEM.match(line) for line in text.splitlines())


def _numbered_items(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(_NUMBERED_ITEM.match(line)) for line in text.splitlines()), args)


def _indent(spaces: str) -> int:
    return len(spaces.replace("\t", "    "))


def _nested_list(args: Mapping[str, Any], text: str) -> bool:
    groups: list[int] = []
    for line in text.splitlines():
        item = _LIST_ITEM.match(line)
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


def _bullet_items(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(list_items(text, bullets_only=True)), args)


def _item_max_words(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(len(words(item)) <= int(args["n"]) for item in found)


def _item_max_chars(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(
        len(PUNCT.sub("", "".join(item.split()))) <= int(args["n"]) for item in found
    )


def _item_start(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    want = normal(str(args["text"]))
    return bool(found) and all(normal(item).startswith(want) for item in found)


def _items_sorted(args: Mapping[str, Any], text: str) -> bool:
    keys = [normal(line_body(item)) for item in list_items(text)]
    return len(keys) >= 2 and keys == sorted(keys)


def _numbered_sequence(args: Mapping[str, Any], text: str) -> bool:
    found = [int(m.group("n")) for line in text.splitlines() if (m := _ITEM_NUMBER.match(line))]
    return found == [int(n) for n in args["numbers"]]


def _qa_pairs(args: Mapping[str, Any], text: str) -> bool:
    tags = [m.group("tag").upper() for line in lines(text) if (m := _QA_TAG.match(line_body(line)))]
    return tags == ["Q", "A"] * int(args["n"])


def _item_wrapped(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(
        wrapped_in(item, delimiter_pairs(args), piece=True) for item in found
    )


def _items_with_digit(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(any(c.isdigit() for c in item) for item in found)


def _item_word_count(args: Mapping[str, Any], text: str) -> bool:
    found = list_items(text)
    return bool(found) and all(bounded(len(words(item)), args) for item in found)


def _item_start_any(args: Mapping[str, Any], text: str) -> bool:
    options = [normal(str(o)) for o in args["options"]]
    found = [normal(item.lstrip(EMPHASIS)) for item in list_items(text)]
    return bool(found) and all(any(item.startswith(o) for o in options) for item in found)


def _items_distinct_start(args: Mapping[str, Any], text: str) -> bool:
    starts = [first_word(item) for item in list_items(text)]
    return len(starts) >= 2 and all(starts) and len(set(starts)) == len(starts)


def _list_marker(args: Mapping[str, Any], text: str) -> bool:
    marker = str(args["marker"])
    items = 0
    for line in lines(text):
        if line.startswith(marker):
            if not HAS_CONTENT.search(line[len(marker) :]):
                return False
            items += 1
        elif _STANDARD_MARKER.match(line):
            return False
    return items > 0 and bounded(items, args)


def _sub_bullets(args: Mapping[str, Any], text: str) -> bool:
    top, sub = str(args["top"]), str(args["sub"])
    children: list[int] = []
    for raw in text.splitlines():
        line = raw.strip()
        indented = raw[: len(raw) - len(raw.lstrip())] != ""
        if line.startswith(sub) and (sub != top or indented):
            if not children or not HAS_CONTENT.search(line[len(sub) :]):
                return False
            children[-1] += 1
        elif line.startswith(top) and not indented:
            if not HAS_CONTENT.search(line[len(top) :]):
                return False
            children.append(0)
    if not children or min(children) < int(args["min"]):
        return False
    return "relation" not in args or bounded(len(children), args)


def _nested_numbering(args: Mapping[str, Any], text: str) -> bool:
    numbers = [
        match.group("number")
        for match in (_OUTLINE_NUMBER.match(line) for line in lines(text))
        if match is not None
    ]
    tops = [n for n in numbers if "." not in n]
    if not tops or tops != [str(i) for i in range(1, len(tops) + 1)]:
        return False
    current, subs = "", 0
    want = int(args["min"])
    for number in numbers:
        head, _, tail = number.partition(".")
        if not tail:
            if current and subs < want:
                return False
            current, subs = head, 0
        elif head != current or tail != str(subs + 1):
            return False
        else:
            subs += 1
    return subs >= want and ("relation" not in args or bounded(len(tops), args))


def _section_items(text: str, label: str) -> int | None:
    """List items under the line that names ``label``, up to the next non-item line; None if no such line."""
    count: int | None = None
    for line in lines(text):
        if _SECTION_ITEM.match(line):
            if count is not None:
                count += 1
            continue
        if count is not None:
            return count
        heading = unlead(line).replace("*", "").strip(" :：")
        if normal(heading) == normal(label):
            count = 0
    return count


def _section_items_ratio(args: Mapping[str, Any], text: str) -> bool:
    more, less = _section_items(text, str(args["more"])), _section_items(text, str(args["less"]))
    return more is not None and less is not None and less > 0 and more == int(args["ratio"]) * less


#: verifier id -> (function, how a strict reader decides it).
VERIFIERS: dict[str, tuple[Judge, str]] = {
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
    "bullet_items": (_bullet_items, "bulleted (not numbered) list items are within the bound"),
    "item_max_words": (_item_max_words, "there are list items and each has at most `n` words"),
    "item_max_chars": (
        _item_max_chars,
        "there are list items and each has at most `n` characters besides spaces and punctuation",
    ),
    "item_start": (_item_start, "there are list items and each begins with `text`"),
    "items_sorted": (
        _items_sorted,
        "two or more list items, in alphabetical order of their text (case folded)",
    ),
    "numbered_sequence": (
        _numbered_sequence,
        "the numbers of the numbered items, in order, are exactly `numbers`",
    ),
    "qa_pairs": (_qa_pairs, "the lines opening with 'Q:' / 'A:' alternate Q, A, exactly `n` pairs"),
    "item_wrapped": (
        _item_wrapped,
        "there are list items and each one's text is wrapped in one of `pairs`",
    ),
    "items_with_digit": (_items_with_digit, "there are list items and each holds a digit"),
    "item_word_count": (
        _item_word_count,
        "there are list items and each one's number of words is within the bound",
    ),
    "item_start_any": (
        _item_start_any,
        "there are list items and each begins (emphasis aside) with one of `options`",
    ),
    "items_distinct_start": (
        _items_distinct_start,
        "two or more list items and no two of them begin with the same word",
    ),
    "list_marker": (
        _list_marker,
        "lines opening with `marker` (each with text) are within the bound, and no line opens with a standard marker",
    ),
    "sub_bullets": (
        _sub_bullets,
        "`top` items (within the bound, if one is given) each followed by at least `min` `sub` items",
    ),
    "nested_numbering": (
        _nested_numbering,
        "items numbered 1, 2, ... (within the bound, if given), each followed by at least `min` items n.1, n.2, ...",
    ),
    "section_items_ratio": (
        _section_items_ratio,
        "the list under the line `less` has items, the list under `more` exactly `ratio` times as many",
    ),
}
