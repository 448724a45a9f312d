"""一段 naming a piece of text ("写一段关于春天的文字") is no paragraph count; a count the clause asks for
(只写一段, 分成一段。, 写三段…) is (issue 36), through the real extraction (spaCy zh with jieba)."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _texts(prompt: str) -> list[str]:
    return [str(c.params.get("text")) for c in extract(prompt).constraints if c.params.get("text") is not None]


@pytest.mark.parametrize(
    "prompt",
    ["写一段关于春天的文字。", "给朋友写一段生日祝福，至少用上三个感叹号。", "写一段关于阳台种菜的建议，“阳光”这个词至少要出现三次。"],
)
def test_one_piece_of_text_is_no_paragraph_count(prompt: str) -> None:
    assert not any(k == "paragraph_count" or p.get("unit") == "paragraphs" for k, p in _read(prompt)), _read(prompt)


@pytest.mark.parametrize(
    ("prompt", "n"),
    [("介绍一下北京，只写一段。", 1), ("把答案分成一段。", 1), ("写三段关于春天的文字。", 3), ("写两段话推荐一本书。", 2),
     ("用英文写一段话，介绍使用密码管理器的好处。", 1), ("写一段关于春天的话，用上三个感叹号。", 1)],
)
def test_a_paragraph_count_asked_is_read(prompt: str, n: int) -> None:
    read = _read(prompt)
    assert any((k == "paragraph_count" or p.get("unit") == "paragraphs") and p.get("n") == n for k, p in read), read
