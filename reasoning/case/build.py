"""The case graph of one request: :func:`build_case`.

What is read, in this order (all of it general over any ontology: the
words come from the ontology's labels, plus English and Chinese function
words):

1. **Entities**: mentions linked to ontology individuals (the evidence
   linker), and new individuals for names the ontology does not know
   (spaCy's English named entities; jieba's name tags in Chinese), each
   ``<case> tv:mentions <entity>``. Noun phrases that a class phrase
   describes ("the customer is a PEP", "客户是政治公众人物") become new
   individuals too.
2. **Typed literals** (:mod:`reasoning.case.quantities`), each on the case
   node through every ``tv:CaseInput`` of its kind; a ``tv:Date`` input
   marked ``tv:defaultsToEvaluationDate`` takes the evaluation date when the
   request states none.
3. **Relations**: a property label (or alternative label, with an optional
   "..." gap) found between two entity mentions of one sentence; the
   subject is the nearest entity before it that is not in parentheses, the
   object the entity in the gap or the first after it, both checked
   against the property's domain and range. "X (Y)" states the one property
   whose range holds Y and whose domain holds X.
4. **Class membership**: a class phrase after an entity and a copula or
   apposition ("Jon Doe, a politically exposed person", "X是一家公司"),
   or just before one ("the PEP Jon Doe"). A class phrase attached to no
   entity types the case itself ("this payment").
5. **Typing**: new individuals get the domain and range classes of their
   relations and every superclass.

A negation cue between the parts (not, no, never, 不, 非, 没有, ...) drops
the statement. Every fact keeps its span; a fact read inside a premise's
span carries that premise's id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Final

from spacy.tokens import Doc

from reasoning.case.lexicon import CaseLexicon, PropertySpec
from reasoning.case.model import CaseEntity, CaseFact, CaseGraph
from reasoning.case.quantities import Quantity, find_quantities, length_in
from reasoning.case.vocabulary import TV_CASE, TV_MENTIONS
from reasoning.constraints.model import Premise
from reasoning.evidence.linking import link_mentions
from reasoning.evidence.model import LinkedEntity
from reasoning.evidence.terms import RDF_TYPE, RDFS_LABEL, encode_literal, iri

__all__ = ["build_case"]

_XSD: Final = "http://www.w3.org/2001/XMLSchema#"
_CJK_RE: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_SENTENCE_END: Final = re.compile(r"[.!?。！？；;\n]+(?=\s|$|[^\d])")
_EN_NEG: Final = re.compile(r"\b(?:not|no|never|neither|nor|none|without)\b|n't\b", re.IGNORECASE)
_ZH_NEG: Final = re.compile(r"不|非|没有|未|无")
_SKIP_WORDS: Final = frozenset(
    [
        "the",
        "a",
        "an",
        "our",
        "their",
        "his",
        "her",
        "its",
        "this",
        "that",
        "these",
        "those",
        "who",
        "which",
        "whose",
    ]
)
_EN_COPULA: Final = re.compile(
    r"^[\s,(]*(?:(?:who|which|that)\s+)?(?:(?:is|was|are|were|be|been|being|also|now|still|"
    r"not|never|no\s+longer)\s+)*(?:(?:a|an|the|one|our)\s+)?(?:(?:of|among)\s+(?:the|our)\s+)?[\s,]*$",
    re.IGNORECASE,
)
_EN_BEFORE: Final = re.compile(r"^\s*(?:(?:the|a|an|our|their)\s+)?\s*$", re.IGNORECASE)
_ZH_COPULA: Final = re.compile(
    r"^[\s，,（(]*(?:也|仍|现在)?(?:不是|并非|不属于|是|为|属于)?(?:一(?:家|名|位|个|间))?\s*$"
)
_ZH_BEFORE: Final = re.compile(r"^[\s的]*$")
_EN_SUBJECT: Final = re.compile(
    r"(?:^|[\s,;])(?P<np>(?:the|this|that|our|their)\s+(?:[A-Za-z][\w-]*\s+){0,2}[A-Za-z][\w-]*)"
    r"\s+(?:is|was|are|were)\s+(?:not\s+|never\s+)?(?:(?:a|an|the|one)\s+)?(?:of\s+(?:the|our)\s+)?$",
    re.IGNORECASE,
)
_ZH_SUBJECT: Final = re.compile(
    r"(?P<np>[\u4e00-\u9fff]{1,8})(?:不是|并非|是|为|属于)(?:一(?:家|名|位|个|间))?$"
)
_RELATIVE: Final = re.compile(r"[^\W_]", re.UNICODE)
_ZH_NAME: Final = re.compile(r"[\u4e00-\u9fff·]{2,12}")
_EN_NAME: Final = re.compile(r"(?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+){0,3}")
_NEW_LABELS: Final = frozenset({"PERSON", "ORG", "GPE", "NORP", "FAC", "LOC"})
_ZH_NAME_FLAGS: Final = frozenset({"nr", "nrt", "nrfg", "nt", "ns"})
_MAX_GAP_WORDS: Final = 8
_PRONOUN: Final = re.compile(
    r"\b(?:he|she|they|it|him|her|them)\b|他|她|它|该公司|该客户", re.IGNORECASE
)
_SUBJECT_PRONOUN: Final = re.compile(
    r"\s*(?:(?:he|she|they|it)(?:\s+(?:also|then|later|has|had|have|was|were|is))*|"
    r"他|她|它|他们|她们|该公司|该客户)\s*",
    re.IGNORECASE,
)
_OBJECT_PRONOUN: Final = re.compile(r"\s*(?:him|her|them|it)\b", re.IGNORECASE)
_OBJECT_PRONOUN_GAP: Final = re.compile(
    r"\s*(?:him|her|them|it|他|她|它|他们|她们|该公司|该客户)\s*", re.IGNORECASE
)
#: A Chinese numeral with its measure word ("一笔", "两份", "几项"), optional.
_ZH_MEASURE: Final = "(?:[一二两三四五六七八九十几数多]+[笔份项个次宗批])?"
_EN_LOCATIVE: Final = re.compile(r"\s*,?\s*(?:in|from)\s+(?:the\s+)?", re.IGNORECASE)
_ZH_LOCATIVE: Final = re.compile(r"\s*的\s*")
#: Regular English inflection endings, longest first (``_same_word``).
_INFLECTIONS: Final = ("ing", "ies", "ied", "es", "ed", "e", "s", "d")
_MAX_GAP_CHARS: Final = 24
_NER_HINTS: Final = {
    "PERSON": ("person", "individual", "people"),
    "ORG": ("organisation", "organization", "company", "institution"),
}


class _Mention:
    __slots__ = ("end", "is_class", "ner", "paren", "start", "term", "text")

    def __init__(
        self, term: str, start: int, end: int, text: str, is_class: bool, ner: str | None = None
    ) -> None:
        self.term, self.start, self.end, self.text = term, start, end, text
        self.is_class, self.ner = is_class, ner
        self.paren = False


def build_case(
    lexicon: CaseLexicon,
    text: str,
    *,
    premises: Sequence[Premise] = (),
    doc: Doc | None = None,
    linked: Sequence[LinkedEntity] | None = None,
    evaluation_date: date | None = None,
) -> CaseGraph:
    """The case graph of ``text`` over the ontology of ``lexicon``.

    ``linked`` reuses the evidence stage's links (they are computed when
    None); ``doc`` is the English spaCy doc when the caller has one;
    ``evaluation_date`` (default today) fills date inputs the request leaves out.
    """
    today = (evaluation_date or date.today()).isoformat()
    digest = hashlib.sha256(f"{lexicon.index.version}\n{text}".encode()).hexdigest()[:16]
    case = iri(f"urn:tenet:case:{digest}")
    builder = _Builder(lexicon, text, case, premises)
    quantities = find_quantities(text)
    builder.quantities = quantities
    if linked is None:
        linked = link_mentions(lexicon.index, text, doc=doc)
    mentions = builder.mentions(linked, quantities, doc)
    builder.all_mentions = mentions
    builder.inputs(quantities, today)
    for sentence_start, sentence_end in _sentences(text):
        inside = [m for m in mentions if sentence_start <= m.start and m.end <= sentence_end]
        builder.appositions(inside)
        builder.relations(inside, sentence_start, sentence_end)
        builder.late_appositions(mentions)
        builder.classes(inside, sentence_start)
    return builder.graph(today)


class _Builder:
    def __init__(
        self, lexicon: CaseLexicon, text: str, case: str, premises: Sequence[Premise]
    ) -> None:
        self.lex, self.text, self.case = lexicon, text, case
        self.premises = [
            (p.source.start, p.source.end, p.id) for p in premises if p.source is not None
        ]
        self.facts: dict[tuple[str, str, str], CaseFact] = {}
        self.entities: dict[str, CaseEntity] = {}
        self.case_types: dict[str, set[str]] = {}
        self.new_count = 0
        self.new_by_label: dict[str, str] = {}
        self.quantities: tuple[Quantity, ...] = ()
        self.pending_appositions: list[tuple[_Mention, int, int]] = []
        self.all_mentions: list[_Mention] = []
        self.earlier: list[_Mention] = []
        self.sentence_classes: list[_Mention] = []
        self.add(case, RDF_TYPE, TV_CASE, "mention", None, None)

    # --- facts -----------------------------------------------------------------------

    def premise_at(self, start: int | None, end: int | None) -> str | None:
        if start is None or end is None:
            return None
        for p_start, p_end, pid in self.premises:
            if p_start <= start and end <= p_end:
                return pid
        return None

    def add(self, s: str, p: str, o: str, origin: str, start: int | None, end: int | None) -> None:
        premise = self.premise_at(start, end)
        key = (s, p, o)
        current = self.facts.get(key)
        if current is not None and (current.premise_id is None or premise is not None):
            return
        self.facts[key] = CaseFact(
            subject=s,
            predicate=p,
            object=o,
            origin=origin,
            start=start,
            end=end,
            text=self.text[start:end] if start is not None and end is not None else "",
            premise_id=premise,
        )
        if p == RDF_TYPE and s in self.case_types:
            self.case_types[s].add(o)

    def relate(self, s: str, p: str, o: str, origin: str, start: int, end: int) -> None:
        """State a relation and, with the same span, each of its ``owl:inverseOf`` inverses
        ("X received ... from Y" also states "Y sent ... to X" when the ontology says so)."""
        self.add(s, p, o, origin, start, end)
        for inverse in sorted(self.lex.inverses.get(p, ())):
            self.add(o, inverse, s, "inverse", start, end)

    def types_of(self, term: str) -> set[str]:
        return self.lex.types.get(term, set()) | self.case_types.get(term, set())

    def add_type(self, term: str, cls: str, origin: str, start: int, end: int) -> None:
        if term not in self.case_types:
            return
        for each in sorted(self.lex.closure({cls})):
            self.add(term, RDF_TYPE, each, origin if each == cls else "typing", start, end)

    # --- 1. entities -------------------------------------------------------------------

    def mentions(
        self, linked: Sequence[LinkedEntity], quantities: Sequence[Quantity], doc: Doc | None
    ) -> list[_Mention]:
        spans = [(q.start, q.end) for q in quantities]
        found: list[_Mention] = []
        for link in sorted(linked, key=lambda item: (-(item.end - item.start), item.start)):
            term = iri(link.iri)
            if (
                term in self.lex.property_terms
                or term in self.lex.actions
                or term.startswith("<http://www.w3.org/")
            ):
                continue
            for start in _occurrences(self.text, link.mention):
                end = start + len(link.mention)
                if not _overlaps(start, end, spans + [(m.start, m.end) for m in found]):
                    found.append(_Mention(term, start, end, link.mention, link.is_class))
        taken = [(m.start, m.end) for m in found] + spans
        for start, end, label in _names(self.text, doc):
            if _overlaps(start, end, taken):
                continue
            found.append(self.new_entity(self.text[start:end], start, end, label))
            taken.append((start, end))
        found.sort(key=lambda m: m.start)
        for i, mention in enumerate(found):
            before = self.text[: mention.start].rstrip()
            after = self.text[mention.end :].lstrip()
            if before.endswith(("(", "（")) and after.startswith((")", "）")):
                mention.paren = True
            if not mention.is_class:
                self.mention(mention)
        return found

    def new_entity(self, label: str, start: int, end: int, ner: str | None) -> _Mention:
        """A new individual; a name already seen in the request is the same individual."""
        key = " ".join(label.lower().split())
        known = self.new_by_label.get(key)
        if known is not None:
            return _Mention(known, start, end, label, False, ner)
        self.new_count += 1
        term = iri(f"{self.case[1:-1]}:e{self.new_count}")
        self.new_by_label[key] = term
        self.case_types.setdefault(term, set())
        lang = "zh" if _CJK_RE.search(label) else "en"
        self.add(term, RDFS_LABEL, encode_literal(label, lang=lang), "label", start, end)
        self.entities[term] = CaseEntity(term=term, label=label, start=start, end=end, is_new=True)
        return _Mention(term, start, end, label, False, ner)

    def mention(self, mention: _Mention) -> None:
        self.entities.setdefault(
            mention.term,
            CaseEntity(term=mention.term, label=mention.text, start=mention.start, end=mention.end),
        )
        self.add(self.case, TV_MENTIONS, mention.term, "mention", mention.start, mention.end)

    # --- 2. typed literals -------------------------------------------------------------

    def inputs(self, quantities: Sequence[Quantity], today: str) -> None:
        dated = False
        for quantity in quantities:
            for spec in self.lex.inputs:
                value = _input_value(spec.kind, spec.unit, quantity)
                if value is not None:
                    dated = dated or spec.kind == "Date"
                    self.add(self.case, spec.term, value, "input", quantity.start, quantity.end)
        if dated:
            return
        for spec in self.lex.inputs:
            if spec.kind == "Date" and spec.defaults_to_today:
                self.add(
                    self.case,
                    spec.term,
                    encode_literal(today, datatype=_XSD + "date"),
                    "default",
                    None,
                    None,
                )

    # --- 3. relations ------------------------------------------------------------------

    def compatible(self, term: str, classes: frozenset[str]) -> bool:
        if not classes:
            return True
        types = self.types_of(term)
        if term in self.case_types:
            return not any(self.lex.disjoint.get(t, set()) & classes for t in types) and not any(
                self.lex.disjoint.get(c, set()) & types for c in classes
            )
        return classes <= types  # rdfs:domain and rdfs:range are intersections

    def relations(self, mentions: list[_Mention], lo: int, hi: int) -> None:
        entities = [m for m in mentions if not m.is_class]
        self.sentence_classes = [m for m in mentions if m.is_class]
        # Entities of earlier sentences, what a pronoun can refer to: the most recent
        # sentence first, and in it the first entity (its subject) first.
        self.earlier = [
            m
            for a, b in reversed([span for span in _sentences(self.text) if span[1] <= lo])
            for m in self.all_mentions
            if a <= m.start and m.end <= b and not m.is_class and not m.paren
        ]
        pronoun = bool(self.earlier) and bool(_PRONOUN.search(self.text[lo:hi]))
        if len(entities) < (1 if pronoun else 2):
            return
        matches = sorted(
            (
                (start, end, gap, spec)
                for spec in self.lex.properties
                for label in spec.labels
                for start, end, gap in _label_matches(self.text, lo, hi, label.parts, label.zh)
            ),
            key=lambda item: (item[0], -item[1]),
        )
        objects: set[int] = set()
        for start, end, gap, spec in matches:
            obj = self.relation(spec, entities, start, end, gap, objects)
            if obj is not None:
                objects.add(id(obj))

    def relation(
        self,
        spec: PropertySpec,
        entities: list[_Mention],
        start: int,
        end: int,
        gap: tuple[int, int] | None,
        objects: set[int],
    ) -> _Mention | None:
        """Add the relation a label match states; returns its object (None when none)."""
        before = [
            m
            for m in reversed(entities)
            if m.end <= start and not m.paren and self.compatible(m.term, spec.domains)
        ]
        # An entity that is already the object of an earlier relation and is followed by
        # nothing but punctuation ("a company registered in Panama, sent ...") closes an
        # apposition: the subject is an entity before it, when there is one.
        subject = next(
            (
                m
                for m in before
                if id(m) not in objects or _RELATIVE.search(self.text[m.end : start])
            ),
            before[0] if before else None,
        )
        if subject is None:
            subject = self._pronoun_referent(start, spec.domains, subject_position=True)
        if subject is None:
            subject = self._clause_subject(start)
            if subject is not None:
                entities.append(subject)
                entities.sort(key=lambda m: m.start)
        if subject is None and self._case_fits_before(start, spec.domains):
            # "a wire transfer from X to Y": the thing the request is about is the subject.
            subject = _Mention(self.case, start, start, "", False)
        if subject is None:
            return None
        in_gap = [
            m
            for m in entities
            if gap is not None
            and gap[0] <= m.start
            and m.end <= gap[1]
            and m.term != subject.term
            and not m.paren
        ]
        if gap is not None and not in_gap:
            named = self._gap_name(gap)
            if named is not None:
                entities.append(named)
                entities.sort(key=lambda m: m.start)
                in_gap = [named]
        after = [m for m in entities if m.start >= end and m.term != subject.term]
        candidates = in_gap[:1] or after[:1]
        obj = candidates[0] if candidates else None
        if obj is None:  # "sent EUR 5 to him", "向他转账": an entity of an earlier sentence
            obj = self._pronoun_referent(
                gap[0] if gap is not None else end,
                spec.ranges,
                subject_position=False,
                gap=gap,
                exclude=subject.term,
            )
        if obj is None or not self.compatible(obj.term, spec.ranges):
            return None
        if _negated(self.text[subject.end : obj.end if obj in in_gap else obj.start]):
            return None
        span_start, span_end = subject.start, max(obj.end, end)
        self.relate(subject.term, spec.term, obj.term, "relation", span_start, span_end)
        for cls in spec.domains:
            self.add_type(subject.term, cls, "typing", span_start, span_end)
        for cls in spec.ranges:
            self.add_type(obj.term, cls, "typing", span_start, span_end)
        return obj

    def _case_fits_before(self, at: int, domains: frozenset[str]) -> bool:
        """Whether a class phrase of the sentence before ``at`` names a class the property's
        domain holds ("a wire transfer ... from X"): the request's case is then its subject."""
        return bool(domains) and any(
            m.end <= at and domains <= self.lex.closure({m.term}) for m in self.sentence_classes
        )

    def _pronoun_referent(
        self,
        at: int,
        classes: frozenset[str],
        *,
        subject_position: bool,
        gap: tuple[int, int] | None = None,
        exclude: str = "",
    ) -> _Mention | None:
        """The entity a personal pronoun refers to, or None when there is no pronoun.

        As subject, the pronoun is all the clause holds before the label
        ("He received ... from X", "他收到…"); as object, it fills the
        label's gap or follows the label ("... to him", "向他转账"). It
        refers to the first entity of the most recent earlier sentence that
        the property's domain (or range) admits (that sentence's subject
        when it is admitted).
        """
        if subject_position:
            clause_start = max(self.text.rfind(ch, 0, at) for ch in "，,。；;.!?！？\n") + 1
            if not _SUBJECT_PRONOUN.fullmatch(self.text[clause_start:at]):
                return None
        elif gap is not None:
            if not _OBJECT_PRONOUN_GAP.fullmatch(self.text[gap[0] : gap[1]]):
                return None
        elif not _OBJECT_PRONOUN.match(self.text[at:]):
            return None
        return next(
            (m for m in self.earlier if m.term != exclude and self.compatible(m.term, classes)),
            None,
        )

    def _clause_subject(self, label_start: int) -> _Mention | None:
        """A new individual for a name opening the clause of a label, or None.

        "猎户货运有限公司（英国）向…转账", "Orion Freight Ltd (United Kingdom)
        sent ...": the text from the clause start to the label, without a
        parenthetical or a quantity, is the subject's name when it is a run
        of Chinese characters or of capitalised words.
        """
        clause_start = max(self.text.rfind(ch, 0, label_start) for ch in "，,。；;\n") + 1
        raw = self.text[clause_start:label_start]
        cut = re.sub(r"[（(][^）)]*[）)]\s*$", "", raw)
        for q in self.quantities:
            if clause_start <= q.start and q.end <= label_start:
                cut = cut.replace(q.text, "")
        name = cut.strip(" \t，,")
        if not (_ZH_NAME.fullmatch(name) or _EN_NAME.fullmatch(name)):
            return None
        start = clause_start + raw.index(name)
        entity = self.new_entity(name, start, start + len(name), None)
        self.mention(entity)
        paren = re.search(r"[（(]([^）)]*)[）)]\s*$", raw)
        if paren is not None:
            self.pending_appositions.append(
                (entity, clause_start + paren.start(1), clause_start + paren.end(1))
            )
        return entity

    def _gap_name(self, gap: tuple[int, int]) -> _Mention | None:
        """A new individual for a name filling a label's gap ("向林娜转账": 林娜), or None.

        Only a short run of Chinese characters or of capitalised words, with
        nothing else in the gap, counts as a name.
        """
        raw = self.text[gap[0] : gap[1]]
        paren = re.search(r"[（(]([^）)]*)[）)]\s*$", raw)
        text = (raw[: paren.start()] if paren is not None else raw).strip()
        if not text or any(_overlaps(gap[0], gap[1], [(q.start, q.end)]) for q in self.quantities):
            return None
        if not (_ZH_NAME.fullmatch(text) or _EN_NAME.fullmatch(text)):
            return None
        start = gap[0] + raw.index(text)
        entity = self.new_entity(text, start, start + len(text), None)
        self.mention(entity)
        if paren is not None:  # "收到X（英国）的汇款": X's apposition, read once mentions are known
            self.pending_appositions.append(
                (entity, gap[0] + paren.start(1), gap[0] + paren.end(1))
            )
        return entity

    def late_appositions(self, mentions: list[_Mention]) -> None:
        """Appositions of subjects created while reading relations ("X（英国）向…")."""
        for owner, start, end in self.pending_appositions:
            inner = next(
                (m for m in mentions if m.start == start and m.end == end and not m.is_class), None
            )
            if inner is not None:
                self._apposition(owner, inner)
        self.pending_appositions.clear()

    def appositions(self, mentions: list[_Mention]) -> None:
        """ "X (Y)", and the locative forms "X in Y", "X from Y" and "Y的X" ("Omega Ltd in the
        United Kingdom", "德国的彼得"): each states the one property whose range holds Y."""
        for i, mention in enumerate(mentions):
            if i == 0:
                continue
            owner = mentions[i - 1]
            if owner.is_class or mention.is_class:
                continue
            between = self.text[owner.end : mention.start]
            if mention.paren and not owner.paren:
                self._apposition(owner, mention)
            elif _EN_LOCATIVE.fullmatch(between):
                self._apposition(owner, mention, locative=True)
            elif _ZH_LOCATIVE.fullmatch(between):
                self._apposition(mention, owner, locative=True)

    def _apposition(self, owner: _Mention, mention: _Mention, *, locative: bool = False) -> None:
        """State the one property whose range holds ``mention`` and whose domain fits ``owner``.

        A ``locative`` one ("X in Y") is stated only when ``owner`` has no such
        relation yet (the text's own "X, registered in Y" wins)."""
        candidates = [
            spec
            for spec in self.lex.properties
            if spec.ranges
            and spec.ranges <= self.types_of(mention.term)
            and self.compatible(owner.term, spec.domains)
        ]
        if locative:
            stated = {p for (s, p, _) in self.facts if s == owner.term}
            if any(spec.term in stated for spec in candidates):
                return
        exact = [
            spec
            for spec in candidates
            if spec.domains and spec.domains <= self.types_of(owner.term)
        ]
        if len(exact) != 1:
            hinted = self._name_classes(owner)
            exact = [spec for spec in candidates if spec.domains and spec.domains <= hinted]
        chosen = exact if len(exact) == 1 else (candidates if len(candidates) == 1 else [])
        for spec in chosen:
            self.relate(
                owner.term, spec.term, mention.term, "apposition", owner.start, mention.end + 1
            )
            for cls in spec.domains:
                self.add_type(owner.term, cls, "typing", owner.start, mention.end + 1)

    def _name_classes(self, owner: _Mention) -> set[str]:
        """Classes a new individual's name suggests: spaCy's entity kind, or a class label
        the name ends with ("猎户货运有限公司" ends with a label "公司")."""
        hinted: set[str] = set()
        hints = _NER_HINTS.get(owner.ner or "", ())
        name = owner.text.lower()
        for cls in self.lex.classes:
            for text, _ in self.lex.all_labels(cls):
                lowered = text.lower()
                if any(h in lowered for h in hints) or (
                    len(lowered) >= 2 and name.endswith(lowered) and name != lowered
                ):
                    hinted.add(cls)
        return self.lex.closure(hinted)

    # --- 4. classes --------------------------------------------------------------------

    def classes(self, mentions: list[_Mention], lo: int) -> None:
        for i, mention in enumerate(mentions):
            if not mention.is_class:
                continue
            named = self._named_within(mention)
            if named is not None:  # a class label inside a new name ("猎户货运有限公司") types it
                self.add_type(named.term, mention.term, "class", named.start, named.end)
                continue
            entity = self._described(mentions, i, lo)
            if entity is None:
                self.add(self.case, RDF_TYPE, mention.term, "class", mention.start, mention.end)
                for each in sorted(self.lex.closure({mention.term}) - {mention.term}):
                    self.add(self.case, RDF_TYPE, each, "typing", mention.start, mention.end)
                continue
            if entity.term == "":
                continue
            self.add_type(
                entity.term,
                mention.term,
                "class",
                min(entity.start, mention.start),
                max(entity.end, mention.end),
            )

    def _named_within(self, mention: _Mention) -> CaseEntity | None:
        """The new individual whose name holds the class phrase ``mention``, if any."""
        return next(
            (
                e
                for e in self.entities.values()
                if e.is_new
                and e.start <= mention.start
                and mention.end <= e.end
                and (e.start, e.end) != (mention.start, mention.end)
            ),
            None,
        )

    def _described(self, mentions: list[_Mention], i: int, lo: int) -> _Mention | None:
        """The entity a class phrase describes; a blank-term mention when it is negated."""
        cls = mentions[i]
        zh = bool(_CJK_RE.search(cls.text))
        copula, before = (_ZH_COPULA, _ZH_BEFORE) if zh else (_EN_COPULA, _EN_BEFORE)
        previous = next((m for m in reversed(mentions[:i]) if not m.is_class), None)
        if previous is not None and copula.match(self.text[previous.end : cls.start]):
            return self._checked(previous, self.text[previous.end : cls.start])
        following = next((m for m in mentions[i + 1 :] if not m.is_class), None)
        if following is not None and before.match(self.text[cls.end : following.start]):
            return following
        prefix = self.text[lo : cls.start]
        match = (_ZH_SUBJECT if zh else _EN_SUBJECT).search(prefix)
        if match is None:
            return None
        start = lo + match.start("np")
        end = lo + match.end("np")
        phrase = self.text[start:end]
        if zh:
            phrase, start = _last_zh_word(phrase, start)
            end = start + len(phrase)
        entity = self.new_entity(phrase, start, end, None)
        self.mention(entity)
        return self._checked(entity, self.text[end : cls.start])

    def _checked(self, entity: _Mention, between: str) -> _Mention:
        if _negated(between):
            return _Mention("", entity.start, entity.end, entity.text, False)
        return entity

    # --- result ------------------------------------------------------------------------

    def graph(self, today: str) -> CaseGraph:
        return CaseGraph(
            case=self.case,
            entities=tuple(sorted(self.entities.values(), key=lambda e: e.start)),
            facts=tuple(self.facts.values()),
            evaluation_date=today,
        )


