"""Constraint extraction against IFEval's labelled prompts.

Run ``python -m bench.extraction [--quick] [--data PATH] [--limit N]``. The
last stdout line is one JSON object: ``precision``, ``recall``,
``param_accuracy``, ``per_kind`` (per IFEval instruction id: precision,
recall, param_accuracy, support), ``p50_ms``, ``p95_ms``, ``n_prompts``,
``matching_rule`` and ``paraphrase``: ``{precision, recall, param_accuracy,
n, n_requirements, per_kind}`` on our own labelled set of requirement
paraphrases (:data:`PARAPHRASES`, English and Chinese, with prompts that
hold no requirement), scored by :data:`PARAPHRASE_RULE`; ``--quick`` scores
the whole set too (it takes seconds), ``--limit N`` its first N.

The mapping from IFEval ids to our kinds is the catalog's
(``KindSpec.ifeval_ids``); IFEval kwargs are mapped to our parameters by
:func:`label_params`, and our relations are rewritten in IFEval's terms
(``at most n`` is IFEval's ``less than n+1``, ``more than n`` its
``at least n+1``) by :func:`comparable`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.datasets import IFEVAL_PROMPTS
from reasoning.constraints.catalog import IFEVAL_TO_KIND
from reasoning.constraints.extraction import extract
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.nlp import warm_up

__all__ = [
    "DEFAULT_DATA",
    "MATCHING_RULE",
    "PARAPHRASES",
    "PARAPHRASE_RULE",
    "comparable",
    "label_params",
    "main",
    "run",
    "run_paraphrases",
]

DEFAULT_DATA = IFEVAL_PROMPTS

PARAPHRASES = Path(__file__).resolve().parent.parent / "tests" / "data" / "paraphrases.jsonl"
"""Requirements in varied wordings, each labelled with the constraints it states (JSONL)."""

PARAPHRASE_RULE = (
    "Per prompt, each expected constraint is matched one-to-one to an unmatched predicted constraint of "
    "the same kind, preferring one with equal parameters; every other predicted constraint is a false "
    "positive (prompts without a requirement expect none). Parameters are equal after writing 'at most n' "
    "as 'less than n+1' and 'more than n' as 'at least n+1', comparing texts case-insensitively, and "
    "leaving out the repeated text of copy / repeat_prompt (only whether a change is asked counts)."
)

MATCHING_RULE = (
    "Per prompt, each labelled IFEval instruction is matched one-to-one to an unmatched predicted "
    "constraint of its mapped kind, preferring one with equal parameters. Predicted constraints of "
    "kinds that cover an IFEval id and match no label are false positives; kinds that cover no IFEval "
    "id (citation_time_window, cite_sources, jurisdiction, numeric_precision, regex_format, "
    "start_phrase) are excluded from precision. Equivalences: forbidden_words{[w]} matches "
    "keywords:frequency{w, less than 1}; keyword_frequency{w, at least 1} matches keywords:existence{[w]}; "
    "a count of one mark (punctuation or characters among '!' and '！') matches keywords:letter_frequency of that "
    "mark ('!'), which counts the same characters; "
    "a predicted response_language{en} is absorbed by change_case:english_capital/english_lowercase, "
    "whose checkers require English. Parameters are compared after rewriting relations in IFEval's "
    "terms (at most n -> less than n+1, more than n -> at least n+1; exactly n -> the two bounds at least n "
    "and less than n+1, where a bound that matches no label is not counted once the other matched); "
    "words case-insensitively."
)


def _relation(relation: str, n: int) -> tuple[str, int]:
    if relation == Relation.AT_MOST:
        return "less than", n + 1
    if relation == Relation.MORE_THAN:
        return "at least", n + 1
    return relation, n


def _words(values: Iterable[Any]) -> list[str]:
    return sorted({str(v).strip().lower() for v in values})


def label_params(ifeval_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """IFEval kwargs of ``ifeval_id`` in our comparable parameter form."""
    k = {key: value for key, value in kwargs.items() if value is not None}
    suffix = ifeval_id.split(":", 1)[1]
    if suffix in ("number_words", "number_sentences"):
        n = k["num_words"] if suffix == "number_words" else k["num_sentences"]
        return {"relation": k["relation"], "n": int(n)}
    if suffix == "frequency":
        return {"keyword": str(k["keyword"]).lower(), "relation": k["relation"], "n": int(k["frequency"])}
    if suffix == "letter_frequency":
        return {"letter": str(k["letter"]).lower(), "relation": k["let_relation"], "n": int(k["let_frequency"])}
    if suffix == "capital_word_frequency":
        return {"relation": k["capital_relation"], "n": int(k["capital_frequency"])}
    if suffix == "existence":
        return {"keywords": _words(k["keywords"])}
    if suffix == "forbidden_words":
        return {"words": _words(k["forbidden_words"])}
    if suffix == "response_language":
        return {"language": k["language"]}
    if suffix == "number_paragraphs":
        return {"n": int(k["num_paragraphs"])}
    if suffix == "nth_paragraph_first_word":
        return {"n": int(k["num_paragraphs"]), "nth": int(k["nth_paragraph"]), "first_word": str(k["first_word"]).lower()}
    if suffix == "number_placeholders":
        return {"n": int(k["num_placeholders"])}
    if suffix == "number_bullet_lists":
        return {"n": int(k["num_bullets"])}
    if suffix == "number_highlighted_sections":
        return {"n": int(k["num_highlights"])}
    if suffix == "multiple_sections":
        return {"splitter": str(k["section_spliter"]).strip(), "n": int(k["num_sections"])}
    if suffix == "postscript":
        return {"marker": str(k["postscript_marker"]).strip()}
    if suffix == "end_checker":
        return {"phrase": str(k["end_phrase"]).strip()}
    if suffix == "repeat_prompt":
        return {"prompt_to_repeat": str(k["prompt_to_repeat"]).strip()}
    return {}


def _mark_count(p: Mapping[str, Any]) -> dict[str, Any] | None:
    """A whole-answer count of one mark (in either width) in IFEval's letter_frequency terms."""
    chars = str((p.get("filter") or {}).get("chars", ""))
    plain = set(p.get("filter") or {}) == {"chars"} and p.get("per") is None and p.get("of") is None
    if not plain or p.get("unit") not in ("punctuation", "characters") or not chars or chars[0].isalnum():
        return None
    relation, n = _relation(str(p.get("relation")), int(p.get("n", 0)))
    return {"letter": chars[0], "relation": relation, "n": n}


