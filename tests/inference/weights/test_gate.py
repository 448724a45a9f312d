"""The steered-accuracy gate: kept figures, which formats it rules out, and auto's choice under it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch

from inference.weights.formats import FormatProbe
from inference.weights.gate import (
    GATE_FILE,
    STEERED_DROP,
    SteeredAccuracy,
    excluded,
    read_gate,
    record,
    ship,
    unmeasured,
)
from inference.weights.probe import TIE_MARGIN, choose, machine_fingerprint
from inference.weights.select import planned_weights


def _row(weights: str, accuracy: float, sample: str = "quick") -> SteeredAccuracy:
    return SteeredAccuracy(weights, sample, accuracy, 10, 14, "2026-12-01T00:00:00Z")


def test_a_format_more_than_a_point_below_float32_is_ruled_out_and_float32_never_is() -> None:
    kept = {
        "float32": _row("float32", 0.80),
        "bfloat16": _row("bfloat16", 0.80 - STEERED_DROP),  # exactly one point: allowed
        "int8": _row("int8", 0.85),
        "int4": _row("int4", 0.75),
    }
    out = excluded(kept)
    assert set(out) == {"int4"} and "0.05 below float32's 0.8" in out["int4"]
    assert excluded({"float32": _row("float32", 0.1)}) == {}


def test_figures_of_another_prompt_sample_are_not_compared() -> None:
    kept = {"float32": _row("float32", 0.80, "full"), "int4": _row("int4", 0.20, "quick")}
    assert excluded(kept) == {}
    assert unmeasured(kept, ("float32", "bfloat16", "int4")) == ["bfloat16", "int4"]
    assert unmeasured({}, ("float32", "int8")) == ["int8"]


def test_recorded_figures_read_back_and_a_new_figure_replaces_its_formats_old_one(
    tmp_path: Path,
) -> None:
    assert read_gate(tmp_path) == {} and read_gate(None) == {}
    record(tmp_path, _row("float32", 0.8))
    record(tmp_path, _row("int4", 0.5))
    record(tmp_path, _row("int4", 0.79))
    kept = read_gate(tmp_path)
    assert kept == {"float32": _row("float32", 0.8), "int4": _row("int4", 0.79)}
    (tmp_path / GATE_FILE).write_text("{not json")
    assert read_gate(tmp_path) == {}


def test_shipped_figures_apply_where_the_cache_holds_none_and_a_cached_figure_replaces_them(
    tmp_path: Path,
) -> None:
    shipped = tmp_path / "shipped.json"
    probe_dir = tmp_path / "probe-0123456789abcdef"
    ship(probe_dir, _row("float32", 0.9), shipped)
    ship(probe_dir, _row("int8", 0.7), shipped)
    ship(tmp_path / "probe-another-model", _row("int8", 0.95), shipped)
    kept = read_gate(probe_dir, shipped)
    assert kept == {"float32": _row("float32", 0.9), "int8": _row("int8", 0.7)}
    assert set(excluded(kept)) == {"int8"}  # a fresh clone's auto never picks it
    record(probe_dir, _row("int8", 0.9))  # measured again on this machine
    kept = read_gate(probe_dir, shipped)
    assert kept["int8"] == _row("int8", 0.9) and excluded(kept) == {}
    assert read_gate(tmp_path / "probe-unmeasured", shipped) == {}
    assert read_gate(probe_dir, None) == {"int8": _row("int8", 0.9)}
    shipped.write_text("[]")
    assert read_gate(tmp_path / "probe-unmeasured", shipped) == {}


def _probes() -> list[FormatProbe]:
    return [
        FormatProbe("float32", 0.0, 1.0, 9.0, True),
        FormatProbe("bfloat16", 0.001, 0.99, 6.0, True),
        FormatProbe("int8", 0.002, 0.98, 5.0, True),
        FormatProbe("int4", 0.004, 0.97, 4.0, True),
    ]


def test_choose_skips_the_fastest_format_when_the_steered_gate_rules_it_out() -> None:
    assert choose(_probes())[0] == "int4"
    weights, reason = choose(_probes(), {"int4": "steered accuracy too low"}, ["bfloat16"])
    assert weights == "int8"
    assert "int4 4.0 ms (steered accuracy too low)" in reason
    assert "not measured for bfloat16" in reason
    # float32 is the reference: a gate entry for it is ignored.
    assert choose(_probes(), {"float32": "x", "int4": "x", "int8": "x", "bfloat16": "x"})[0] == (
        "float32"
    )


def _timed(int8_ms: float, int4_ms: float, int4_kl: float = 0.004) -> list[FormatProbe]:
    return [
        FormatProbe("float32", 0.0, 1.0, 9.0, True),
        FormatProbe("bfloat16", 0.001, 0.99, 7.0, True),
        FormatProbe("int8", 0.002, 0.98, int8_ms, True),
        FormatProbe("int4", int4_kl, 0.97, int4_ms, int4_kl <= 0.02),
    ]


def test_formats_within_the_tie_margin_resolve_to_the_smallest_whichever_timed_faster() -> None:
    """int8 and int4 within the probe's noise of each other: int4 (fewer weight bytes) both
    ways round, and the reason states the rule; a larger format clearly faster still wins."""
    edge = round(5.0 * (1 + TIE_MARGIN), 6)
    for int8_ms, int4_ms in ((5.0, 5.3), (5.3, 5.0), (5.0, 5.0), (5.0, edge)):
        weights, reason = choose(_timed(int8_ms, int4_ms))
        assert weights == "int4", (int8_ms, int4_ms)
        assert f"within {TIE_MARGIN:.0%} of the fastest, the fewest weight bytes" in reason
    weights, reason = choose(_timed(5.0, 5.3))
    assert "smallest weights among the width-4 decode steps" in reason
    assert "int8 5.0 ms (as fast, larger weights)" in reason
    assert choose(_timed(5.0, edge * 1.01))[0] == "int8"
    # A smaller format outside a gate never wins a tie.
    assert choose(_timed(5.0, 4.9, int4_kl=0.05))[0] == "int8"
    assert choose(_timed(5.0, 4.9), {"int4": "steered accuracy too low"})[0] == "int8"


def test_the_choice_does_not_flip_under_timing_noise_within_the_margin() -> None:
    """Repeated probes of two formats of the same speed differ by a few percent either way;
    every draw of such noise gives one answer."""
    gen = torch.Generator().manual_seed(0)
    jitter = 1 + (torch.rand((200, 2), generator=gen) - 0.5) * TIE_MARGIN  # within +-margin/2
    picks = {choose(_timed(5.0 * float(a), 5.0 * float(b)))[0] for a, b in jitter}
    assert picks == {"int4"}


def test_auto_with_kept_measurements_applies_both_gates(tmp_path: Path) -> None:
    device = torch.device("cpu")
    kept = tmp_path / f"weights-probe-{machine_fingerprint(device)}.json"
    kept.write_text(json.dumps({"measured": "then", "probes": [asdict(p) for p in _probes()]}))
    for row in (_row("float32", 0.8), _row("int4", 0.7), _row("int8", 0.8)):
        record(tmp_path, row)
    plan = planned_weights("auto", tmp_path, device)
    assert plan is not None
    weights, reason, probes = plan
    assert weights == "int8" and len(probes) == 4
    assert "reused" in reason and "int4 4.0 ms (steered accuracy 0.7" in reason
    assert "not measured for bfloat16" in reason
    assert planned_weights("int4", tmp_path, device) == ("int4", "int4: set by TENET_WEIGHTS", ())
    assert planned_weights("auto", tmp_path / "none", device) is None


def test_the_repositorys_figures_for_the_bundled_model_compare_with_its_float32_figure(
    tmp_path: Path,
) -> None:
    """What a fresh clone's auto reads: float32's figure and every other on the same sample."""
    from inference.loader import bundled_gguf_path, file_sha256, probe_directory

    kept = read_gate(probe_directory(tmp_path, file_sha256(bundled_gguf_path())))
    assert "float32" in kept
    assert all(row.sample == kept["float32"].sample for row in kept.values())
    assert all(row.weights == name for name, row in kept.items())
