"""An unfinished UTF-8 tail is judged by the characters it can still become, under each policy."""

from __future__ import annotations

from typing import Any

import pytest

from inference.decoder.token_controllers.charset import CharPolicy, tail_completes
from inference.decoder.vocab import vocab_tables


def _can_become(policy: CharPolicy, tail: bytes) -> bool:
    """Reference: some allowed character up to U+2FFFF encodes to more bytes than ``tail`` and starts with it."""
    return any(
        policy.ok_char(ch)
        and len(ch.encode("utf-8")) > len(tail)
        and ch.encode("utf-8").startswith(tail)
        for ch in _CHARACTERS
    )


_CHARACTERS = [chr(code) for code in range(0x80, 0x30000) if not 0xD800 <= code <= 0xDFFF]
TAILS = [b"\xc3", b"\xd0", b"\xe0\xa4", b"\xe4", b"\xe4\xb8", b"\xef\xbc", b"\xed\xa0", b"\xf0\x9f",
         b"\xf0\x9f\x98", b"\xf0\xa0", b"\x80"]


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
    # Beyond the BMP too: an emoji's or a CJK extension B character's first bytes.
    assert CharPolicy(no_comma=True).completes(tables, "😀".encode()[:2])
    assert CharPolicy(no_comma=True).completes(tables, "😀".encode()[:3])
    assert not CharPolicy(case="lower", scripts=frozenset({"LATIN"})).completes(tables, "𠀀".encode()[:3])
    assert not CharPolicy(no_comma=True).completes(tables, b"\xef\xbc\x8c")  # a whole character is no tail


def test_one_tail_rule_serves_the_policies_and_the_tallies_alike() -> None:
    """The four-byte tails complete for any test that admits some character there (one function)."""
    emoji = "🙂".encode()
    assert tail_completes(emoji[:1], lambda ch: ch == "🙂")
    assert tail_completes(emoji[:3], lambda ch: ch == "🙂")
    assert not tail_completes(emoji[:3], lambda ch: ch == "😀")  # 😀 shares two bytes, not three
    assert not tail_completes(emoji, lambda ch: True)  # a whole character is no tail
    assert not tail_completes(b"\x80", lambda ch: True)  # a stray continuation byte
    assert tail_completes("é".encode()[:1], str.isalpha)
