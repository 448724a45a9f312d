"""The reader registry (reasoning/constraints/extract/registry.py) and the shared sentence-bounds helper."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import reasoning.constraints.extract as extract_package
from reasoning.constraints.extract.registry import CHINESE, ENGLISH, read
from reasoning.constraints.extract.sentence_bounds import MARKS, sentence_bounds
from reasoning.constraints.extraction import extract
from reasoning.nlp import chinese, english

_READER_PREFIXES = ("detect_", "refine_", "read_", "prune_", "drop_")


def _unwrapped(reader: Callable[..., Any]) -> Callable[..., Any]:
    return getattr(reader, "__wrapped__", reader)


def _public_readers() -> dict[str, Callable[..., Any]]:
    """Every public function of the extract package named as a reader, by its dotted name."""
    readers: dict[str, Callable[..., Any]] = {}
    for info in pkgutil.walk_packages(extract_package.__path__, extract_package.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__ and name.startswith(_READER_PREFIXES):
                readers[f"{info.name}.{name}"] = value
    return readers


def test_every_reader_of_the_package_is_registered_once() -> None:
    readers: list[Callable[..., Any]] = [*ENGLISH, *CHINESE]
    registered = [_unwrapped(r) for r in readers]
    assert len(registered) == len(set(registered)), "a reader is registered twice"
    missing = sorted(name for name, reader in _public_readers().items()
                     if reader not in registered)
    assert missing == [], f"readers without a registry line: {missing}"


def test_the_english_and_chinese_lists_hold_readers_of_their_own_language() -> None:
    english_modules = {_unwrapped(r).__module__ for r in ENGLISH}
    chinese_modules = {_unwrapped(r).__module__ for r in CHINESE}
    assert not any(".zh." in m for m in english_modules)
    assert not any(".en." in m for m in chinese_modules)


@pytest.mark.parametrize(
    ("prompt", "language"),
    [
        ("Answer in at most 50 words and use exactly 3 bullet points.", "en"),
        ("请用不超过100个字回答，并且必须包含三个要点。", "zh"),
    ],
)
def test_read_is_what_extract_builds_its_constraints_from(prompt: str, language: str) -> None:
    docs = {language: english()(prompt) if language == "en" else chinese()(prompt)}
    readings = read(docs, prompt)
    kinds = {(c.kind, c.source.start, c.source.end) for c in extract(prompt).constraints if c.source is not None}
    assert readings, "the readers read nothing from a prompt with counts"
    assert kinds <= {(f.kind, f.start, f.end) for f in readings}


def test_read_of_no_parse_reads_nothing() -> None:
    assert read({}, "Answer in at most 50 words.") == []


@pytest.mark.parametrize(
    ("text", "start", "end", "marks", "with_mark", "expected"),
    [
        ("One. Two words here! Three", 5, 9, ".!?\n", True, (4, 20)),
        ("One. Two words here! Three", 5, 9, ".!?\n", False, (4, 19)),
        ("No mark at all", 3, 7, ".!?\n", True, (0, 14)),
        ("第一句。第二句，有逗号！", 5, 6, MARKS, True, (4, 12)),
        ("第一句。第二句，有逗号！", 5, 6, "，,", False, (0, 7)),
        ("line one\nline two", 10, 10, ".!?\n", False, (9, 17)),
    ],
)
def test_sentence_bounds_cut_at_the_nearest_marks(
    text: str, start: int, end: int, marks: str, with_mark: bool, expected: tuple[int, int]
) -> None:
    assert sentence_bounds(text, start, end, marks, with_mark=with_mark) == expected
