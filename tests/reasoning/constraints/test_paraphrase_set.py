"""The labelled paraphrase set is well formed: enough items, both languages, labels that fit their kinds."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from reasoning.constraints.form import GENERIC_KINDS, form_of
from reasoning.constraints.model import Kind

PARAPHRASES = Path(__file__).resolve().parents[2] / "data" / "paraphrases.jsonl"


def test_the_set_holds_at_least_300_labelled_prompts_in_english_and_chinese() -> None:
    rows = [json.loads(line) for line in PARAPHRASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 300
    assert len({row["id"] for row in rows}) == len(rows)
    languages = {row["language"] for row in rows}
    assert languages == {"en", "zh"}
    assert sum(1 for row in rows if not row["expected"]) >= 20
    for row in rows:
        for label in row["expected"]:
            kind = Kind(label["kind"])
            if kind in GENERIC_KINDS:
                msgspec.convert(label["params"], GENERIC_KINDS[kind])
            form_of(kind, label["params"])
