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


def test_derived_tables_are_kept_beside_the_tables(tokenizer: Any, tmp_path: Path) -> None:
    """A table derived later (a policy's mask, the sentence-run tables) is built once and kept
    under its name: fresh tables over the same directory read it back equal, without building;
    a damaged file is built again."""
    from inference.decoder.token_controllers.charset import CharPolicy
    from inference.decoder.token_controllers.sentences import run_tables

    described = vocab._describe_all(tokenizer, len(tokenizer))
    kept = tmp_path / "derived"
    first = vocab._assemble(tokenizer, described, torch.device("cpu"), kept)
    policy = CharPolicy(no_comma=True, case="lower")
    mask, runs = policy.allowed_mask(first), run_tables(first)
    assert bool(mask[tokenizer.convert_tokens_to_ids("Ġthe")])
    assert not bool(mask[tokenizer.convert_tokens_to_ids("ĠThe")])
    assert sorted(p.name for p in kept.iterdir()) == sorted(
        [f"policy-mask-{policy.key}-v1.pt", "sentence-runs-v1.pt"]
    )

    def refuse() -> dict[str, torch.Tensor]:
        raise AssertionError("a kept table was built again")

    second = vocab._assemble(tokenizer, described, torch.device("cpu"), kept)
    assert torch.equal(second.kept(f"policy-mask-{policy.key}-v1", refuse)["mask"], mask)
    again = run_tables(second)
    for name in ("ends", "armed", "text"):
        assert torch.equal(getattr(again, name), getattr(runs, name)), name

    (kept / "sentence-runs-v1.pt").write_bytes(b"torn")
    third = vocab._assemble(tokenizer, described, torch.device("cpu"), kept)
    assert torch.equal(run_tables(third).ends, runs.ends)


def test_boundary_table_is_kept_on_disk(tokenizer: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """The boundary table (every token decoded one by one) is built once and kept beside the
    vocabulary tables: a fresh process (the in-process memo cleared) reads it back equal
    without decoding a token; a damaged file, or one of another width, is built again."""
    from inference.decoder import boundaries

    size = len(tokenizer) + 2
    monkeypatch.setattr(boundaries, "_tables", {})
    built = boundaries.boundary_table(tokenizer, size, tmp_path)
    path = tmp_path / f"boundaries-v{boundaries._RULE}-{size}.pt"
    assert path.is_file()
    assert built.hard[tokenizer.convert_tokens_to_ids("Ċ")] and not built.hard[size - 1]
    assert built.space[tokenizer.convert_tokens_to_ids("Ġthe")]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the boundary table was built again")

    monkeypatch.setattr(boundaries, "_tables", {})
    monkeypatch.setattr(tokenizer, "batch_decode", refuse)
    assert boundaries.boundary_table(tokenizer, size, tmp_path) == built
    assert boundaries._read(path, size + 1) is None  # another width is never read for this one

    path.write_bytes(b"torn")
    monkeypatch.undo()
    monkeypatch.setattr(boundaries, "_tables", {})
    assert boundaries.boundary_table(tokenizer, size, tmp_path) == built
    assert boundaries._read(path, size) == built  # replaced by the rebuilt one


def test_boundary_table_follows_the_vocabulary_tables_directory(tokenizer: Any, tmp_path: Path,
                                                                 monkeypatch: Any) -> None:
    """Without a directory of its own the table is kept where the vocabulary tables built for
    the same tokenizer with a cache directory keep their derived tables (the decoder passes none)."""
    from inference.decoder import boundaries

    monkeypatch.setattr(boundaries, "_tables", {})
    monkeypatch.setattr(vocab, "_tables", {})
    assert vocab.kept_dir_of(tokenizer) is None
    tables = vocab.vocab_tables(tokenizer, "cpu", len(tokenizer), cache_dir=tmp_path)
    assert tables.kept_dir is not None and vocab.kept_dir_of(tokenizer) == tables.kept_dir
    boundaries.boundary_table(tokenizer, len(tokenizer))
    assert (tables.kept_dir / f"boundaries-v{boundaries._RULE}-{len(tokenizer)}.pt").is_file()
