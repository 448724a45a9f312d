"""Constraints and premises out of a prompt: the ``extract`` stage.

``extract(prompt)`` parses the prompt once per script it contains (English
through spaCy's ``en_core_web_sm`` pipeline, Chinese through spaCy ``zh`` with
jieba), runs the English and Chinese detectors, and returns typed constraints
with exact source spans (``prompt[start:end] == span.text``), premises,
sentences and cheap document features.

Guarantees:

- never raises on any Unicode text up to :data:`MAX_PROMPT_CHARS` characters
  and :data:`MAX_PROMPT_TOKENS` English tokens; larger prompts raise
  :class:`reasoning.errors.LimitExceeded`;
- constraint ids are ``c1``, ``c2``, ... in order of source position; profile
  defaults follow with the next ids;
- hardness is ``soft`` when the constraint's sentence carries a softener
  ("preferably", "try to", "if possible", "ideally", 尽量, 最好, 尽可能) and
  ``hard`` otherwise (imperatives, "must", "do not", "exactly", 必须, 禁止,
  不得);
- a default (``origin=profile``) is kept only when no user constraint has
  the same kind;
- a requirement named only as a category ("do not mention competitors by
  name") is not a ``forbidden_words`` constraint: without explicit words a
  verifier could not check it, so no constraint is invented. Explicit words
  ("do not use the words 'cheap' or 'free'") are;
- requirements are read onto the compositional form (:mod:`.form`) from the
  parse and the lexicon by the readers of :mod:`reasoning.constraints.extract`,
  run in the order :mod:`reasoning.constraints.extract.registry` lists them;
  one that a named kind means exactly keeps that kind;
- a sentence that reads as a requirement on the answer's form but yields
  no constraint is reported in ``unrecognised`` with its span.

Features (``ExtractionResult.features``) for the entropy stage, all floats:
``chars``, ``tokens``, ``sentences``, ``mean_sentence_tokens``, ``entities``
(maximal runs of proper nouns), ``entity_density`` (entities per token), ``conditionals``
(if / unless / when / otherwise / 如果 / 除非 / 若), ``negations`` (``neg``
dependencies, no / never / without, 不 / 没 / 禁止 / 不得), ``numbers``,
``questions``, ``constraints``, ``hard_constraints``, ``soft_constraints``,
``premises``, ``han_share`` (share of Han characters among letters: a mix of
languages is a source of uncertainty), and ``parse_ms``, the wall time of the
spaCy parses (a timing, not a property of the prompt).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence

import msgspec
from spacy.tokens import Doc

from reasoning.constraints.catalog import CATALOG
from reasoning.constraints.extract.accounting import Reading, account_readings
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.registry import read
from reasoning.constraints.extract.unrecognised import unrecognised_requirements
from reasoning.constraints.model import Constraint, Hardness, Origin, Premise, Span
from reasoning.errors import LimitExceeded
from reasoning.language import detect_prompt_language, script_counts
from reasoning.nlp import chinese, english
from reasoning.premises import extract_premises

__all__ = ["MAX_PROMPT_CHARS", "MAX_PROMPT_TOKENS", "ExtractionResult", "extract", "parse_english_many"]


MAX_PROMPT_CHARS = 20_000
"""Longest prompt extraction accepts (characters); the HTTP layer caps bodies too."""

MAX_PROMPT_TOKENS = 8_000
"""Most English tokens extraction parses. Natural text of MAX_PROMPT_CHARS has
about 4,500; only pathological input (thousands of one-character tokens, each
costing the parser as much as a word) reaches the cap."""


class ExtractionResult(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the ``extract`` stage read from one prompt.

    ``unrecognised`` holds the sentences that read as requirements on the
    answer's form but map to no kind (see :mod:`reasoning.constraints.extract.unrecognised`), and the
    clauses whose readings did not account for all they say (see
    :mod:`reasoning.constraints.extract.accounting`). ``readings`` says which words of its clause each
    constraint's reading used, and which readings were dropped and why.
    """

    constraints: tuple[Constraint, ...]
    premises: tuple[Premise, ...]
    language: str
    sentences: tuple[Span, ...]
    features: dict[str, float]
    unrecognised: tuple[Span, ...] = ()
    readings: tuple[Reading, ...] = ()


_SOFT_EN = re.compile(
    r"\b(?:preferably|prefer(?:ably)?|try\s+to|if\s+possible|where\s+possible|ideally|if\s+you\s+can|optionally"
    r"|would\s+be\s+nice|feel\s+free|when\s+possible|as\s+far\s+as\s+possible)\b",
    re.IGNORECASE,
)
_SOFT_ZH = re.compile(r"尽量|最好|尽可能|如果可能|可以的话|建议|酌情")
_CONDITIONALS = re.compile(r"\b(?:if|unless|when|whenever|otherwise|in\s+case)\b|如果|除非|若|假如|否则", re.IGNORECASE)
_NEGATIONS_ZH = re.compile(r"不|没|禁止|不得|勿|无")
_SURROGATE = re.compile(r"[\ud800-\udfff\x00]")


