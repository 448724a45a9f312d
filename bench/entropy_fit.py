"""Fit the cognitive-entropy normalisers and weights on IFEval's 541 prompts.

Run ``python -m bench.entropy_fit [--data PATH] [--write]``. For every prompt
it runs our extraction and constraint graph, collects the entropy signals
(:func:`reasoning.entropy.signals_from`) and then:

1. normalisers: each feature that varies over the prompts gets its empirical
   CDF, stored as (value, share of prompts below value) at the 0, 5, ..., 100 %
   quantiles plus (twice the largest value, 1), so the least demanding prompt
   seen scores 0 on the feature and twice the most demanding one saturates; a feature that departs from its most common value on fewer
   than 5 % of the prompts (IFEval has no soft constraint, no unlinked
   domain term and conflicts only on 7 prompts) saturates as ``x / (x + 1)``;
2. weights: the difficulty target is the number of instructions IFEval
   labelled on the prompt (each one is a requirement the decoder must keep).
   Non-negative least squares with an intercept, solved exactly by
   enumerating the active sets (at most 2^5 small least-squares problems);
   fitted weights are rescaled to sum to the data's share of the mass;
3. features the data cannot show keep a uniform prior weight of 1/7 each,
   and the fitted weights share the remaining mass in their fitted
   proportions (so the weights sum to 1 and the score stays in [0, 1]);
4. quality: Pearson and Spearman correlation of the score with the target,
   5-fold cross-validated, against the uniform-weight baseline.

``--write`` stores the model in ``reasoning/entropy_model.json``. The last
stdout line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from bench.datasets import IFEVAL_PROMPTS
from reasoning.entropy import FEATURES, MODEL_PATH, EntropyModel, Normaliser, Signals, signals_from
from reasoning.graph import build_graph

DEFAULT_DATA = IFEVAL_PROMPTS
QUANTILES = np.linspace(0.0, 1.0, 21)


def collect(path: Path) -> tuple[list[Signals], np.ndarray, float]:
    """Signals and instruction counts for every prompt, plus mean ms per prompt."""
    from reasoning.constraints.extraction import extract

    signals: list[Signals] = []
    targets: list[int] = []
    start = time.perf_counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        result = extract(row["prompt"])
        graph = build_graph(result.constraints, prompt=row["prompt"])
        signals.append(signals_from(result, graph))
        targets.append(len(row["instruction_id_list"]))
    elapsed = (time.perf_counter() - start) * 1000 / max(len(signals), 1)
    return signals, np.asarray(targets, dtype=float), elapsed


#: A feature is fitted only when at least this share of prompts departs from its
#: most common value; rarer variation (7 prompts of 541 with a conflict, all
#: but one from extraction slips) is too thin to estimate a weight from.
MIN_VARYING_SHARE = 0.05


def fit_normaliser(values: np.ndarray) -> tuple[Normaliser, bool]:
    """An empirical-CDF normaliser, or a saturating one when the feature barely varies."""
    _, counts = np.unique(values, return_counts=True)
    if 1.0 - counts.max() / values.size < MIN_VARYING_SHARE:
        return Normaliser(half=1.0), False
    xs = np.unique(np.quantile(values, QUANTILES))
    points = [(float(x), float(np.mean(values < x))) for x in xs]
    top = float(xs[-1])
    points.append((2 * top if top > 0 else 1.0, 1.0))
    return Normaliser(points=points), True


def nnls_with_intercept(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact non-negative least squares of ``y ~ b + z @ w`` (w >= 0, b free) by active sets."""
    n, k = z.shape
    best, best_sse = np.zeros(k), float(np.sum((y - y.mean()) ** 2))
    for mask in range(1, 1 << k):
        cols = [j for j in range(k) if mask >> j & 1]
        design = np.column_stack([np.ones(n), z[:, cols]])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        if np.any(coef[1:] < 0):
            continue
        sse = float(np.sum((design @ coef - y) ** 2))
        if sse < best_sse - 1e-12:
            best, best_sse = np.zeros(k), sse
            best[cols] = coef[1:]
    return best


def ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    r = np.empty(len(values))
    r[order] = np.arange(len(values))
    for v in np.unique(values):
        tie = values == v
        r[tie] = r[tie].mean()
    return r


