"""One verifier per constraint kind, on complete and on partial texts.

``verify(constraint, text)`` on a complete answer agrees with IFEval's own
rules for the IFEval families (word counting, ``***`` paragraphs, highlight
regexes, ... see :mod:`reasoning.constraints.textstats`), and applies the
documented rules of Tenet for the domain kinds.

``verify(constraint, text, partial=True)`` is called by the steered decoder at
step boundaries on a text that is still growing. Its verdict is ``certain``
only when no continuation can change it: a forbidden word already written, a
word count already above its maximum, a comma present, a capital letter under
``all_lowercase``. Everything that could still change is reported with
``certain=False``. Counts used for certainty are monotone in the text (they
never decrease as text is appended); a word touching the end of a partial text
is not yet taken as written, since the next token may extend it.

Each verifier is a small function of the text; none loads a model, and the
language verifier uses cached, script-restricted detectors.

Where IFEval's rule differs from a literal reading of the kind, IFEval's rule
is applied (it is what answers are judged by): ``sections`` requires *at
least* ``n`` splitter markers, ``constrained_response`` accepts an answer that
*contains* one of the options, keyword counts are case-insensitive substring
counts. Deliberate differences: ``no_comma`` also refuses the full-width
comma "，", and ``word_count`` counts each Han character as a word (IFEval
counts a run of Han characters as one word); neither changes a verdict on
text without Chinese characters.

"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from functools import lru_cache

import msgspec

from reasoning.constraints import citations, textstats
from reasoning.constraints.model import Constraint, Kind, Relation, Verdict
from reasoning.errors import InvalidInput
from reasoning.language import is_language, language_name

__all__ = ["VerifyContext", "compare", "verify", "verify_all"]


class VerifyContext(msgspec.Struct, frozen=True, kw_only=True):
    """What the domain verifiers know besides the text.

    ``evidence_dates`` maps evidence ids (``"E3"``) to the ISO date the fact
    is dated by (its effective or modified date); ``evidence_jurisdictions``
    maps them to an ISO 3166 code or ``"EU"``. Both come from the evidence
    subgraph the decoder showed the model.
    """

    evidence_dates: dict[str, str] = msgspec.field(default_factory=dict)
    evidence_jurisdictions: dict[str, str] = msgspec.field(default_factory=dict)


_EMPTY_CONTEXT = VerifyContext()


def compare(count: int, relation: str, n: int) -> bool:
    """``count <relation> n`` for the relations of :class:`Relation`."""
    if relation == Relation.LESS_THAN:
        return count < n
    if relation == Relation.AT_MOST:
        return count <= n
    if relation == Relation.MORE_THAN:
        return count > n
    if relation == Relation.EXACTLY:
        return count == n
    return count >= n


def _counted(cid: str, count: int, relation: str, n: int, what: str, partial: bool) -> Verdict:
    """Verdict for a count that never decreases as the text grows."""
    ok = compare(count, relation, n)
    detail = f"{count} {what} ({relation} {n} required)"
    if not partial:
        return Verdict(constraint_id=cid, satisfied=ok, detail=detail)
    lower_bound = relation in (Relation.AT_LEAST, Relation.MORE_THAN)
    certain = ok if lower_bound else not ok
    return Verdict(constraint_id=cid, satisfied=ok, detail=detail, certain=certain)


def _unsure(cid: str, ok: bool, detail: str, partial: bool) -> Verdict:
    """Verdict for a property a continuation may still change either way."""
    return Verdict(constraint_id=cid, satisfied=ok, detail=detail, certain=not partial)


def _settled(text: str, partial: bool) -> str:
    """The part of ``text`` whose words are complete (drop a trailing word piece)."""
    if not partial:
        return text
    match = re.search(r"\w+$", text)
    return text[: match.start()] if match else text


def _relation_n(c: Constraint) -> tuple[str, int]:
    return str(c.params.get("relation", Relation.AT_LEAST)), int(c.params.get("n", 0))


def _v_response_language(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    code = str(c.params.get("language", "en"))
    ok = is_language(text, code)
    return _unsure(c.id, ok, f"response {'is' if ok else 'is not'} in {language_name(code)}", partial)


def _v_keywords_present(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    keywords = [str(k) for k in c.params.get("keywords", [])]
    missing = [k for k in keywords if not re.search(re.escape(k), text, flags=re.IGNORECASE)]
    if missing:
        return Verdict(
            constraint_id=c.id, satisfied=False, detail=f"missing: {', '.join(missing)}",
            certain=not partial,
        )
    return Verdict(constraint_id=c.id, satisfied=True, detail="all keywords present")


def _v_forbidden_words(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    settled = _settled(text, partial)
    found = [
        str(w)
        for w in c.params.get("words", [])
        if re.search(r"\b" + re.escape(str(w)) + r"\b", settled, flags=re.IGNORECASE)
    ]
    if found:
        return Verdict(constraint_id=c.id, satisfied=False, detail=f"forbidden: {', '.join(found)}")
    return _unsure(c.id, True, "no forbidden word", partial)


def _v_keyword_frequency(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    keyword = str(c.params.get("keyword", ""))
    relation, n = _relation_n(c)
    count = len(re.findall(re.escape(keyword), text, flags=re.IGNORECASE)) if keyword else 0
    return _counted(c.id, count, relation, n, f"occurrences of {keyword!r}", partial)


def _v_letter_frequency(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    letter = str(c.params.get("letter", "")).lower()
    relation, n = _relation_n(c)
    count = text.lower().count(letter) if len(letter) == 1 else 0
    return _counted(c.id, count, relation, n, f"occurrences of {letter!r}", partial)


def _v_word_count(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    relation, n = _relation_n(c)
    return _counted(c.id, textstats.count_words(text), relation, n, "words", partial)


def _v_sentence_count(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    relation, n = _relation_n(c)
    sentences = textstats.split_sentences(text)
    count = len(sentences)
    if partial and sentences and not re.search(r"[.!?。！？][\"'”’)\]]*\s*$", text):
        count -= 1
    return _counted(c.id, count, relation, n, "sentences", partial)


def _v_paragraph_count(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    n = int(c.params.get("n", 0))
    count = textstats.markdown_paragraphs(text)
    if count is None:
        return _unsure(c.id, False, "an empty paragraph between *** dividers", partial)
    return _unsure(c.id, count == n, f"{count} paragraphs ({n} required)", partial)


def _first_word(paragraph: str) -> str:
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return first


def _v_nth_paragraph(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    n, nth = int(c.params.get("n", 0)), int(c.params.get("nth", 1))
    expected = str(c.params.get("first_word", "")).lower()
    pieces = textstats.blank_line_paragraphs(text)
    count = sum(1 for p in pieces if p.strip())
    if nth > count or nth < 1 or not pieces[nth - 1].strip():
        return _unsure(c.id, False, f"paragraph {nth} missing ({count} paragraphs)", partial)
    first = _first_word(pieces[nth - 1].strip())
    ok = count == n and first == expected
    return _unsure(c.id, ok, f"{count} paragraphs, paragraph {nth} starts with {first!r}", partial)


def _v_bullet_count(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    n = int(c.params.get("n", 0))
    count = textstats.count_bullets(text)
    detail = f"{count} bullets ({n} required)"
    if partial:
        complete = text[: text.rfind("\n") + 1] if "\n" in text else ""
        if textstats.count_bullets(complete) > n:
            return Verdict(constraint_id=c.id, satisfied=False, detail=detail)
    return _unsure(c.id, count == n, detail, partial)


def _v_highlighted(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    n = int(c.params.get("n", 1))
    return _counted(c.id, textstats.count_highlights(text), Relation.AT_LEAST, n, "highlights", partial)


def _v_sections(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    splitter = str(c.params.get("splitter", "Section")).strip()
    n = int(c.params.get("n", 1))
    count = len(re.split(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", text)) - 1
    return _counted(c.id, count, Relation.AT_LEAST, n, f"{splitter} markers", partial)


def _v_placeholders(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    n = int(c.params.get("n", 1))
    count = textstats.count_placeholders(text)
    return _counted(c.id, count, Relation.AT_LEAST, n, "placeholders", partial)


def _postscript_pattern(marker: str) -> str:
    if marker == "P.P.S":
        return r"\s*p\.\s?p\.\s?s.*$"
    if marker == "P.S.":
        return r"\s*p\.\s?s\..*$"
    return r"\s*" + re.escape(marker.lower()) + r".*$"


def _v_postscript(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    marker = str(c.params.get("marker", "P.S.")).strip()
    ok = re.search(_postscript_pattern(marker), text.lower(), flags=re.MULTILINE) is not None
    return _unsure(c.id, ok, f"postscript {marker} {'present' if ok else 'missing'}", partial)


def _v_title(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    ok = any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", text))
    if ok:
        return Verdict(constraint_id=c.id, satisfied=True, detail="title present")
    return _unsure(c.id, False, "no <<title>>", partial)


def _strip_fences(text: str) -> str:
    return (
        text.strip()
        .removeprefix("```json")
        .removeprefix("```Json")
        .removeprefix("```JSON")
        .removeprefix("```")
        .removesuffix("```")
        .strip()
    )


def _v_json(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    try:
        json.loads(_strip_fences(text))
    except ValueError as error:
        return _unsure(c.id, False, f"not JSON: {error}", partial)
    return _unsure(c.id, True, "valid JSON", partial)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, flags=re.DOTALL)
    except re.error:
        return None


def _v_regex(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    compiled = _compiled(str(c.params.get("pattern", "")))
    if compiled is None:
        return Verdict(constraint_id=c.id, satisfied=False, detail="invalid pattern")
    ok = compiled.fullmatch(text.strip()) is not None
    return _unsure(c.id, ok, "matches the pattern" if ok else "does not match", partial)


def _v_constrained(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    stripped = text.strip()
    found = [str(o) for o in c.params.get("options", []) if str(o) in stripped]
    if found:
        return Verdict(constraint_id=c.id, satisfied=True, detail=f"contains {found[0]!r}")
    return _unsure(c.id, False, "none of the allowed answers", partial)


def _v_lowercase(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    if any(ch.isupper() for ch in text):
        return Verdict(constraint_id=c.id, satisfied=False, detail="capital letter present")
    return _unsure(c.id, text.islower(), "all lowercase", partial)


def _v_capitals(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    if any(ch.islower() for ch in text):
        return Verdict(constraint_id=c.id, satisfied=False, detail="lowercase letter present")
    return _unsure(c.id, text.isupper(), "all capitals", partial)


def _v_capital_words(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    relation, n = _relation_n(c)
    count = textstats.count_capital_words(_settled(text, partial))
    return _counted(c.id, count, relation, n, "capital words", partial)


_COMMAS = (",", "，")


def _v_no_comma(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    if any(comma in text for comma in _COMMAS):
        return Verdict(constraint_id=c.id, satisfied=False, detail="comma present")
    return _unsure(c.id, True, "no comma", partial)


def _v_quotation(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    stripped = text.strip()
    if partial and stripped and stripped[0] != '"':
        return Verdict(constraint_id=c.id, satisfied=False, detail="does not open with a quote")
    ok = len(stripped) > 1 and stripped[0] == '"' and stripped[-1] == '"'
    return _unsure(c.id, ok, "wrapped in quotes" if ok else "not wrapped in quotes", partial)


def _v_two_responses(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    pieces = text.split("******")
    valid: list[str] = []
    for index, piece in enumerate(pieces):
        if not piece.strip():
            if index not in (0, len(pieces) - 1):
                return _unsure(c.id, False, "empty response between separators", partial)
        else:
            valid.append(piece)
    ok = len(valid) == 2 and valid[0].strip() != valid[1].strip()
    return _unsure(c.id, ok, f"{len(valid)} responses separated by ******", partial)


def _prefix_verdict(cid: str, text: str, expected: str, partial: bool, what: str) -> Verdict:
    written = text.lstrip().lower()
    wanted = expected.strip().lower()
    if written.startswith(wanted):
        return Verdict(constraint_id=cid, satisfied=True, detail=f"starts with the {what}")
    if partial and wanted.startswith(written):
        return Verdict(constraint_id=cid, satisfied=False, detail=f"{what} in progress", certain=False)
    return Verdict(constraint_id=cid, satisfied=False, detail=f"does not start with the {what}")


def _v_repeat_prompt(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    wanted = str(c.params.get("prompt_to_repeat", ""))
    return _prefix_verdict(c.id, text.strip(), wanted, partial, "repeated request")


def _v_start_phrase(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    return _prefix_verdict(c.id, text, str(c.params.get("phrase", "")), partial, "start phrase")


def _v_end_phrase(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    phrase = str(c.params.get("phrase", "")).strip().lower()
    ok = text.strip().strip('"').lower().endswith(phrase)
    return _unsure(c.id, ok, "ends with the phrase" if ok else "does not end with the phrase", partial)


def _iso_year(value: object) -> int | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(str(value)[:10]).year
    except ValueError:
        match = re.match(r"\d{4}", str(value))
        return int(match.group(0)) if match else None


def _v_citation_window(c: Constraint, text: str, partial: bool, ctx: VerifyContext) -> Verdict:
    low, high = _iso_year(c.params.get("not_before")), _iso_year(c.params.get("not_after"))
    not_before, not_after = str(c.params.get("not_before", "")), str(c.params.get("not_after", ""))
    checked = text if not partial else text[: max(text.rfind("]"), text.rfind(")")) + 1]
    bad: list[str] = []
    for evidence_id in citations.evidence_ids(checked):
        dated = ctx.evidence_dates.get(evidence_id)
        if dated is None:
            continue
        if (not_before and dated[:10] < not_before[:10]) or (not_after and dated[:10] > not_after[:10]):
            bad.append(f"{evidence_id} ({dated[:10]})")
    for year in citations.cited_years(checked):
        if (low is not None and year < low) or (high is not None and year > high):
            bad.append(str(year))
    if bad:
        return Verdict(constraint_id=c.id, satisfied=False, detail=f"outside the window: {', '.join(bad)}")
    return _unsure(c.id, True, "all citations inside the window", partial)


def _v_cite_sources(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    need = int(c.params.get("min", 1))
    cited = citations.evidence_ids(text)
    return _counted(c.id, len(cited), Relation.AT_LEAST, need, "evidence ids cited", partial)


_EU_MEMBERS = frozenset(
    ["AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT", "LV", "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE"]
)
_JURISDICTION_NAMES: Mapping[str, tuple[str, ...]] = {
    "US": ("United States", "U.S.", "USA", "FinCEN", "美国"),
    "GB": ("United Kingdom", "U.K.", "FCA", "英国"),
    "EU": ("European Union", "EU", "AMLD", "欧盟"),
    "CN": ("China", "PRC", "PBOC", "中国"),
    "SG": ("Singapore", "MAS", "新加坡"),
    "HK": ("Hong Kong", "HKMA", "香港"),
    "CH": ("Switzerland", "FINMA", "瑞士"),
    "CY": ("Cyprus", "CySEC", "塞浦路斯"),
    "DE": ("Germany", "BaFin", "德国"),
    "FR": ("France", "AMF", "法国"),
}


def _allowed_jurisdictions(code: str) -> set[str]:
    code = code.upper()
    if code == "EU":
        return {"EU"} | set(_EU_MEMBERS)
    return {code, "EU"} if code in _EU_MEMBERS else {code}


def _v_jurisdiction(c: Constraint, text: str, partial: bool, ctx: VerifyContext) -> Verdict:
    allowed = _allowed_jurisdictions(str(c.params.get("code", "")))
    foreign: list[str] = []
    for evidence_id in citations.evidence_ids(text):
        where = ctx.evidence_jurisdictions.get(evidence_id)
        if where is not None and where.upper() not in allowed:
            foreign.append(f"{evidence_id} ({where})")
    for code, names in _JURISDICTION_NAMES.items():
        if code in allowed:
            continue
        for name in names:
            if re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", _settled(text, partial)):
                foreign.append(name)
                break
    if foreign:
        return Verdict(constraint_id=c.id, satisfied=False, detail=f"other jurisdictions: {', '.join(foreign)}")
    return _unsure(c.id, True, "no other jurisdiction relied on", partial)


_DECIMAL = re.compile(r"(?<![\w.])\d+\.(\d+)(?![\w.]|\.\d)")


def _v_numeric_precision(c: Constraint, text: str, partial: bool, _: VerifyContext) -> Verdict:
    decimals = int(c.params.get("decimals", 2))
    checked = _settled(text, partial).rstrip(".") if partial else text
    wrong = [m.group(0) for m in _DECIMAL.finditer(checked) if len(m.group(1)) != decimals]
    if wrong:
        return Verdict(
            constraint_id=c.id, satisfied=False, detail=f"{', '.join(wrong[:5])} not at {decimals} decimals"
        )
    return _unsure(c.id, True, f"decimal numbers carry {decimals} decimals", partial)


_Verifier = Callable[[Constraint, str, bool, VerifyContext], Verdict]

_VERIFIERS: Mapping[Kind, _Verifier] = {
    Kind.RESPONSE_LANGUAGE: _v_response_language,
    Kind.KEYWORDS_PRESENT: _v_keywords_present,
    Kind.FORBIDDEN_WORDS: _v_forbidden_words,
    Kind.KEYWORD_FREQUENCY: _v_keyword_frequency,
    Kind.LETTER_FREQUENCY: _v_letter_frequency,
    Kind.WORD_COUNT: _v_word_count,
    Kind.SENTENCE_COUNT: _v_sentence_count,
    Kind.PARAGRAPH_COUNT: _v_paragraph_count,
    Kind.NTH_PARAGRAPH_FIRST_WORD: _v_nth_paragraph,
    Kind.BULLET_COUNT: _v_bullet_count,
    Kind.HIGHLIGHTED_SECTIONS: _v_highlighted,
    Kind.SECTIONS: _v_sections,
    Kind.PLACEHOLDERS: _v_placeholders,
    Kind.POSTSCRIPT: _v_postscript,
    Kind.TITLE: _v_title,
    Kind.JSON_FORMAT: _v_json,
    Kind.REGEX_FORMAT: _v_regex,
    Kind.CONSTRAINED_RESPONSE: _v_constrained,
    Kind.ALL_LOWERCASE: _v_lowercase,
    Kind.ALL_CAPITALS: _v_capitals,
    Kind.CAPITAL_WORD_FREQUENCY: _v_capital_words,
    Kind.NO_COMMA: _v_no_comma,
    Kind.QUOTATION: _v_quotation,
    Kind.TWO_RESPONSES: _v_two_responses,
    Kind.REPEAT_PROMPT: _v_repeat_prompt,
    Kind.START_PHRASE: _v_start_phrase,
    Kind.END_PHRASE: _v_end_phrase,
    Kind.CITATION_TIME_WINDOW: _v_citation_window,
    Kind.CITE_SOURCES: _v_cite_sources,
    Kind.JURISDICTION: _v_jurisdiction,
    Kind.NUMERIC_PRECISION: _v_numeric_precision,
}


def verify(
    constraint: Constraint,
    text: str,
    *,
    partial: bool = False,
    context: VerifyContext | None = None,
) -> Verdict:
    """Check ``constraint`` against ``text``.

    On a complete text (``partial=False``) every verdict is certain. On a
    partial text, ``certain=True`` means no continuation can change the
    verdict (see the module docstring).

    >>> from reasoning.constraints.model import Constraint, Kind
    >>> verify(Constraint(id="c1", kind=Kind.NO_COMMA), "Hello, world").satisfied
    False
    """
    verifier = _VERIFIERS.get(constraint.kind)
    if verifier is None:
        raise InvalidInput(f"no verifier for constraint kind {constraint.kind!r}")
    try:
        return verifier(constraint, text, partial, context or _EMPTY_CONTEXT)
    except (TypeError, ValueError, KeyError) as error:
        raise InvalidInput(
            f"constraint {constraint.id} ({constraint.kind}) has invalid parameters: {error}",
            constraint_id=constraint.id,
        ) from error



def verify_all(
    constraints: Sequence[Constraint],
    text: str,
    partial: bool = False,
    *,
    context: VerifyContext | None = None,
) -> list[Verdict]:
    """One verdict per constraint, in the given order."""
    return [verify(c, text, partial=partial, context=context) for c in constraints]
