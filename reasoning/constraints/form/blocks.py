"""Where a list or a Markdown table stands in a text, and the prose around it.

The structure verifier reads an answer the way a reader does: a table is a
header row of ``|``-separated cells, a rule of ``---`` cells, then its body
rows; a list is its run of item lines (``*`` / ``-`` bullets, ``1.``
numbers), indented sub-items and continuation lines included; the prose
before and after is what stands outside that block. Counting items counts
the top-level ones (a nested item belongs to its parent).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Block", "Table", "cells", "list_block", "table_block"]

_ITEM = re.compile(r"^(\s*)(?:[*\-+](?!\*)|\d+[.)])\s+\S")
_RULE_CELL = re.compile(r"^:?-{3,}:?$")


@dataclass(frozen=True)
class Block:
    """A run of lines ``[start, end)`` of a text and the prose before and after it."""

    start: int
    end: int
    before: str
    after: str
    items: int = 0  # lists: top-level items
    sub_items: tuple[int, ...] = ()  # lists: the nested items under each top-level item


@dataclass(frozen=True)
class Table:
    """A Markdown table: its header cells, its body rows' cells, and where it stands."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    block: Block


def cells(line: str) -> tuple[str, ...]:
    """The cells of a table line (outer pipes optional)."""
    body = line.strip()
    body = body.removeprefix("|")
    body = body.removesuffix("|")
    return tuple(cell.strip() for cell in body.split("|"))


def _is_rule(line: str) -> bool:
    found = cells(line)
    return "|" in line and all(_RULE_CELL.match(cell) for cell in found)


def _around(lines: list[str], start: int, end: int) -> tuple[str, str]:
    return "\n".join(lines[:start]).strip(), "\n".join(lines[end:]).strip()


def table_block(text: str) -> Table | None:
    """The first Markdown table of ``text`` (None: none, or a rule whose cells the header does not match)."""
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if not _is_rule(lines[index]) or "|" not in lines[index - 1]:
            continue
        header = cells(lines[index - 1])
        if len(cells(lines[index])) != len(header):
            return None
        end = index + 1
        while end < len(lines) and "|" in lines[end] and not _is_rule(lines[end]):
            end += 1
        rows = tuple(cells(line) for line in lines[index + 1 : end])
        before, after = _around(lines, index - 1, end)
        return Table(header, rows, Block(index - 1, end, before, after))
    return None


def list_block(text: str) -> Block | None:
    """The first list of ``text``: its item lines, sub-items and continuations (None: no item line)."""
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if _ITEM.match(line)), None)
    if first is None:
        return None
    end, items, last_item = first, 0, first
    nested: list[int] = []
    while end < len(lines):
        line = lines[end]
        match = _ITEM.match(line)
        if match is not None:
            if match.group(1) and nested:
                nested[-1] += 1
            elif not match.group(1):
                nested.append(0)
            items += 0 if match.group(1) else 1
            last_item = end
        elif not line.strip():
            ahead = next((x for x in lines[end + 1 :] if x.strip()), "")
            if not _ITEM.match(ahead):
                break  # a blank line ends the list unless another item follows (a loose list)
        elif not line.startswith((" ", "\t")):
            break
        end += 1
    before, after = _around(lines, first, last_item + 1)
    return Block(first, last_item + 1, before, after, items=items, sub_items=tuple(nested))