def _input_value(kind: str, unit: str | None, quantity: Quantity) -> str | None:
    if kind == "MoneyAmount" and quantity.kind == "money":
        return encode_literal(quantity.value, datatype=_XSD + "decimal")
    if kind == "Currency" and quantity.kind == "money" and quantity.currency:
        return encode_literal(quantity.currency)
    if kind == "Date" and quantity.kind == "date":
        return encode_literal(quantity.value, datatype=_XSD + "date")
    if kind == "Percentage" and quantity.kind == "percentage":
        return encode_literal(quantity.value, datatype=_XSD + "decimal")
    if kind == "Count" and quantity.kind == "count":
        return encode_literal(quantity.value, datatype=_XSD + "integer")
    if kind == "Length" and quantity.kind == "length":
        value = length_in(quantity, unit or "mm")
        return encode_literal(value, datatype=_XSD + "decimal") if value is not None else None
    return None


def _sentences(text: str) -> Iterable[tuple[int, int]]:
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > start:
            yield start, match.start()
        start = match.end()
    if start < len(text):
        yield start, len(text)


def _names(text: str, doc: Doc | None) -> Iterable[tuple[int, int, str | None]]:
    """Spans of names (English named entities, Chinese name-tagged words)."""
    if re.search(r"[A-Za-z]{2,}", text):
        if doc is None or not doc.has_annotation("ENT_IOB"):
            from reasoning.nlp import english

            doc = english()(text)
        for ent in doc.ents:
            if ent.label_ in _NEW_LABELS:
                yield ent.start_char, ent.end_char, ent.label_
    if _CJK_RE.search(text):
        import jieba.posseg

        position = 0
        for pair in jieba.posseg.cut(text):
            word, flag = pair.word, pair.flag
            start = text.find(word, position)
            if start < 0:
                continue
            position = start + len(word)
            if flag in _ZH_NAME_FLAGS and len(word) >= 2:
                yield (
                    start,
                    position,
                    ("PERSON" if flag.startswith("nr") else "ORG" if flag == "nt" else None),
                )