def correlations(score: np.ndarray, y: np.ndarray) -> dict[str, float]:
    if np.std(score) == 0:
        return {"pearson": 0.0, "spearman": 0.0}
    return {
        "pearson": round(float(np.corrcoef(score, y)[0, 1]), 4),
        "spearman": round(float(np.corrcoef(ranks(score), ranks(y))[0, 1]), 4),
    }


def weights_from(fitted: np.ndarray, observed: list[bool]) -> dict[str, float]:
    """Spread the mass: 1/7 prior per unobserved feature, the rest in fitted proportions."""
    k = len(FEATURES)
    prior = 1.0 / k
    unobserved = [i for i in range(k) if not observed[i]]
    rest = 1.0 - prior * len(unobserved)
    weights = np.zeros(k)
    total = float(fitted.sum())
    for i in range(k):
        if not observed[i]:
            weights[i] = prior
        elif total > 0:
            weights[i] = rest * fitted[i] / total
    if total == 0:
        weights[[i for i in range(k) if observed[i]]] = rest / max(sum(observed), 1)
    return {f: round(float(w), 6) for f, w in zip(FEATURES, weights / weights.sum(), strict=True)}


def fit(signals: list[Signals], y: np.ndarray) -> tuple[EntropyModel, dict[str, Any]]:
    raw = np.asarray([[s.raw()[f] for f in FEATURES] for s in signals])
    normalisers, observed = {}, []
    for j, f in enumerate(FEATURES):
        norm, varies = fit_normaliser(raw[:, j])
        normalisers[f] = norm
        observed.append(varies)
    z = np.asarray([[normalisers[f](x) for f, x in zip(FEATURES, row, strict=True)] for row in raw])
    obs_idx = [j for j in range(len(FEATURES)) if observed[j]]
    fitted = np.zeros(len(FEATURES))
    fitted[obs_idx] = nnls_with_intercept(z[:, obs_idx], y)
    weights = weights_from(fitted, observed)
    w = np.asarray([weights[f] for f in FEATURES])
    uniform = np.full(len(FEATURES), 1 / len(FEATURES))

    folds = np.arange(len(y)) % 5
    cv_score = np.zeros(len(y))
    for k in range(5):
        train, test = folds != k, folds == k
        fw = np.zeros(len(FEATURES))
        fw[obs_idx] = nnls_with_intercept(z[train][:, obs_idx], y[train])
        wk = np.asarray([weights_from(fw, observed)[f] for f in FEATURES])
        cv_score[test] = z[test] @ wk

    without_constraints = [j for j in obs_idx if FEATURES[j] != "constraints"]
    fw = np.zeros(len(FEATURES))
    fw[without_constraints] = nnls_with_intercept(z[:, without_constraints], y)
    figures = {
        "n_prompts": len(y),
        "target": "number of IFEval instructions per prompt",
        "target_mean": round(float(y.mean()), 4),
        "prompts_with_conflicts": int(sum(1 for sig in signals if sig.conflicts)),
        "observed_features": [FEATURES[j] for j in obs_idx],
        "prior_features": [f for j, f in enumerate(FEATURES) if not observed[j]],
        "fitted_raw_coefficients": {FEATURES[j]: round(float(fitted[j]), 4) for j in obs_idx},
        "weights": weights,
        "in_sample": correlations(z @ w, y),
        "cross_validated_5fold": correlations(cv_score, y),
        "uniform_weights_baseline": correlations(z @ uniform, y),
        "prose_only_fit": {
            "features": [FEATURES[j] for j in without_constraints],
            "coefficients": {FEATURES[j]: round(float(fw[j]), 4) for j in without_constraints},
            **correlations(z @ fw, y),
        },
        "score_quantiles": {
            q: round(float(np.quantile(z @ w, float(q))), 4) for q in ("0.1", "0.5", "0.9")
        },
    }
    model = EntropyModel(weights=weights, normalisers=normalisers, fit=figures)
    return model, figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--write", action="store_true", help=f"store the model in {MODEL_PATH}")
    args = parser.parse_args(argv)
    signals, y, ms = collect(args.data)
    model, figures = fit(signals, y)
    figures["extract_graph_ms_mean"] = round(ms, 2)
    if args.write:
        MODEL_PATH.write_bytes(msgspec.json.format(msgspec.json.encode(model), indent=2) + b"\n")
        figures["written"] = str(MODEL_PATH)
    print(json.dumps(figures, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
