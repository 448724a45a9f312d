"""Whether a piece of text opens or closes with an item of a class (``Position.word_class``).

"Begin each bullet with an emoji", "every sentence starts with a capital
letter", "start each list item with a verb" name a class of openings, not a
text. One judgement per class, shared by the position verifier and anything
else that asks the same question:

- ``emoji``: the piece's first (last) non-space character starts (ends) an
  emoji as the ``emoji`` package lists them (a closing mark or quote after
  the last one is left out);
- ``capital`` / ``lowercase``: its first (last) letter or digit is a letter
  of that case (a digit or a caseless script fails both);
- ``number``: its first (last) letter or digit is a digit;
- ``verb``: its first word is a verb as spaCy's English tagger reads it,
  either as written or as the verb of "you <word> ..." (an imperative such
  as "Buy milk" is often tagged a proper noun at the start of a line).
  Only the opening of a piece is judged for ``verb``; an ending never is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

import emoji

from reasoning.constraints.form.model import Predicate, WordClass

__all__ = ["CHARACTER_CLASSES", "CLASS_NAMES", "in_class"]

#: Each class as an English noun phrase ("starts with an emoji").
CLASS_NAMES: Mapping[str, str] = {"emoji": "an emoji", "capital": "a capital letter",
                                  "lowercase": "a lowercase letter", "number": "a digit", "verb": "a verb"}

#: The classes one character decides, each its test of the piece's first (last) letter or digit;
#: a mask can promise these by a token's first letter or digit.
CHARACTER_CLASSES: Mapping[str, Callable[[str], bool]] = {"capital": str.isupper, "lowercase": str.islower,
                                                          "number": str.isdigit}

_VERB_WORDS = 6  # words of the piece the tagger sees
_CLOSING_MARKS = " .!?。！？\"'”’)"  # what may follow a piece's last item ("Sunny today 🌞.")


def _edge_char(piece: str, op: Predicate) -> str:
    chars = [ch for ch in piece if ch.isalnum()]
    if not chars:
        return ""
    return chars[0] if op == "starts_with" else chars[-1]


def _emoji_edge(piece: str, op: Predicate) -> bool:
    stripped = piece.strip()
    if not stripped:
        return False
    found = emoji.emoji_list(stripped)
    if not found:
        return False
    if op == "starts_with":
        return int(found[0]["match_start"]) == 0
    return int(found[-1]["match_end"]) >= len(stripped.rstrip(_CLOSING_MARKS))


@lru_cache(maxsize=4096)
def _opens_with_verb(opening: str) -> bool:
    from reasoning.nlp import english

    words = opening.split()
    if not words or not words[0][:1].isalpha():
        return False
    nlp = english()
    as_written = nlp(opening, disable=["ner"])
    first = next((t for t in as_written if t.is_alpha), None)
    if first is not None and first.i == 0 and first.pos_ in ("VERB", "AUX"):
        return True
    imperative = nlp("you " + words[0].lower() + " " + " ".join(words[1:]), disable=["ner"])
    return len(imperative) > 1 and imperative[1].pos_ in ("VERB", "AUX") and imperative[1].tag_.startswith("VB")


def in_class(piece: str, op: Predicate, word_class: WordClass) -> bool:
    """Whether ``piece`` starts (``op="starts_with"``) or ends with an item of ``word_class``."""
    if word_class == "emoji":
        return _emoji_edge(piece, op)
    if word_class == "verb":
        if op != "starts_with":
            return False
        line = piece.strip().splitlines()[0] if piece.strip() else ""
        return _opens_with_verb(" ".join(line.split()[:_VERB_WORDS]))
    return CHARACTER_CLASSES[word_class](_edge_char(piece, op))
