"""The vocabulary tables kept on disk: what is read back equals what was built, a damaged file
is rebuilt, and the file is keyed by the tokenizer's content and the logits width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from inference.decoder import vocab

pytestmark = pytest.mark.model  # the bundled tokenizer


def test_tables_read_from_disk_equal_the_built_ones(tokenizer: Any, tmp_path: Path) -> None:
    size = len(tokenizer) + 3  # a padded logits width: three ids past the tokenizer
    content = vocab._content_key(tokenizer)
    path = vocab._disk_path(tmp_path, content, size)
    assert path is not None and path.parent == tmp_path / "vocab-tables"
    assert vocab._disk_path(tmp_path, content, size + 1) != path
    assert vocab._read(path) is None  # nothing kept yet
    built = vocab._describe_all(tokenizer, size)
    vocab._write(path, built)
    read = vocab._read(path)
    assert read is not None
    assert read.size == built.size and read.eos_ids == built.eos_ids
    assert read.token_bytes == built.token_bytes and read.scripts == built.scripts
    for name in vocab._COLUMNS:
        assert torch.equal(read.columns[name], built.columns[name]), name
    tables = vocab._assemble(tokenizer, read, torch.device("cpu"))
    assert tables.texts[tokenizer.convert_tokens_to_ids("Ġthe")] == " the"
    assert bool(tables.special[size - 1]) and tables.token_bytes[size - 1] == b""

    path.write_bytes(path.read_bytes()[:100])  # a torn or damaged file is not trusted
    assert vocab._read(path) is None
