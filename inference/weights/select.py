"""Put a freshly loaded model into the requested weight format (``auto``: probe, then choose).

Guarantees: the returned :class:`~inference.weights.formats.WeightsChoice`
says what the model now runs in and why; a format the model cannot take
(int8 / int4 / a lean forward for a model outside the Llama family) raises
InvalidInput rather than loading something else, except for ``auto``, which
falls back to float32 on the library forward and says so.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from inference.decoder.packed_llama import LeanLlama, attach, unsupported_reason
from inference.weights.build import build_forward, install
from inference.weights.direct import load_direct
from inference.weights.formats import WEIGHT_FORMATS, FormatProbe, WeightsChoice
from inference.weights.gate import excluded, read_gate, unmeasured
from inference.weights.gguf_q4 import Q4Block, q4_1_blocks
from inference.weights.memory import return_freed_memory
from inference.weights.probe import calibration_ids, choose, machine_fingerprint, probe_formats
from reasoning.errors import InvalidInput

__all__ = [
    "Measured",
    "apply_weights",
    "gguf_blocks",
    "log_choice",
    "measure_weights",
    "planned_weights",
]

#: ``(format, reason, probes)``: what a load runs in, why, and the measurements behind it.
Plan = tuple[str, str, tuple[FormatProbe, ...]]

log = logging.getLogger("tenet.weights")


def gguf_blocks(
    config: Any, gguf: Path | None, table: Path | None = None
) -> Mapping[str, Q4Block] | None:
    """The Q4_1 blocks of ``gguf`` for a model of ``config`` (None without a GGUF).

    ``table`` keeps where the blocks lie for later loads (``q4_1_blocks``).
    """
    if gguf is None:
        return None
    config = config.get_text_config(decoder=True)
    heads = int(config.num_attention_heads)
    return q4_1_blocks(
        gguf,
        heads=heads,
        kv_heads=int(getattr(config, "num_key_value_heads", heads)),
        table=table,
    )


def apply_weights(
    model: Any,
    tokenizer: Any,
    requested: str,
    *,
    gguf: Path | None,
    packed: bool = True,
    probe_dir: Path | None = None,
    plan: Plan | None = None,
) -> WeightsChoice:
    """Convert ``model`` (loaded in float32, or bfloat16 for a named low-precision format) in place.

    ``gguf`` is the file the model came from, if it is one: ``int4`` then
    takes its Q4_1 blocks as they are. With ``packed`` False the model keeps
    the library forward (over the converted weights). ``probe_dir`` keeps the
    auto probe's measurements for later loads on the same machine. ``plan`` is
    a choice already measured on this model (:func:`measure_weights`): it is
    applied and reported as it was measured, not probed again.
    """
    reason = unsupported_reason(model)
    if reason is not None:
        if requested in ("int8", "int4"):
            raise InvalidInput(f"weights {requested} need a Llama-family model: {reason}")
        weights = "float32" if requested == "auto" else requested
        return WeightsChoice(requested, weights, "library", f"library forward (fallback): {reason}")
    probing = requested == "auto" and plan is None
    blocks = gguf_blocks(model.config, gguf) if probing or requested == "int4" else None
    probes: tuple[FormatProbe, ...] = ()
    if plan is not None:
        weights, why, probes = plan
    elif requested == "auto":

        def converted(weights: str) -> LeanLlama:
            # What install() would serve: a conversion of this model.
            return build_forward(model, weights, blocks)[0]

        probes, when = _probes(model, tokenizer, converted, probe_dir)
        weights, why = _choose(probes, probe_dir)
        why = f"{why} (measured {when})"
    else:
        weights, why = requested, f"{requested}: set by TENET_WEIGHTS"
    if weights != "float32" or packed:
        forward, replacements = build_forward(model, weights, blocks)
        install(model, forward, replacements)
        del forward, replacements
        return_freed_memory()
    if not packed:
        attach(model, None)
        why = f"{why}; library forward (TENET_PACKED_FORWARD=false)"
    choice = WeightsChoice(requested, weights, "packed" if packed else "library", why, probes)
    log_choice(choice)
    return choice


def log_choice(choice: WeightsChoice) -> None:
    """Say in the log what a load runs in and why."""
    log.info(
        "weights %s (TENET_WEIGHTS=%s, %s forward): %s",
        choice.weights,
        choice.requested,
        choice.forward,
        choice.reason,
    )


def planned_weights(
    requested: str, probe_dir: Path | None, device: Any
) -> tuple[str, str, tuple[FormatProbe, ...]] | None:
    """``(format, reason, probes)`` when the format is known before the model is loaded.

    A named format is; ``auto`` is when this machine's measurements for the
    model were kept by an earlier load (the choice is then made from them,
    so the model can be loaded straight into the chosen format); None
    otherwise (the auto probe needs the float32 model).
    """
    if requested != "auto":
        return requested, f"{requested}: set by TENET_WEIGHTS", ()
    found = _kept_probes(probe_dir, device)
    if found is None:
        return None
    probes, when = found
    weights, why = _choose(probes, probe_dir)
    return weights, f"{why} (measured {when})", probes


def _choose(probes: tuple[FormatProbe, ...], probe_dir: Path | None) -> tuple[str, str]:
    """The probe's choice under both gates: KL (measured at load) and steered accuracy (kept)."""
    kept = read_gate(probe_dir)
    return choose(probes, excluded(kept), unmeasured(kept, WEIGHT_FORMATS))


