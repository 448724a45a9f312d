"""Canonical JSON and event digests: the byte-exact basis of the audit chain."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoning.errors import InvalidInput
from reasoning.provenance import GENESIS_HASH, canonical_json, event_digest, iso_utc, normalise_json


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_utf8() -> None:
    value = {"b": [1, {"z": None, "a": 2.5}], "a": "中文 €", "c": True}
    assert canonical_json(value) == '{"a":"中文 €","b":[1,{"a":2.5,"z":null}],"c":true}'.encode()
    assert canonical_json({"a": 1, "b": 2}) == canonical_json({"b": 2, "a": 1})


@pytest.mark.parametrize(
    "value, message",
    [
        (float("inf"), "no JSON spelling"),
        ({"a": float("nan")}, "no JSON spelling"),
        ({"when": datetime(2026, 1, 1)}, "not a JSON value"),
        ({1: "a"}, "not a string"),
        ([b"bytes"], "not a JSON value"),
    ],
)
def test_values_without_one_json_spelling_are_refused(value: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        canonical_json(value)


def test_normalise_json_is_what_a_json_column_reads_back() -> None:
    assert normalise_json({"t": (1, 2), "n": {"x": [()]}}) == {"t": [1, 2], "n": {"x": [[]]}}


def test_iso_utc_normalises_zones_and_naive_times() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert iso_utc(datetime(2026, 1, 1, 12, 0, tzinfo=plus_two)) == "2026-01-01T10:00:00.000000+00:00"
    assert iso_utc(datetime(2026, 1, 1, 12, 0, 0, 5)) == "2026-01-01T12:00:00.000005+00:00"


BASE: dict[str, Any] = {
    "event_id": "e1",
    "tenant_id": "t1",
    "chain_seq": 1,
    "event_type": "run.recorded",
    "subject_type": "run",
    "subject_id": "r1",
    "payload": {"a": 1},
    "created_at": datetime(2026, 1, 1, tzinfo=UTC),
    "prev_hash": GENESIS_HASH,
}


@pytest.mark.parametrize(
    "field, value",
    [
        ("event_id", "e2"),
        ("tenant_id", "t2"),
        ("chain_seq", 2),
        ("event_type", "run.deleted"),
        ("subject_type", "session"),
        ("subject_id", "r2"),
        ("payload", {"a": 2}),
        ("created_at", datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC)),
        ("prev_hash", "1" * 64),
    ],
)
def test_every_field_changes_the_digest(field: str, value: Any) -> None:
    assert event_digest(**{**BASE, field: value}) != event_digest(**BASE)


def test_digest_is_stable_across_key_order_and_time_zone() -> None:
    same = {**BASE, "payload": {"a": 1}, "created_at": datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))}
    assert event_digest(**same) == event_digest(**BASE)
    assert len(event_digest(**BASE)) == 64


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_canonical_bytes_survive_a_json_column_round_trip(value: Any) -> None:
    stored = json.loads(json.dumps(normalise_json(value)))
    assert canonical_json(stored) == canonical_json(value)
    assert json.loads(canonical_json(value)) == stored
    assert canonical_json(value) == canonical_json(json.loads(canonical_json(value)))
