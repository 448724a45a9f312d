"""Put a freshly loaded model into the requested weight format (``auto``: probe, then choose).

Guarantees: the returned :class:`~inference.weights.formats.WeightsChoice`
says what the model now runs in and why; a format the model cannot take
(int8 / int4 / a lean forward for a model outside the Llama family) raises
InvalidInput rather than loading something else, except for ``auto``, which
falls back to float32 on the library forward and says so.
"""

from __future__ import annotations

import ctypes
import gc
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from inference.decoder.packed_llama import LeanLlama, attach, unsupported_reason
from inference.weights.build import build_forward, install
from inference.weights.formats import WEIGHT_FORMATS, FormatProbe, WeightsChoice
from inference.weights.gate import excluded, read_gate, unmeasured
from inference.weights.gguf_q4 import Q4Block, q4_1_blocks
from inference.weights.probe import choose, machine_fingerprint, probe_formats
from reasoning.errors import InvalidInput

__all__ = [
    "apply_weights",
    "gguf_blocks",
    "log_choice",
    "measure_weights",
    "planned_weights",
    "return_freed_memory",
]

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
) -> WeightsChoice:
    """Convert ``model`` (loaded in float32, or bfloat16 for a named low-precision format) in place.

    ``gguf`` is the file the model came from, if it is one: ``int4`` then
    takes its Q4_1 blocks as they are. With ``packed`` False the model keeps
    the library forward (over the converted weights). ``probe_dir`` keeps the
    auto probe's measurements for later loads on the same machine.
    """
    reason = unsupported_reason(model)
    if reason is not None:
        if requested in ("int8", "int4"):
            raise InvalidInput(f"weights {requested} need a Llama-family model: {reason}")
        weights = "float32" if requested == "auto" else requested
        return WeightsChoice(requested, weights, "library", f"library forward (fallback): {reason}")
    blocks = gguf_blocks(model.config, gguf) if requested in ("auto", "int4") else None
    probes: tuple[FormatProbe, ...] = ()
    if requested == "auto":
        probes, when = _probes(model, tokenizer, blocks, probe_dir)
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


def measure_weights(
    model: Any,
    tokenizer: Any,
    gguf: Path | None,
    probe_dir: Path | None,
    table: Path | None = None,
) -> tuple[str, str, tuple[FormatProbe, ...]] | None:
    """``auto``'s measurement on the float32 ``model`` (kept in ``probe_dir``) and its choice.

    For the first ``auto`` load on a machine: the caller then loads the chosen
    format directly, as later loads do. None for a model outside the Llama
    family (:func:`apply_weights` then keeps the library forward).
    """
    if unsupported_reason(model) is not None:
        return None
    blocks = gguf_blocks(model.config, gguf, table)
    probes, when = _probes(model, tokenizer, blocks, probe_dir)
    weights, why = _choose(probes, probe_dir)
    return weights, f"{why} (measured {when})", probes


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
    model: Any, tokenizer: Any, blocks: Mapping[str, Q4Block] | None, probe_dir: Path | None
) -> tuple[tuple[FormatProbe, ...], str]:
    """The auto probe's measurements and when they were taken: kept per model and machine.

    A later load on the same machine (processor, torch build, thread count,
    device) reuses them rather than spending the probe's seconds again.
    """
    device = next(model.parameters()).device
    kept = _kept_probes(probe_dir, device)
    if kept is not None:
        return kept
    path = None if probe_dir is None else _probe_path(probe_dir, device)
    probes = probe_formats(model, tokenizer, WEIGHT_FORMATS, _forward_only, blocks)
    measured = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(
                json.dumps({"measured": measured, "probes": [asdict(p) for p in probes]})
            )
            tmp.replace(path)
        except OSError as exc:
            log.warning("could not keep the weights probe in %s: %s", path, exc)
    return probes, f"{measured} at this load"


def return_freed_memory() -> None:
    """Hand the conversion's freed buffers back to the OS (glibc keeps them otherwise: ~300 MB here)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return


def _forward_only(model: Any, weights: str, blocks: Mapping[str, Q4Block] | None) -> LeanLlama:
    return build_forward(model, weights, blocks)[0]
