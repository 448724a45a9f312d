"""A marker of the request's own replaces the Markdown bullet ("use -> instead of bullets", "mark each item
with ->") and keeps the count of items ("List six things": 6) (issue 36), through the real extraction;
near misses keep their bullets."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Count, Filter, Unit, check
from reasoning.constraints.model import Relation


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _texts(prompt: str) -> list[str]:
    return [str(c.params.get("text")) for c in extract(prompt).constraints if c.params.get("text") is not None]


def _marked_lines(marker: str, relation: str, n: int) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "lines", "relation": relation, "n": n, "filter": {"starts_with": marker}})


_NO_LIST = ("structure", {"layout": "no_list"})


@pytest.mark.parametrize(
    ("prompt", "marker", "n"),
    [
        ("List six things to pack for camping. Use -> instead of bullets.", "->", 6),
        ("List six things to pack for camping, and mark each item with ->.", "->", 6),
        ("Name four rivers of Europe. Rather than bullet points, use => to mark the items.", "=>", 4),
        ("Give three tips for sleeping well, using '>>' as the bullet.", ">>", 3),
        ("Suggest some names for a cat; denote every entry by ~>.", "~>", 0),
    ],
)
def test_a_marker_of_its_own_replaces_the_bullet(prompt: str, marker: str, n: int) -> None:
    read = _read(prompt)
    relation = "exactly" if n else "at least"
    assert read == [_NO_LIST, _marked_lines(marker, relation, n or 1)], read


def test_lines_opened_by_the_marker_verify_the_list() -> None:
    form = Count(unit=Unit.LINES, filter=Filter(starts_with="->"), relation=Relation.EXACTLY, n=2)
    assert check(form, "Pack these:\n-> tent\n-> stove").satisfied
    assert not check(form, "Pack these:\n* -> tent\n* -> stove").satisfied


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ('Begin every bullet with "->".', "position"),  # an opening of each bullet, the bullet kept
        ("Use - instead of * for the bullets, and give 3 bullet points.", "bullet_count"),  # Markdown bullets
    ],
)
def test_bullets_kept_where_no_marker_replaces_them(prompt: str, kind: str) -> None:
    read = _read(prompt)
    assert any(k == kind for k, _ in read) and _NO_LIST not in read, read


def test_a_mark_named_as_a_noun_marks_nothing() -> None:
    read = _read("Begin every list item with a check mark emoji ✅.")
    assert _NO_LIST not in read and not any(p.get("unit") == "lines" for _, p in read), read
