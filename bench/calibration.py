"""Confidence calibration on a small labelled set of factual statements.

``python -m bench.calibration [--threads N]``

Labelled set (built, not hand-picked per case): every evidence fact of the
benchmark's AML views (``bench.throughput.aml_views``) and of a small clinical
view below is a TRUE statement; each of its minimal counterfactual variants
(``reasoning.counterfactual.variants``: negation, sibling entity, shifted
number or date) is a FALSE statement. Each statement is scored by the bundled
model as the answer to "State one fact from the evidence." with its view's
evidence in the prompt, exactly as the decoder scores a step: lowest-window
token probability and counterfactual contrast (against the statement's own
variants on their changed spans, ``window_contrast``, as the judge scores
them), combined by
``reasoning.confidence.combine``.

Reported: expected calibration error (10 bins) of the shipped coefficients,
and of coefficients refitted with 2-fold cross-validation (fit on one half,
measure on the other), accuracy of ``confidence > 0.5``, and the set's size.
A second, disjoint set (the facts of ``bench.counterfactual``, other
entities and wording) measures the shipped coefficients again and the
cross-set refit: fit on one set, measure on the other, both ways.
The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import torch

from bench.model_cache import add_cache_option, model_cache

__all__ = ["LEXICON", "clinical_view", "main"]

LEXICON = {
    "Acme Ltd": "Company",
    "Globex": "Company",
    "Cyprus": "Country",
    "Malta": "Country",
    "Jon Doe": "Person",
    "Jane Roe": "Person",
    "right lower lobe": "Anatomy",
    "left upper lobe": "Anatomy",
    "ground-glass opacity": "Finding",
    "pleural effusion": "Finding",
}


def clinical_view() -> Any:
    from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph

    def fact(fid: str, text: str, modified: str) -> EvidenceFact:
        return EvidenceFact(
            id=fid,
            subject="",
            predicate="",
            object="",
            text=text,
            view="findings",
            score=1.0,
            hops=1,
            ontology_version="bench",
            modified=modified,
        )

    return EvidenceSubgraph(
        view="findings",
        relevance=1.0,
        seeds=(),
        facts=(
            fact(
                "E6", "The CT shows a ground-glass opacity in the right lower lobe.", "2025-02-03"
            ),
            fact(
                "E7",
                "Guideline G12 recommends a follow-up CT after 3 months for a persistent opacity.",
                "2022-11-20",
            ),
            fact("E8", "The patient is 67 years old.", "2025-02-03"),
            fact("E9", "No pleural effusion is present.", "2025-02-03"),
        ),
    )


def _labelled(views: Sequence[Any], lexicon: dict[str, str]) -> list[tuple[Any, str, bool]]:
    from reasoning.counterfactual import variants

    out: list[tuple[Any, str, bool]] = []
    for view in views:
        for fact in view.facts:
            out.append((view, fact.text, True))
            out.extend((view, v.text, False) for v in variants(fact.text, lexicon, limit=4))
    return out


def _features(lm: Any, view: Any, statement: str, lexicon: dict[str, str]) -> Any:
    from inference.decoder.batch import prefill_branches, prefill_prefix
    from inference.decoder.contrast import token_logprobs, window_contrast
    from inference.decoder.runner import ModelRunner
    from inference.prompting import plan_prompt
    from reasoning.confidence import ConfidenceInputs, lowest_window_probability
    from reasoning.counterfactual import variants

    tok = lm.tokenizer
    runner = ModelRunner(lm.model)
    ids = list(plan_prompt(tok, "State one fact from the evidence.", [], [view]).branch_ids(0))
    with torch.inference_mode():
        kv = prefill_prefix(runner, ids[:-1])
        state, first = prefill_branches(
            runner, len(ids) - 1, kv, [ids[-1:]], width=1, max_new_tokens=1
        )
        found = variants(statement, lexicon, limit=4)
        claim = list(tok(statement, add_special_tokens=False)["input_ids"])
        others = [list(tok(v.text, add_special_tokens=False)["input_ids"]) for v in found]
        kept = [(v, tid) for v, tid in zip(found, others) if tid and tid != claim]
        prompt_kv, prompt_len = state.branch_kv[0], state.prompt_lengths[0]
        first_lp = torch.log_softmax(first[0], -1)
        (claim_lp,) = token_logprobs(runner, prompt_kv, prompt_len, first_lp, [claim])
        contrast = None
        kind = None
        if kept:
            scored = window_contrast(
                runner,
                prompt_kv,
                prompt_len,
                first_lp,
                claim,
                [tid for _, tid in kept],
                pad_id=int(tok.pad_token_id),
            )
            contrast, kind = scored.value, kept[scored.best - 1][0].kind
    return ConfidenceInputs(
        window_prob=lowest_window_probability(claim_lp), contrast=contrast, contrast_kind=kind
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    add_cache_option(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from bench.counterfactual import CASES
    from bench.counterfactual import LEXICON as CASE_LEXICON
    from bench.throughput import aml_views
    from inference.loader import load_model
    from reasoning.confidence import combine, expected_calibration_error, fit_coefficients

    lm = load_model("bundled", cache_root=model_cache(args.cache))
    data = _labelled([*aml_views(), clinical_view()], LEXICON)
    samples = [(_features(lm, view, text, LEXICON), label) for view, text, label in data]
    other_views = [case["evidence"][0] for case in CASES]
    other = [
        (_features(lm, view, text, CASE_LEXICON), label)
        for view, text, label in _labelled(other_views, CASE_LEXICON)
    ]
    shipped = [(combine(x), y) for x, y in samples]
    shipped_other = [(combine(x), y) for x, y in other]
    cross: list[tuple[float, bool]] = []
    for train, test in ((samples, other), (other, samples)):
        coefficients = fit_coefficients(train)
        cross.extend((combine(x, coefficients), y) for x, y in test)
    halves = (samples[0::2], samples[1::2])
    held_out: list[tuple[float, bool]] = []
    for train, test in ((halves[0], halves[1]), (halves[1], halves[0])):
        coefficients = fit_coefficients(train)
        held_out.extend((combine(x, coefficients), y) for x, y in test)
    full_fit = fit_coefficients(samples)
    contrast_terms = ("contrast", "contrast_offset")
    fit_a = fit_coefficients(samples, only=contrast_terms)
    fit_b = fit_coefficients(other, only=contrast_terms)
    on_b = [(combine(x, fit_a), y) for x, y in other]
    on_a = [(combine(x, fit_b), y) for x, y in samples]

    def accuracy(pairs: list[tuple[float, bool]]) -> float:
        return round(sum(1 for c, y in pairs if (c > 0.5) == y) / len(pairs), 4)

    report = {
        "n_statements": len(samples),
        "n_true": sum(1 for _, y in samples if y),
        "ece_shipped_coefficients": round(expected_calibration_error(shipped), 4),
        "accuracy_shipped": accuracy(shipped),
        "ece_refit_2fold_held_out": round(expected_calibration_error(held_out), 4),
        "accuracy_refit_2fold_held_out": accuracy(held_out),
        "second_set": {
            "source": "the evidence facts of bench.counterfactual.CASES and their variants",
            "n_statements": len(other),
            "n_true": sum(1 for _, y in other if y),
            "ece_shipped_coefficients": round(expected_calibration_error(shipped_other), 4),
            "accuracy_shipped": accuracy(shipped_other),
        },
        "ece_refit_cross_set_held_out": round(expected_calibration_error(cross), 4),
        "contrast_terms_only": {
            "what": "only contrast and contrast_offset fitted (token and support terms kept): "
            "fit on one set, ECE on the other",
            "fit_on_first_set": {
                "contrast": round(fit_a.contrast, 3),
                "contrast_offset": round(fit_a.contrast_offset, 3),
            },
            "ece_second_set_held_out": round(expected_calibration_error(on_b), 4),
            "accuracy_second_set_held_out": accuracy(on_b),
            "fit_on_second_set": {
                "contrast": round(fit_b.contrast, 3),
                "contrast_offset": round(fit_b.contrast_offset, 3),
            },
            "ece_first_set_held_out": round(expected_calibration_error(on_a), 4),
            "accuracy_first_set_held_out": accuracy(on_a),
        },
        "accuracy_refit_cross_set_held_out": accuracy(cross),
        "refit_on_all": {
            "intercept": round(full_fit.intercept, 3),
            "token": round(full_fit.token, 3),
            "support": round(full_fit.support, 3),
            "contrast": round(full_fit.contrast, 3),
            "contrast_offset": round(full_fit.contrast_offset, 3),
        },
        "mean_confidence_true": round(
            sum(c for c, y in shipped if y) / max(1, sum(1 for _, y in shipped if y)), 4
        ),
        "mean_confidence_false": round(
            sum(c for c, y in shipped if not y) / max(1, sum(1 for _, y in shipped if not y)), 4
        ),
        "note": "TRUE = evidence fact verbatim, FALSE = its counterfactual variants; support term not exercised "
        "(statements are scored without the lexical support rule). The shipped contrast terms were fitted on "
        "the first set (contrast_terms_only.fit_on_first_set), so ece_shipped_coefficients on it is in-sample; "
        "second_set.ece_shipped_coefficients is the held-out figure. Small synthetic sets: indicative.",
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