def comparable(constraint: Constraint, ifeval_id: str) -> dict[str, Any] | None:
    """Our constraint's params in the form :func:`label_params` gives ``ifeval_id``.

    None when the constraint cannot stand for that id at all.
    """
    p = constraint.params
    kind = constraint.kind
    target = IFEVAL_TO_KIND[ifeval_id]
    if kind == Kind.FORBIDDEN_WORDS and target == Kind.KEYWORD_FREQUENCY:
        words = _words(p.get("words", []))
        return {"keyword": words[0], "relation": "less than", "n": 1} if len(words) == 1 else None
    if kind == Kind.KEYWORD_FREQUENCY and target == Kind.KEYWORDS_PRESENT:
        if p.get("relation") == Relation.AT_LEAST and int(p.get("n", 0)) == 1:
            return {"keywords": _words([p.get("keyword", "")])}
        return None
    if kind == Kind.COUNT and target == Kind.LETTER_FREQUENCY:
        return _mark_count(p)
    if kind != target:
        return None
    if kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.CAPITAL_WORD_FREQUENCY):
        relation, n = _relation(str(p.get("relation")), int(p.get("n", 0)))
        return {"relation": relation, "n": n}
    if kind == Kind.KEYWORD_FREQUENCY:
        relation, n = _relation(str(p.get("relation")), int(p.get("n", 0)))
        return {"keyword": str(p.get("keyword", "")).lower(), "relation": relation, "n": n}
    if kind == Kind.LETTER_FREQUENCY:
        relation, n = _relation(str(p.get("relation")), int(p.get("n", 0)))
        return {"letter": str(p.get("letter", "")).lower(), "relation": relation, "n": n}
    if kind == Kind.KEYWORDS_PRESENT:
        return {"keywords": _words(p.get("keywords", []))}
    if kind == Kind.FORBIDDEN_WORDS:
        return {"words": _words(p.get("words", []))}
    if kind == Kind.NTH_PARAGRAPH_FIRST_WORD:
        return {"n": p.get("n"), "nth": p.get("nth"), "first_word": str(p.get("first_word", "")).lower()}
    if kind == Kind.SECTIONS:
        return {"splitter": str(p.get("splitter", "")).strip(), "n": p.get("n")}
    if kind in (Kind.END_PHRASE,):
        return {"phrase": str(p.get("phrase", "")).strip()}
    if kind == Kind.REPEAT_PROMPT:
        return {"prompt_to_repeat": str(p.get("prompt_to_repeat", "")).strip()}
    if kind == Kind.POSTSCRIPT:
        return {"marker": str(p.get("marker", "")).strip()}
    if kind in (Kind.PARAGRAPH_COUNT, Kind.PLACEHOLDERS, Kind.BULLET_COUNT, Kind.HIGHLIGHTED_SECTIONS):
        return {"n": p.get("n")}
    if kind == Kind.RESPONSE_LANGUAGE:
        return {"language": p.get("language")}
    return {}


