"""Degenerate text: repetition loops, script drift, runs of non-language characters.

DESIGN.md's measured pitfall: masks alone can push a small model into a run of
emoji or digits once its preferred first tokens are masked. These checks run
on a step's text at its boundary (cheap string work) and feed the entropy
rule: a degenerate step is as uninformative as a high-entropy one.
"""

from __future__ import annotations

import itertools
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["degeneracy", "normalised_steps"]

_RULE_CHARS = set("-*=_#~.")
_DIGIT_RUN = 16
_SYMBOL_RUN = 8
_EMOJI_RUN = 4
_SAME_TOKEN_RUN = 6
_NGRAM = 3
_NGRAM_REPEATS = 3


def _script(ch: str) -> str:
    if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
        return "han"
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0].lower() if name else "unknown"


def _expected_script(language: str) -> str:
    return {"zh": "han", "ja": "han", "ru": "cyrillic", "el": "greek", "ar": "arabic"}.get(
        language[:2], "latin"
    )


def _non_language_run(text: str) -> str | None:
    """A long run of digits (numbers with separators stay well short of it), symbols or emoji."""
    digits, symbols, emoji = 0, 0, 0
    for ch in text:
        if ch.isspace() or ch.isalpha() or ch in _RULE_CHARS:
            digits = symbols = emoji = 0
            continue
        if ch.isdigit() or ch in ",.":
            digits += 1
            symbols = emoji = 0
        else:
            symbols += 1
            emoji = emoji + 1 if unicodedata.category(ch) == "So" else 0
            digits = 0
        if digits >= _DIGIT_RUN:
            return "a run of digits"
        if emoji >= _EMOJI_RUN:
            return "a run of emoji"
        if symbols >= _SYMBOL_RUN:
            return "a run of symbols"
    return None


def normalised_steps(steps: Iterable[str]) -> frozenset[str]:
    """Steps as the repetition check compares them (white space collapsed, lower case)."""
    return frozenset(" ".join(s.split()).lower() for s in steps)


def degeneracy(
    step_text: str,
    step_tokens: Sequence[int],
    earlier_steps: Sequence[str] | frozenset[str],
    language: str = "en",
) -> str | None:
    """Why the step is degenerate, or None. Deterministic, no model.

    ``earlier_steps``: the answer's earlier steps, as texts or already
    ``normalised_steps`` (a frozenset, which a caller judging many
    candidates of one beam computes once).
    """
    normalized = " ".join(step_text.split()).lower()
    long_enough = len(normalized) > 8 or sum(1 for c in normalized if _script(c) == "han") >= 2
    seen = earlier_steps if isinstance(earlier_steps, frozenset) else normalised_steps(earlier_steps)
    if long_enough and normalized in seen:
        return "repetition: the step repeats an earlier step"
    run = 1
    for a, b in itertools.pairwise(step_tokens):
        run = run + 1 if a == b else 1
        if run >= _SAME_TOKEN_RUN:
            return "repetition: one token repeated"
    grams = Counter(
        tuple(step_tokens[i : i + _NGRAM]) for i in range(len(step_tokens) - _NGRAM + 1)
    )
    if grams and max(grams.values()) >= _NGRAM_REPEATS:
        return "repetition: a phrase loops"
    reason = _non_language_run(step_text)
    if reason:
        return reason
    letters = [c for c in step_text if c.isalpha()]
    if len(letters) >= 4:
        expected = _expected_script(language)
        foreign = sum(1 for c in letters if _script(c) != expected)
        if expected == "latin" and foreign / len(letters) > 0.5:
            return "script drift: the step leaves the response's script"
        if (
            expected == "han"
            and sum(1 for c in letters if _script(c) == "han") == 0
            and len(letters) > 20
        ):
            return "script drift: the step leaves the response's script"
    return None
