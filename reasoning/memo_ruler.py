"""spaCy's attribute ruler with its single-token rules remembered per token signature.

Why: in ``en_core_web_sm`` the attribute ruler (tag map, morphology and lemma
exceptions: about 180 rules) is a ``Matcher`` run over every token of every
prompt, about a sixth of a short prompt's parse. Nearly all its rules look
at one token only, and at a few of that token's attributes (``TAG``,
``LOWER``, ``DEP``, ``IS_SPACE``) through equality, ``IN`` and ``NOT_IN``
tests; which of them match a token is therefore a function of those
attribute values, and a prompt's tokens repeat values seen before.

:class:`MemoisedAttributeRuler` wraps the pipeline's own
:class:`~spacy.pipeline.AttributeRuler` and guarantees the same annotations:

- a rule of one token whose every test is equality, ``IN`` or ``NOT_IN``
  ("simple") is answered from a memo keyed by the token's *signature*: for
  each attribute the simple rules test, its value if some rule names that
  value, else one shared "other" mark (no equality, ``IN`` or ``NOT_IN``
  test tells two unnamed values apart, so tokens of one signature match the
  same simple rules);
- a doc with a signature not yet in the memo runs the simple rules' own
  ``Matcher`` over the whole doc once and fills the memo from it;
- every other rule (several tokens, ``REGEX``, operators, other predicates)
  runs through a ``Matcher`` of its own on every doc, as before;
- each token then gets the matched rules' attributes in rule order, later
  rules overriding earlier ones, exactly as ``AttributeRuler.set_annotations``
  applies them (it sorts matches by rule, and each rule sets its target token only).

:func:`memoise` returns None for a ruler it cannot serve this way (an
attribute it cannot read as ``Doc.to_array`` does), and the pipeline keeps
the plain ruler. The memo is bounded (:data:`MAX_SIGNATURES`); past the
bound, unseen signatures are matched, not remembered.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from spacy import attrs as spacy_attrs
from spacy.matcher import Matcher
from spacy.pipeline import AttributeRuler
from spacy.tokens import Doc
from spacy.tokens._retokenize import set_token_attrs
from spacy.vocab import Vocab

__all__ = ["MAX_SIGNATURES", "MemoisedAttributeRuler", "memoise"]

#: The most token signatures remembered.
MAX_SIGNATURES = 200_000
#: Stands for every value of an attribute that no simple rule names.
_OTHER = -1
_SET_TESTS = frozenset({"IN", "NOT_IN"})


def _attr_id(name: str) -> int | None:
    value = spacy_attrs.IDS.get(name.upper())
    return int(value) if value is not None else None


def _named_values(vocab: Vocab, test: object) -> list[int] | None:
    """The hashed values an equality / IN / NOT_IN test names, or None for any other test."""
    if isinstance(test, bool):
        return [int(test)]
    if isinstance(test, str):
        return [int(vocab.strings.add(test))]
    if isinstance(test, Mapping) and test and set(test) <= _SET_TESTS:
        values: list[int] = []
        for members in test.values():
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                return None
            values += [int(vocab.strings.add(m)) for m in members]
        return values
    return None


def _simple(vocab: Vocab, pattern: Sequence[Mapping[str, Any]]) -> dict[int, list[int]] | None:
    """For a one-token pattern of equality / IN / NOT_IN tests: attribute id -> named values."""
    if len(pattern) != 1:
        return None
    named: dict[int, list[int]] = {}
    for name, test in pattern[0].items():
        attr = _attr_id(name)
        values = _named_values(vocab, test)
        if attr is None or values is None:  # "OP" has no attribute id: operators are not simple
            return None
        named[attr] = values
    return named


class MemoisedAttributeRuler:
    """Drop-in for an :class:`AttributeRuler` (see the module doc); call it on a doc."""

    def __init__(
        self,
        ruler: AttributeRuler,
        simple: Iterable[tuple[int, list[dict[str, Any]]]],
        rest: Iterable[tuple[int, list[dict[str, Any]]]],
        named: Mapping[int, frozenset[int]],
    ) -> None:
        self.ruler = ruler
        self._attrs: list[dict[Any, Any]] = list(ruler.attrs)
        self._indices: list[int] = list(ruler.indices)
        self._simple = Matcher(ruler.vocab)
        for rule, pattern in simple:
            self._simple.add(str(rule), [pattern])
        self._rest = Matcher(ruler.vocab)
        for rule, pattern in rest:
            self._rest.add(str(rule), [pattern])
        self._has_rest = len(self._rest) > 0
        self._attr_ids = sorted(named)
        self._named = [named[a] for a in self._attr_ids]
        self._memo: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def _signatures(self, doc: Doc) -> list[tuple[int, ...]]:
        if not self._attr_ids:
            return [() for _ in doc]
        columns: list[int | str] = list(self._attr_ids)
        # uint64 hashes; tolist() gives Python ints (a cast to int64 would wrap the large ones).
        rows = cast(list[list[int]], doc.to_array(columns).reshape(len(doc), len(columns)).tolist())
        named = self._named
        return [tuple(v if v in named[j] else _OTHER for j, v in enumerate(row)) for row in rows]

    def _matched(self, matcher: Matcher, doc: Doc) -> list[list[int]]:
        """Per token, the rules of ``matcher`` whose target it is (as set_annotations finds them)."""
        per_token: list[list[int]] = [[] for _ in doc]
        for match_id, start, end in matcher(doc, allow_missing=True, as_spans=False):
            rule = int(self.ruler.vocab.strings[match_id])
            target = range(start, end)[self._indices[rule]]
            per_token[target].append(rule)
        return per_token

    def __call__(self, doc: Doc) -> Doc:
        signatures = self._signatures(doc)
        memo = self._memo
        remembered = [memo.get(s) for s in signatures]
        known: list[tuple[int, ...]]
        if any(rules is None for rules in remembered):
            known = [tuple(sorted(set(rules))) for rules in self._matched(self._simple, doc)]
            with self._lock:
                for signature, rules in zip(signatures, known):
                    if len(memo) >= MAX_SIGNATURES:
                        break
                    memo.setdefault(signature, rules)
        else:
            known = [rules for rules in remembered if rules is not None]
        rest = self._matched(self._rest, doc) if self._has_rest else None
        for i, rules in enumerate(known):
            ordered: Sequence[int] = rules if rest is None or not rest[i] else sorted({*rules, *rest[i]})
            if ordered:
                token = doc[i]
                for rule in ordered:
                    set_token_attrs(token, self._attrs[rule])
        return doc


def memoise(ruler: object) -> MemoisedAttributeRuler | None:
    """``ruler`` with its simple rules memoised; None if it is no ``AttributeRuler`` or a
    simple rule's attribute cannot be read as ``Doc.to_array`` reads it."""
    if not isinstance(ruler, AttributeRuler):
        return None
    simple: list[tuple[int, list[dict[str, Any]]]] = []
    rest: list[tuple[int, list[dict[str, Any]]]] = []
    named: dict[int, set[int]] = {}
    for rule, entry in enumerate(ruler.patterns):
        patterns: list[list[dict[str, Any]]] = list(entry["patterns"])  # type: ignore[arg-type]
        for pattern in patterns:
            tests = _simple(ruler.vocab, pattern)
            if tests is None:
                rest.append((rule, pattern))
                continue
            simple.append((rule, pattern))
            for attr, values in tests.items():
                named.setdefault(attr, set()).update(values)
    probe = Doc(ruler.vocab, words=["probe"])
    try:
        probe.to_array(sorted(named))
    except (ValueError, KeyError, TypeError):
        return None
    return MemoisedAttributeRuler(ruler, simple, rest, {a: frozenset(v) for a, v in named.items()})