_IFEVAL_KINDS = frozenset(IFEVAL_TO_KIND.values())
_ENGLISH_CASE_IDS = frozenset({"change_case:english_capital", "change_case:english_lowercase"})


_BOUNDED = frozenset({Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.KEYWORD_FREQUENCY, Kind.LETTER_FREQUENCY,
                      Kind.CAPITAL_WORD_FREQUENCY})


def _expand_exact(predicted: Sequence[Constraint]) -> list[Constraint]:
    """An ``exactly n`` count as its two IFEval bounds (at least n, less than n+1).

    IFEval has no "exactly" relation and labels "exactly one sentence" as two
    instructions; the second bound of an expanded constraint is dropped
    again when it matches no label (see ``_match_prompt``).
    """
    out: list[Constraint] = []
    for c in predicted:
        if c.kind in _BOUNDED and c.params.get("relation") == Relation.EXACTLY:
            n = int(c.params.get("n", 0))
            low = dict(c.params, relation=str(Relation.AT_LEAST))
            high = dict(c.params, relation=str(Relation.LESS_THAN), n=n + 1)
            out.append(msgspec.structs.replace(c, params=low))
            out.append(msgspec.structs.replace(c, id=c.id + "#upper", params=high))
        else:
            out.append(c)
    return out


def _match_prompt(
    labels: Sequence[tuple[str, dict[str, Any]]], predicted: Sequence[Constraint]
) -> tuple[list[tuple[str, bool, bool]], list[Constraint]]:
    """[(ifeval_id, matched, params_equal)] per label, and unmatched predictions."""
    free = [c for c in _expand_exact(predicted)
            if c.kind in _IFEVAL_KINDS or c.kind == Kind.COUNT and _mark_count(c.params) is not None]
    outcomes: list[tuple[str, bool, bool]] = []
    for ifeval_id, kwargs in labels:
        wanted = label_params(ifeval_id, kwargs)
        candidates = [(c, comparable(c, ifeval_id)) for c in free]
        candidates = [(c, params) for c, params in candidates if params is not None]
        exact = [c for c, params in candidates if params == wanted]
        chosen = exact[0] if exact else (candidates[0][0] if candidates else None)
        if chosen is None:
            outcomes.append((ifeval_id, False, False))
            continue
        free.remove(chosen)
        outcomes.append((ifeval_id, True, bool(exact)))
    matched_ids = {c.id for c in _expand_exact(predicted)} - {c.id for c in free}
    free = [c for c in free if not (c.id.endswith("#upper") and c.id.removesuffix("#upper") in matched_ids)
            and not (c.id + "#upper" in matched_ids)]
    free = [c for c in free if c.kind in _IFEVAL_KINDS]  # an unmatched mark count covers no IFEval id
    if any(ifeval_id in _ENGLISH_CASE_IDS for ifeval_id, _ in labels):
        free = [c for c in free if not (c.kind == Kind.RESPONSE_LANGUAGE and c.params.get("language") == "en")]
    return outcomes, free


def _ratio(num: int, den: int) -> float:
    return round(num / den, 4) if den else 1.0


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def run(rows: Sequence[Mapping[str, Any]], *, verbose: bool = False) -> dict[str, Any]:
    """Extract from every row and score against its labels."""
    warm_up(detectors=False)
    extract("Warm up the pipelines with at least 3 words.")
    support: dict[str, int] = defaultdict(int)
    matched: dict[str, int] = defaultdict(int)
    params_ok: dict[str, int] = defaultdict(int)
    false_pos: dict[str, int] = defaultdict(int)
    kind_to_id = {kind: ifeval_id for ifeval_id, kind in IFEVAL_TO_KIND.items()}
    latencies: list[float] = []
    misses: list[dict[str, Any]] = []
    for row in rows:
        started = time.perf_counter()
        result = extract(row["prompt"])
        latencies.append((time.perf_counter() - started) * 1000)
        labels = list(zip(row["instruction_id_list"], row["kwargs"]))
        outcomes, extra = _match_prompt(labels, result.constraints)
        for ifeval_id, hit, equal in outcomes:
            support[ifeval_id] += 1
            matched[ifeval_id] += hit
            params_ok[ifeval_id] += equal
        for constraint in extra:
            false_pos[kind_to_id[constraint.kind]] += 1
        if verbose and (extra or not all(h and e for _, h, e in outcomes)):
            misses.append({
                "key": row["key"],
                "labels": [[i, label_params(i, k)] for i, k in labels],
                "outcomes": outcomes,
                "predicted": [[c.kind.value, c.params] for c in result.constraints],
                "false_positives": [[c.kind.value, c.params, c.source.text if c.source else ""] for c in extra],
            })
    per_kind = {
        ifeval_id: {
            "precision": _ratio(matched[ifeval_id], matched[ifeval_id] + false_pos[ifeval_id]),
            "recall": _ratio(matched[ifeval_id], support[ifeval_id]),
            "param_accuracy": _ratio(params_ok[ifeval_id], matched[ifeval_id]),
            "support": support[ifeval_id],
            "false_positives": false_pos[ifeval_id],
        }
        for ifeval_id in sorted(set(support) | set(false_pos))
    }
    total_matched, total_support = sum(matched.values()), sum(support.values())
    report: dict[str, Any] = {
        "precision": _ratio(total_matched, total_matched + sum(false_pos.values())),
        "recall": _ratio(total_matched, total_support),
        "param_accuracy": _ratio(sum(params_ok.values()), total_matched),
        "per_kind": per_kind,
        "p50_ms": _percentile(latencies, 0.5),
        "p95_ms": _percentile(latencies, 0.95),
        "n_prompts": len(rows),
        "n_instructions": total_support,
        "matching_rule": MATCHING_RULE,
    }
    if verbose:
        report["misses"] = misses
    return report