def _label_matches(
    text: str, lo: int, hi: int, parts: tuple[str, ...], zh: bool
) -> Iterable[tuple[int, int, tuple[int, int] | None]]:
    """``(start, end, gap)`` of each occurrence of a label in ``text[lo:hi]``."""
    if zh:
        yield from _zh_matches(text, lo, hi, parts)
        return
    words = [
        (m.group(0).lower(), lo + m.start(), lo + m.end())
        for m in re.finditer(r"[^\W_]+", text[lo:hi])
    ]
    first = parts[0].split()
    second = parts[1].split() if len(parts) > 1 else []
    for i in range(len(words)):
        end_i = _match_words(words, i, first)
        if end_i is None:
            continue
        if not second:
            # "X is supplied by Y" is not "X supplies Y": a passive "by" after a label
            # that does not end with "by" itself turns the relation round.
            if end_i < len(words) and words[end_i][0] == "by" and first[-1] != "by":
                continue
            yield words[i][1], words[end_i - 1][2], None
            continue
        for j in range(end_i, min(len(words), end_i + _MAX_GAP_WORDS + 1)):
            end_j = _match_words(words, j, second)
            if end_j is not None:
                yield words[i][1], words[end_j - 1][2], (words[end_i - 1][2], words[j][1])
                break