@dataclass(frozen=True)
class Measured:
    """The first ``auto`` load's measurement: the plan, and the chosen format's model if built.

    ``model`` is the direct load the probe measured for the chosen low-precision
    format (None when float32 was chosen, or the measurement was kept from an
    earlier load): the caller serves it rather than loading the format again.
    """

    plan: Plan
    model: Any


def measure_weights(
    model: Any,
    tokenizer: Any,
    directory: Path,
    gguf: Path | None,
    probe_dir: Path | None,
    table: Path | None = None,
) -> Measured | None:
    """``auto``'s measurement (kept in ``probe_dir``) and its choice, on the formats as served.

    For the first ``auto`` load on a machine whose model in ``directory``
    loads directly: float32 is ``model`` (the float32 library model) on its
    lean forward; every other format is its direct load from ``directory``,
    the model a later load in it serves. The model of the format
    :func:`~inference.weights.probe.choose` picks among those measured so far
    is kept while the others are measured and let go one at a time, so the
    chosen format is built once (formats are measured largest first and the
    rule prefers the smaller of two as fast, so a format it did not pick when
    measured is never the final choice). None for a model outside the Llama
    family (:func:`apply_weights` then keeps the library forward).
    """
    if unsupported_reason(model) is not None:
        return None
    blocks = gguf_blocks(model.config, gguf, table)
    device = next(model.parameters()).device
    kept = read_gate(probe_dir)
    ruled_out = excluded(kept)
    best: list[tuple[FormatProbe, Any]] = []
    current: list[Any] = []
    so_far: list[FormatProbe] = []

    def served(weights: str) -> LeanLlama:
        if weights == "float32":
            return build_forward(model, "float32")[0]
        loaded, forward = load_direct(directory, weights, blocks=blocks, device=device)
        current.append(loaded)
        return forward

    def measured(probe: FormatProbe) -> None:
        so_far.append(probe)
        if not current:
            return
        loaded = current.pop()
        if choose(so_far, ruled_out)[0] == probe.weights:
            best[:] = [(probe, loaded)]
        del loaded
        return_freed_memory()

    probes, when = _probes(model, tokenizer, served, probe_dir, measured)
    weights, why = choose(probes, ruled_out, unmeasured(kept, WEIGHT_FORMATS))
    chosen = best[0][1] if best and best[0][0].weights == weights else None
    best.clear()
    return Measured((weights, f"{why} (measured {when})", probes), chosen)


def _probe_path(probe_dir: Path, device: Any) -> Path:
    return probe_dir / f"weights-probe-{machine_fingerprint(device)}.json"


def _kept_probes(probe_dir: Path | None, device: Any) -> tuple[tuple[FormatProbe, ...], str] | None:
    """The measurements an earlier load on this machine kept, and when they were taken."""
    if probe_dir is None:
        return None
    try:
        saved = json.loads(_probe_path(probe_dir, device).read_text())
        probes = tuple(FormatProbe(**row) for row in saved["probes"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if {p.weights for p in probes} != set(WEIGHT_FORMATS):
        return None
    return probes, f"{saved['measured']} on this machine, reused"


def _probes(
    model: Any,
    tokenizer: Any,
    serve: Callable[[str], LeanLlama],
    probe_dir: Path | None,
    measured: Callable[[FormatProbe], None] | None = None,
) -> tuple[tuple[FormatProbe, ...], str]:
    """The auto probe's measurements and when they were taken: kept per model and machine.

    A later load on the same machine (processor, torch build, thread count,
    device) reuses them rather than spending the probe's seconds again.
    ``serve(format)`` is the forward a load in that format serves.
    """
    device = next(model.parameters()).device
    kept = _kept_probes(probe_dir, device)
    if kept is not None:
        return kept
    path = None if probe_dir is None else _probe_path(probe_dir, device)
    probes = probe_formats(WEIGHT_FORMATS, serve, calibration_ids(tokenizer), device, measured)
    taken = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps({"measured": taken, "probes": [asdict(p) for p in probes]}))
            tmp.replace(path)
        except OSError as exc:
            log.warning("could not keep the weights probe in %s: %s", path, exc)
    return probes, f"{taken} at this load"