def _normal(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, (list, tuple)):  # a form's pairs are tuples in-process, lists over JSON
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


def _paraphrase_params(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Params in the comparable form of :data:`PARAPHRASE_RULE`."""
    out = {k: v for k, v in params.items() if k not in ("prompt_to_repeat", "text") or kind not in ("copy", "repeat_prompt")}
    if "relation" in out and isinstance(out.get("n"), int):
        out["relation"], out["n"] = _relation(str(out["relation"]), int(out["n"]))
    return dict(_normal(out))


def run_paraphrases(rows: Sequence[Mapping[str, Any]], *, verbose: bool = False) -> dict[str, Any]:
    """Extraction scored against the paraphrase set (see :data:`PARAPHRASE_RULE`)."""
    support: dict[str, int] = defaultdict(int)
    matched: dict[str, int] = defaultdict(int)
    params_ok: dict[str, int] = defaultdict(int)
    false_pos: dict[str, int] = defaultdict(int)
    misses: list[dict[str, Any]] = []
    for row in rows:
        predicted = [(c.kind.value, _paraphrase_params(c.kind.value, c.params)) for c in extract(row["prompt"]).constraints]
        free = list(range(len(predicted)))
        missed = False
        for label in row["expected"]:
            kind, wanted = label["kind"], _paraphrase_params(label["kind"], label["params"])
            support[kind] += 1
            candidates = [i for i in free if predicted[i][0] == kind]
            equal = [i for i in candidates if predicted[i][1] == wanted]
            chosen = (equal or candidates)[:1]
            if not chosen:
                missed = True
                continue
            free.remove(chosen[0])
            matched[kind] += 1
            params_ok[kind] += bool(equal)
            missed = missed or not equal
        for i in free:
            false_pos[predicted[i][0]] += 1
        if verbose and (missed or free):
            misses.append({"id": row["id"], "prompt": row["prompt"], "expected": row["expected"],
                           "predicted": [[k, p] for k, p in predicted]})
    total_matched = sum(matched.values())
    report: dict[str, Any] = {
        "precision": _ratio(total_matched, total_matched + sum(false_pos.values())),
        "recall": _ratio(total_matched, sum(support.values())),
        "param_accuracy": _ratio(sum(params_ok.values()), total_matched),
        "n": len(rows),
        "n_requirements": sum(support.values()),
        "per_kind": {
            kind: {
                "precision": _ratio(matched[kind], matched[kind] + false_pos[kind]),
                "recall": _ratio(matched[kind], support[kind]),
                "param_accuracy": _ratio(params_ok[kind], matched[kind]),
                "support": support[kind],
            }
            for kind in sorted(set(support) | set(false_pos))
        },
        "matching_rule": PARAPHRASE_RULE,
    }
    if verbose:
        report["misses"] = misses
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 3rd prompt (a fixed sample)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--paraphrases", type=Path, default=PARAPHRASES, help="the labelled paraphrase set (JSONL)")
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N prompts of the sample and of the paraphrase set")
    parser.add_argument("--verbose", action="store_true", help="list prompts with misses before the JSON")
    args = parser.parse_args(argv)
    rows = load(args.data)
    if args.quick:
        rows = rows[::3]
    if args.limit is not None:
        rows = rows[: args.limit]
    report = run(rows, verbose=args.verbose)
    paraphrases = load(args.paraphrases)
    if args.limit is not None:
        paraphrases = paraphrases[: args.limit]
    report["paraphrase"] = run_paraphrases(paraphrases, verbose=args.verbose)
    if args.verbose:
        for miss in report.pop("misses") + report["paraphrase"].pop("misses"):
            print(json.dumps(miss, ensure_ascii=False))
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