def _match_words(words: list[tuple[str, int, int]], i: int, wanted: list[str]) -> int | None:
    """The index after ``wanted`` matched from ``words[i]``, skipping function words between.

    Words match in any inflection (:func:`_same_word`: "living in" meets a
    label "lives in", "incorporated" meets "incorporate").
    """
    if not wanted or i >= len(words) or not _same_word(words[i][0], wanted[0]):
        return None
    k = i + 1
    for word in wanted[1:]:
        while k < len(words) and not _same_word(words[k][0], word) and words[k][0] in _SKIP_WORDS:
            k += 1
        if k >= len(words) or not _same_word(words[k][0], word):
            return None
        k += 1
    return k


def _same_word(a: str, b: str) -> bool:
    """Whether two lower-case English words are one word in two inflections.

    Words of up to three letters ("in", "on", "is") must be equal; longer
    ones are compared without their regular inflection ending (-s, -es,
    -ed, -d, -ing, and a final -e): "lives", "living", "lived" and "live"
    are one word. Irregular forms ("sent" / "send") are not.
    """
    if a == b:
        return True
    if len(a) <= 3 or len(b) <= 3:
        return False
    return _inflection_stem(a) == _inflection_stem(b)


def _inflection_stem(word: str) -> str:
    for ending in _INFLECTIONS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]  # a doubled consonant before -ed / -ing: "transferred", "transferring"
    return word


