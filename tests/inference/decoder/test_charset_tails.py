"""An unfinished UTF-8 tail is judged by the characters it can still become, under each policy."""

from __future__ import annotations

from typing import Any

import pytest

from inference.decoder.controllers.charset import CharPolicy
from inference.decoder.vocab import vocab_tables


def _can_become(policy: CharPolicy, tail: bytes) -> bool:
    """Reference: some allowed BMP character encodes to more bytes than ``tail`` and starts with it."""
    return any(
        policy.ok_char(chr(code))
        and len(chr(code).encode("utf-8")) > len(tail)
        and chr(code).encode("utf-8").startswith(tail)
        for code in range(0x80, 0x10000)
        if not 0xD800 <= code <= 0xDFFF
    )


TAILS = [b"\xc3", b"\xd0", b"\xe0\xa4", b"\xe4", b"\xe4\xb8", b"\xef\xbc", b"\xed\xa0", b"\xf0\x9f", b"\x80"]


@pytest.mark.parametrize(
    "policy",
    [
        CharPolicy(case="lower"),
        CharPolicy(case="upper"),
        CharPolicy(no_comma=True),
        CharPolicy(scripts=frozenset({"CYRILLIC"})),
        CharPolicy(case="upper", scripts=frozenset({"LATIN"})),
    ],
)
def test_a_tail_passes_when_it_can_still_become_an_allowed_character(tokenizer: Any, policy: CharPolicy) -> None:
    tables = vocab_tables(tokenizer)
    for tail in TAILS:
        assert policy.completes(tables, tail) == _can_become(policy, tail), tail
    # Kept per tail: the second answer is the first.
    assert policy.completes(tables, b"\xe4") == policy.completes(tables, b"\xe4")


def test_a_latin_policy_refuses_a_han_tail_and_a_cyrillic_one_takes_its_own(tokenizer: Any) -> None:
    tables = vocab_tables(tokenizer)
    latin, cyrillic = CharPolicy(scripts=frozenset({"LATIN"})), CharPolicy(scripts=frozenset({"CYRILLIC"}))
    assert not latin.completes(tables, "中".encode()[:2])
    assert latin.completes(tables, "é".encode()[:1])
    assert cyrillic.completes(tables, "д".encode()[:1])
    assert not CharPolicy(no_comma=True).completes(tables, "😀".encode()[:2])  # beyond the BMP
    assert not CharPolicy(no_comma=True).completes(tables, b"\xef\xbc\x8c")  # a whole character is no tail
