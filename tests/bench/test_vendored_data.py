"""The repository carries the data its tests and benchmarks read, unmodified and with its licence."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from bench.datasets import IFEVAL_PROMPTS

ROOT = Path(__file__).resolve().parents[2]
IFEVAL_SHA256 = "67ffeee0fcb87c317c5b08a2de85557b4a7e96ada6178aa645b4954fe4b53d49"
# A path that leaves the checkout for the sibling folder (a "../" prefix or a path segment).
_OUTSIDE = re.compile(r"\.\./shared/|[\"']shared[\"']\s*/")


def test_ifeval_prompts_are_the_published_file() -> None:
    assert IFEVAL_PROMPTS.is_relative_to(ROOT)
    assert hashlib.sha256(IFEVAL_PROMPTS.read_bytes()).hexdigest() == IFEVAL_SHA256
    rows = [json.loads(line) for line in IFEVAL_PROMPTS.read_text().splitlines() if line.strip()]
    assert len(rows) == 541
    assert {"key", "prompt", "instruction_id_list", "kwargs"} <= set(rows[0])


def test_ifeval_prompts_carry_their_licence() -> None:
    folder = IFEVAL_PROMPTS.parent
    assert "Apache License" in (folder / "LICENSE").read_text()
    note = (folder / "README.md").read_text()
    assert "google-research" in note and IFEVAL_SHA256 in note


def _sources() -> list[Path]:
    """The checkout's Python and shell files and its Makefile (not the venv, caches or var/)."""
    found = [ROOT / "Makefile"]
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in {"var", "__pycache__"}]
        found += [Path(folder, name) for name in files if name.endswith((".py", ".sh"))]
    return found


def test_no_code_reads_outside_the_checkout() -> None:
    sources = _sources()
    assert ROOT / "bench" / "steering.py" in sources
    offenders = [
        str(path.relative_to(ROOT))
        for path in sources
        if _OUTSIDE.search(path.read_text(errors="replace"))
    ]
    assert offenders == []