def _zh_matches(
    text: str, lo: int, hi: int, parts: tuple[str, ...]
) -> Iterable[tuple[int, int, tuple[int, int] | None]]:
    first = parts[0]
    pattern = _zh_part(parts[1]) if len(parts) > 1 else None
    start = text.find(first, lo, hi)
    while start >= 0:
        end = start + len(first)
        if pattern is None:
            yield start, end, None
        else:
            second = pattern.search(text, end, min(hi, end + _MAX_GAP_CHARS + 8))
            if second is not None and second.start() <= end + _MAX_GAP_CHARS:
                yield start, second.end(), (end, second.start())
        start = text.find(first, end, hi)


def _zh_part(part: str) -> re.Pattern[str]:
    """A Chinese label part as a pattern: after a leading 的, a numeral and measure word may
    stand ("收到…的汇款" also reads "收到X的一笔汇款")."""
    if part.startswith("的") and len(part) > 1:
        return re.compile("的" + _ZH_MEASURE + re.escape(part[1:]))
    return re.compile(re.escape(part))


def _negated(between: str) -> bool:
    return bool(_EN_NEG.search(between) or _ZH_NEG.search(between))


def _occurrences(text: str, needle: str) -> Iterable[int]:
    start = text.find(needle) if needle else -1
    while start >= 0:
        yield start
        start = text.find(needle, start + len(needle))


def _overlaps(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(start < e and s < end for s, e in spans)


def _last_zh_word(phrase: str, start: int) -> tuple[str, int]:
    """The last jieba word of a Chinese phrase, with its start."""
    import jieba

    words = [w for w in jieba.lcut(phrase) if w.strip()]
    if not words:
        return phrase, start
    last = words[-1]
    return last, start + phrase.rfind(last)