_LONG_RUN = re.compile(r"[^\w\s]{16,}")


def _break_run(match: re.Match[str]) -> str:
    run = match.group(0)
    return "".join(" " if index % 16 == 15 else char for index, char in enumerate(run))


def _clean(prompt: str) -> str:
    """The prompt with what slows or breaks spaCy replaced one for one.

    Lone surrogates and NUL become U+FFFD; in a run of more than 15
    punctuation marks every 16th becomes a space (spaCy's tokenizer is
    quadratic in the length of a punctuation run: 20,000 marks took minutes).
    One-for-one replacement keeps every offset valid for the original prompt,
    and runs of up to 15 marks ("******") are unchanged.

    """
    return _LONG_RUN.sub(_break_run, _SURROGATE.sub("\ufffd", prompt))



def _sentence_bounds(doc: Doc) -> list[tuple[int, int]]:
    return [(s.start_char, s.end_char) for s in doc.sents] if len(doc) else []


def _hardness(found: Found, text: str, bounds: Sequence[tuple[int, int]]) -> Hardness:
    if found.hardness is not None:
        return found.hardness
    start, end = found.start, found.end
    for s, e in bounds:
        if s <= found.start < e:
            start, end = s, max(e, found.end)
            break
    clause = text[start:end]
    if _SOFT_EN.search(clause) or _SOFT_ZH.search(clause):
        return Hardness.SOFT
    return Hardness.HARD


def _dedupe(found: list[Found]) -> list[Found]:
    """One constraint per (kind, params); of overlapping same-kind spans, the first, unless it has no
    parameters and a later one has (``json_format`` with the keys named over a bare ``json_format``).

    The two bounds of a range ("20 to 25 sentences") share a span and differ
    in relation, the two sides of a word length ("every word has 3 to 7
    letters": none shorter, none longer) in filter; both are kept.
    """
    kept: list[Found] = []
    seen: set[tuple[str, str]] = set()
    for item in sorted(found, key=lambda f: (f.start, -f.confidence)):
        key = (str(item.kind), msgspec.json.encode(item.params).decode())
        if key in seen:
            continue
        same = [k for k in kept if k.kind == item.kind and overlaps(k, item.start, item.end)
                and k.params.get("relation") == item.params.get("relation")
                and k.params.get("filter") == item.params.get("filter")]
        if same and item.params and all(not k.params for k in same):
            kept = [k for k in kept if k not in same]  # the reading that says more of the same words
        elif same:
            continue
        seen.add(key)
        kept.append(item)
    return kept


def _proper_noun_spans(doc: Doc) -> int:
    """Maximal runs of proper nouns: the entity count without the NER pass.

    Extraction skips spaCy's NER component (about 40 % of the parse time);
    named entities are nearly always proper-noun runs, which the tagger gives.
    """
    runs, inside = 0, False
    for token in doc:
        proper = token.pos_ == "PROPN"
        if proper and not inside:
            runs += 1
        inside = proper
    return runs


def _features(
    text: str,
    docs: Mapping[str, Doc],
    constraints: Sequence[Constraint],
    premises: Sequence[Premise],
    sentences: Sequence[Span],
) -> dict[str, float]:
    en = docs.get("en")
    zh = docs.get("zh")
    tokens = len(en) if en is not None else len(zh) if zh is not None else 0
    entities = _proper_noun_spans(en) if en is not None else 0
    negations = sum(1 for t in en if t.dep_ == "neg" or t.lower_ in ("no", "never", "without")) if en is not None else 0
    if zh is not None:
        negations += len(_NEGATIONS_ZH.findall(text))
    scripts = script_counts(text)
    letters = sum(scripts.values())
    hard = sum(1 for c in constraints if c.hardness == Hardness.HARD)
    return {
        "chars": float(len(text)),
        "tokens": float(tokens),
        "sentences": float(len(sentences)),
        "mean_sentence_tokens": float(tokens / len(sentences)) if sentences else 0.0,
        "entities": float(entities),
        "entity_density": float(entities / tokens) if tokens else 0.0,
        "conditionals": float(len(_CONDITIONALS.findall(text))),
        "negations": float(negations),
        "numbers": float(len(re.findall(r"\d+(?:[.,]\d+)*", text))),
        "questions": float(text.count("?") + text.count("？")),
        "constraints": float(len(constraints)),
        "hard_constraints": float(hard),
        "soft_constraints": float(len(constraints) - hard),
        "premises": float(len(premises)),
        "han_share": float(scripts.get("Han", 0) / letters) if letters else 0.0,
    }


def _needs_english(text: str, language: str, scripts: Mapping[str, int]) -> bool:
    return scripts.get("Han", 0) == 0 or scripts.get("Latin", 0) > 0 or language == "en"


