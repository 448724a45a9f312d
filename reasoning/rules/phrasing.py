"""Facts of a case said in words, English and Chinese, from the ontology's own labels.

The grounds of a decision and the why-not of the nearest rule say RDF
triples as clauses: class membership ("Jon Doe is a politically exposed
person" / "Jon Doe是政治公众人物"), relations ("Acme Ltd sent funds to Jon
Doe"), case inputs ("the amount is EUR 2,000,000") and other literal
values. Every word that names something comes from the ontology's labels
(``rdfs:label``, ``skos:prefLabel``, ``skos:altLabel`` in the language, the
English one, then the local name) or from the request (an individual it
names is named in its words, in the language they are written in: the
label it matched, the name of a new individual); the connecting words are
the few of this module, the same for every domain. A label with a gap
("sent ... to", "向…转账") takes the object in the gap when nothing follows
it, else the object follows the label.

Guarantees: a clause never starts with a capital it did not have (callers
capitalise a sentence's first letter); amounts are grouped by thousands
with the case's currency in front when the case states one; dates are ISO.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Final

from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseGraph
from reasoning.evidence.terms import OWL_THING, RDF_TYPE, TV, is_iri, is_literal, literal_parts

__all__ = ["Clause", "Phraser", "cite_rules", "join_clauses", "sentence"]

_GAP: Final = re.compile(r"\s*(?:\.\.\.|…)\s*")
_CASE_CLASS: Final = f"<{TV}Case>"
_MENTIONS: Final = f"<{TV}mentions>"
_HAN: Final = re.compile(r"[\u3400-\u9fff]")
_DETERMINERS: Final = frozenset(("the", "a", "an", "this", "that", "our", "its", "their"))
_VOWEL_SOUND: Final = re.compile(r"^(?:[aeio]|u(?!ni|se|su)|h(?:our|onest))", re.IGNORECASE)


class Clause:
    """One fact said as ``subject`` + ``predicate`` phrase (so clauses of one subject share it)."""

    __slots__ = ("predicate", "subject")

    def __init__(self, subject: str, predicate: str) -> None:
        self.subject, self.predicate = subject, predicate


class Phraser:
    """Says the triples of one case in ``en`` or ``zh`` (see the module doc)."""

    def __init__(self, lexicon: CaseLexicon, case: CaseGraph) -> None:
        self.lexicon = lexicon
        self.case = case
        # An individual the request names is named as the request names it (its own words, one
        # of the ontology's labels for an ontology individual), in the language it is written in.
        self._names: dict[str, dict[str, str]] = {"en": {}, "zh": {}}
        for e in case.entities:
            name = " ".join(e.label.split())
            if not name:
                continue
            # A new individual has no other name; an ontology one keeps its label in the other language.
            langs = ("en", "zh") if e.is_new else ("zh",) if _HAN.search(name) else ("en",)
            for lang in langs:
                self._names[lang].setdefault(e.term, name)
        self._kinds = {spec.term: spec for spec in lexicon.inputs}
        self._currency = next(
            (
                literal_parts(f.object)[0]
                for f in case.facts
                if f.subject == case.case
                and (spec := self._kinds.get(f.predicate)) is not None
                and spec.kind == "Currency"
                and is_literal(f.object)
            ),
            None,
        )
        self._case_kind = next(
            (
                f.object
                for f in case.facts
                if f.subject == case.case and f.predicate == RDF_TYPE and f.origin == "class"
            ),
            None,
        )

    # --- names -------------------------------------------------------------------------

    def name(self, term: str, lang: str, names: Mapping[str, str] | None = None) -> str:
        """The name of an individual, a class or a property (the case node: "this case" / "本案");
        ``names`` says some terms otherwise (a rule's variables: "someone named in the case")."""
        if names and term in names:
            return names[term]
        if term == self.case.case:
            if self._case_kind is not None:
                label = self.lexicon.label(self._case_kind, lang)
                return "本" + label if lang == "zh" else "this " + label
            return "本案" if lang == "zh" else "this case"
        named = self._names["zh" if lang == "zh" else "en"]
        if term in named:
            return named[term]
        return self.lexicon.label(term, lang) if is_iri(term) else self.value(term, None, lang)

    def kind_of(self, predicate: str) -> str | None:
        """The ``tv:CaseInput`` kind of ``predicate`` (``MoneyAmount``, ``Date``, ...), if it is one."""
        spec = self._kinds.get(predicate)
        return spec.kind if spec is not None else None

    def unit_of(self, predicate: str) -> str | None:
        """The ``tv:unit`` of a ``tv:Length`` input (``mm``, ``cm``, ``m``)."""
        spec = self._kinds.get(predicate)
        return spec.unit if spec is not None else None

    def value(self, literal: str, kind: str | None, lang: str, unit: str | None = None) -> str:
        """A literal as the answer writes it (amounts grouped, with the case's currency; a
        length with its unit)."""
        text = literal_parts(literal)[0] if is_literal(literal) else literal
        datatype = literal_parts(literal)[2] if is_literal(literal) else None
        numeric = kind in ("MoneyAmount", "Percentage", "Count", "Length") or (
            datatype is not None and datatype.rsplit("#", 1)[-1] in ("decimal", "integer", "double", "float")
        )
        if numeric:
            text = _number(text)
        if kind == "MoneyAmount" and self._currency:
            return f"{self._currency} {text}"
        if kind == "Percentage":
            return text + "%"
        if kind == "Length" and unit:
            return f"{text} {unit}"
        return text

    # --- clauses -----------------------------------------------------------------------

    def clause(self, subject: str, predicate: str, obj: str, lang: str,
               names: Mapping[str, str] | None = None) -> Clause | None:
        """One triple as a clause; None for what says nothing (``owl:Thing``, the case's own type)."""
        zh = lang == "zh"
        subj = self.name(subject, lang, names)
        if predicate == RDF_TYPE:
            if obj in (OWL_THING, _CASE_CLASS) or not is_iri(obj):
                return None
            label = self.lexicon.label(obj, lang)
            return Clause(subj, "是" + label if zh else "is " + _article(label) + " " + label)
        if predicate == _MENTIONS:
            # The case names it and no other stated fact says more ("this case concerns X").
            return Clause(subj, "涉及" + self.name(obj, lang, names) if zh else "concerns " + self.name(obj, lang, names))
        label = self.lexicon.label(predicate, lang)
        if is_literal(obj):
            value = self.value(obj, self.kind_of(predicate), lang, self.unit_of(predicate))
            if subject == self.case.case:
                # A case input: "the amount is EUR 2,000,000" / "金额为EUR 2,000,000".
                return Clause(label if zh else "the " + label, "为" + value if zh else "is " + value)
            return Clause(subj, "的" + label + "为" + value if zh else "has " + label + " " + value)
        target = self.name(obj, lang, names)
        if not zh and is_iri(obj) and obj != self.case.case and not (names and obj in names):
            target = _definite(target)
        return Clause(subj, _fill(label, target, zh))


def _fill(label: str, obj: str, zh: bool) -> str:
    """A property label with its object: in the gap when nothing follows it, else after."""
    parts = _GAP.split(label, maxsplit=1)
    if len(parts) == 2:
        head, tail = parts
        if zh:
            return head + obj + tail
        return f"{head} {obj} {tail}".strip() if not tail else f"{head} {tail} {obj}".strip()
    return label + obj if zh else f"{label} {obj}"


def _definite(name: str) -> str:
    """An individual named by a common noun phrase takes "the" ("listed on the PEP list"); a
    proper name (every word capitalised: "Port Belmar", "Jon Doe") does not."""
    words = name.split()
    if not words or words[0].lower() in _DETERMINERS or not any(w[:1].islower() for w in words):
        return name
    return "the " + name


def _article(label: str) -> str:
    return "an" if _VOWEL_SOUND.match(label) else "a"


def _number(text: str) -> str:
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return text
    if value == value.to_integral_value():
        return f"{int(value):,}"
    return f"{value.normalize():,f}"


def join_clauses(clauses: Sequence[Clause], lang: str) -> str:
    """Clauses as one sentence body: clauses of one subject share it ("X is a P and is listed on L")."""
    zh = lang == "zh"
    groups: dict[str, list[str]] = {}
    for clause in clauses:
        groups.setdefault(clause.subject, [])
        if clause.predicate not in groups[clause.subject]:
            groups[clause.subject].append(clause.predicate)
    if zh:
        return "；".join(subject + "，".join(preds) for subject, preds in groups.items())
    said = [subject + " " + _and(preds) for subject, preds in groups.items()]
    return "; ".join(said) if any(len(p) > 1 for p in groups.values()) else _and(said)


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def cite_rules(rule_ids: Sequence[str], lang: str) -> str:
    """The rules in brackets after a sentence's body: " (R1, R2)" / "（R1、R2）"."""
    if not rule_ids:
        return ""
    return "（" + "、".join(rule_ids) + "）" if lang == "zh" else " (" + ", ".join(rule_ids) + ")"


def sentence(body: str, lang: str, *, rules: Sequence[str] = (), evidence: Sequence[str] = ()) -> str:
    """A complete sentence: the body with its first letter raised, the rules and evidence ids cited."""
    zh = lang == "zh"
    body = body.strip().rstrip(".。;；")
    if body and not zh:
        body = body[0].upper() + body[1:]
    ids = "".join(f"[{i}]" for i in evidence) if zh else "".join(f" [{i}]" for i in evidence)
    return body + cite_rules(rules, lang) + ids + ("。" if zh else ".")
