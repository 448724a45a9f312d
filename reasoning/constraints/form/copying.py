"""The text a copy asks the answer to start with, its stated change applied.

A copy with a stated change (``Copy.replace`` / ``case`` / ``drop``) names
one text a reader expects to see: the request with its first or last
sentence left out, then each ``(old, new)`` pair swapped (whole words,
without regard to case), then written in the asked case. The verifier and
the controller both read it from here, so the answer the decoder writes is
the one the verifier accepts.
"""

from __future__ import annotations

import re

from reasoning.constraints import textstats
from reasoning.constraints.form.model import Copy

__all__ = ["changed", "stated"]


def stated(copy: Copy) -> bool:
    """Whether ``copy`` says what its change is (so the changed text is known)."""
    return bool(copy.replace) or copy.case is not None or copy.drop is not None


def _drop(text: str, which: str) -> str:
    sentences = textstats.split_sentences(text)
    if len(sentences) <= 1:
        return ""
    if which == "first_sentence":
        first = sentences[0]
        return text[text.find(first) + len(first):].strip()
    last = sentences[-1]
    return text[: text.rfind(last)].strip()


def _swap(text: str, old: str, new: str) -> str:
    old = old.strip()
    if not old:
        return text
    pattern = rf"(?<!\w){re.escape(old)}(?!\w)"
    return re.sub(pattern, lambda _m: new.strip(), text, flags=re.IGNORECASE)


def changed(copy: Copy) -> str | None:
    """The text the answer starts with: ``copy.text`` unchanged without ``change``,
    the changed text for a stated change, None for an unstated one.

    >>> changed(Copy(text="Tell me about the cat. Be brief.", change=True, replace=(("cat", "dog"),), drop="last_sentence"))
    'Tell me about the dog.'
    """
    text = copy.text.strip()
    if not copy.change:
        return text
    if not stated(copy):
        return None
    if copy.drop is not None:
        text = _drop(text, copy.drop)
    for old, new in copy.replace:
        text = _swap(text, old, new)
    if copy.case == "upper":
        text = text.upper()
    elif copy.case == "lower":
        text = text.lower()
    return text