def parse_english_many(prompts: Sequence[str]) -> list[Doc | None]:
    """The English parses :func:`extract` would make of ``prompts``, in one ``nlp.pipe`` batch.

    Why: spaCy's per-call overhead and its small matrix products dominate a
    short prompt's parse; a batch of 8 parses in about 55 % of the CPU time of
    8 calls. The i-th doc is the parse of the cleaned i-th prompt, exactly as
    ``extract`` parses it (NER disabled), or None where ``extract`` parses no
    English, or where the prompt is over a limit (``extract`` then raises its
    error). Pass each doc to ``extract(prompt, english_doc=doc)``.
    """
    out: list[Doc | None] = [None] * len(prompts)
    nlp = english()
    todo: list[tuple[int, Doc]] = []
    for i, prompt in enumerate(prompts):
        if len(prompt) > MAX_PROMPT_CHARS:
            continue
        text = _clean(prompt)
        if not _needs_english(text, detect_prompt_language(text), script_counts(text)):
            continue
        doc = nlp.make_doc(text)
        if len(doc) <= MAX_PROMPT_TOKENS:
            todo.append((i, doc))
    if todo:
        parsed = nlp.pipe((doc for _, doc in todo), disable=["ner"], batch_size=max(1, len(todo)))
        for (i, _), doc in zip(todo, parsed):
            out[i] = doc
    return out


def extract(
    prompt: str, *, defaults: Sequence[Constraint] = (), english_doc: Doc | None = None
) -> ExtractionResult:
    """Constraints, premises, language, sentences and features of ``prompt``.

    ``defaults`` are a profile's constraints; each is appended (as
    ``origin=profile``) unless the user's constraints already have its kind.
    ``english_doc`` is this prompt's parse from :func:`parse_english_many`
    (used when its text is the cleaned prompt's; otherwise the prompt is parsed here).

    >>> result = extract("必须用中文回答")
    >>> [(c.kind.value, c.params, c.hardness.value) for c in result.constraints]
    [('response_language', {'language': 'zh'}, 'hard')]
    """
    if len(prompt) > MAX_PROMPT_CHARS:
        raise LimitExceeded(
            f"prompt has {len(prompt)} characters; the maximum is {MAX_PROMPT_CHARS}",
            limit=MAX_PROMPT_CHARS,
        )
    text = _clean(prompt)
    language = detect_prompt_language(text)
    scripts = script_counts(text)
    docs: dict[str, Doc] = {}
    parse_started = time.perf_counter()
    if english_doc is not None and english_doc.text == text:
        docs["en"] = english_doc
    elif _needs_english(text, language, scripts):
        nlp = english()
        doc = nlp.make_doc(text)
        if len(doc) > MAX_PROMPT_TOKENS:
            raise LimitExceeded(
                f"prompt has {len(doc)} tokens; the maximum is {MAX_PROMPT_TOKENS}", limit=MAX_PROMPT_TOKENS
            )
        docs["en"] = nlp(doc, disable=["ner"])
    if scripts.get("Han", 0) > 0:
        docs["zh"] = chinese()(text)
    parse_ms = (time.perf_counter() - parse_started) * 1000
    found = read(docs, text)
    main_doc = docs.get(language) or next(iter(docs.values()))
    bounds = _sentence_bounds(main_doc)
    sentences = tuple(Span(start=s, end=e, text=prompt[s:e]) for s, e in bounds)
    accounting = account_readings(docs.get("en"), text, prompt, _dedupe(found))
    kept = list(accounting.kept)
    constraints: list[Constraint] = []
    readings: list[Reading] = list(accounting.dropped)
    for index, item in enumerate(kept, start=1):
        constraints.append(
            Constraint(
                id=f"c{index}",
                kind=item.kind,
                params=item.params,
                hardness=_hardness(item, text, bounds),
                scope=CATALOG[item.kind].scope,
                origin=Origin.USER,
                source=Span(start=item.start, end=item.end, text=prompt[item.start : item.end]),
                confidence=item.confidence,
            )
        )
        if accounting.used:
            clause, used = accounting.used[index - 1]
            readings.append(Reading(kind=item.kind.value, constraint=f"c{index}", clause=clause, used=used))
    user_kinds = {c.kind for c in constraints}
    for default in defaults:
        if default.kind in user_kinds:
            continue
        constraints.append(msgspec.structs.replace(default, id=f"c{len(constraints) + 1}", origin=Origin.PROFILE))
        user_kinds.add(default.kind)
    premises = extract_premises(prompt)
    features = _features(text, docs, constraints, premises, sentences)
    features["parse_ms"] = round(parse_ms, 3)
    return ExtractionResult(
        constraints=tuple(constraints),
        premises=premises,
        language=language,
        sentences=sentences,
        features=features,
        unrecognised=_union(unrecognised_requirements(text, prompt, docs, kept), accounting.unrecognised),
        readings=tuple(sorted(readings, key=lambda r: (r.clause.start, r.constraint is None, r.constraint or ""))),
    )


def _union(sentences: Sequence[Span], clauses: Sequence[Span]) -> tuple[Span, ...]:
    """Both reports in prompt order; a clause inside a reported sentence is not repeated."""
    spans = list(sentences)
    for clause in clauses:
        if not any(s.start <= clause.start and clause.end <= s.end for s in spans):
            spans.append(clause)
    return tuple(sorted(spans, key=lambda s: (s.start, s.end)))
