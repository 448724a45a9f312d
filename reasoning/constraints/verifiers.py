"""Verdicts per constraint, on complete and on partial texts.

Every kind the compositional form expresses (the counting, position,
wrapping, layout and copy kinds, IFEval's families among them, and the
generic kinds) is verified by the form's generic verifiers
(:mod:`reasoning.constraints.form.verify`) on the conjunction of its forms;
the others (response language, JSON, regex, fixed answers, postscript and
the evidence-bound domain kinds) keep a verifier of their own here.

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

from reasoning.constraints import citations
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.model import Form
from reasoning.constraints.form.verify import check
from reasoning.constraints.form.verify import compare as _compare
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
    return _compare(count, relation, n)


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
        value = json.loads(_strip_fences(text))
    except ValueError as error:
        return _unsure(c.id, False, f"not JSON: {error}", partial)
    schema = c.params.get("schema")
    top = schema.get("type") if isinstance(schema, dict) else None
    if top in ("array", "object") and not isinstance(value, list if top == "array" else dict):
        return _unsure(c.id, False, f"JSON, but not an {top}", partial)
    missing = [k for k in map(str, c.params.get("keys", ())) if not isinstance(value, dict) or k not in value]
    if missing:
        return _unsure(c.id, False, f"JSON without the keys {', '.join(missing)}", partial)
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
    Kind.POSTSCRIPT: _v_postscript,
    Kind.JSON_FORMAT: _v_json,
    Kind.REGEX_FORMAT: _v_regex,
    Kind.CONSTRAINED_RESPONSE: _v_constrained,
    Kind.CITATION_TIME_WINDOW: _v_citation_window,
    Kind.CITE_SOURCES: _v_cite_sources,
    Kind.JURISDICTION: _v_jurisdiction,
    Kind.NUMERIC_PRECISION: _v_numeric_precision,
}
"""The kinds the form does not express; every other kind is verified through its forms."""


@lru_cache(maxsize=4096)
def _forms(kind: Kind, params: bytes) -> tuple[Form, ...] | None:
    return form_of(kind, msgspec.json.decode(params))


def _v_form(c: Constraint, text: str, partial: bool) -> Verdict:
    """The conjunction of the constraint's forms: violated when one is, certain as its parts are."""
    forms = _forms(c.kind, msgspec.json.encode(c.params))
    if forms is None:
        raise InvalidInput(f"no verifier for constraint kind {c.kind!r}")
    checks = [check(form, text, partial=partial) for form in forms]
    failed = [ch for ch in checks if not ch.satisfied]
    if failed:
        return Verdict(
            constraint_id=c.id,
            satisfied=False,
            detail="; ".join(ch.detail for ch in failed),
            certain=any(ch.certain for ch in failed),
        )
    return Verdict(
        constraint_id=c.id,
        satisfied=True,
        detail="; ".join(ch.detail for ch in checks) or "nothing required",
        certain=all(ch.certain for ch in checks),
    )


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
    try:
        if verifier is None:
            return _v_form(constraint, text, partial)
        return verifier(constraint, text, partial, context or _EMPTY_CONTEXT)
    except (TypeError, ValueError, KeyError, msgspec.DecodeError) as error:
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
