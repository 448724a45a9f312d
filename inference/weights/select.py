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
from inference.weights.gguf_q4 import Q4Block, q4_1_blocks
from inference.weights.probe import choose, machine_fingerprint, probe_formats
from reasoning.errors import InvalidInput

__all__ = ["apply_weights"]

log = logging.getLogger("tenet.weights")


def _blocks(model: Any, gguf: Path | None) -> Mapping[str, Q4Block] | None:
    if gguf is None:
        return None
    config = model.config.get_text_config(decoder=True)
    heads = int(config.num_attention_heads)
    return q4_1_blocks(
        gguf, heads=heads, kv_heads=int(getattr(config, "num_key_value_heads", heads))
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
    blocks = _blocks(model, gguf) if requested in ("auto", "int4") else None
    probes: tuple[FormatProbe, ...] = ()
    if requested == "auto":
        probes, when = _probes(model, tokenizer, blocks, probe_dir)
        weights, why = choose(probes)
        why = f"{why} (measured {when})"
    else:
        weights, why = requested, f"{requested}: set by TENET_WEIGHTS"
    if weights != "float32" or packed:
        forward, replacements = build_forward(model, weights, blocks)
        install(model, forward, replacements)
        del forward, replacements
        _return_freed_memory()
    if not packed:
        attach(model, None)
        why = f"{why}; library forward (TENET_PACKED_FORWARD=false)"
    choice = WeightsChoice(requested, weights, "packed" if packed else "library", why, probes)
    log.info(
        "weights %s (TENET_WEIGHTS=%s, %s forward): %s", weights, requested, choice.forward, why
    )
    return choice


def _probes(
    model: Any, tokenizer: Any, blocks: Mapping[str, Q4Block] | None, probe_dir: Path | None
) -> tuple[tuple[FormatProbe, ...], str]:
    """The auto probe's measurements and when they were taken: kept per model and machine.

    A later load on the same machine (processor, torch build, thread count,
    device) reuses them rather than spending the probe's seconds again.
    """
    device = next(model.parameters()).device
    path = None
    if probe_dir is not None:
        path = probe_dir / f"weights-probe-{machine_fingerprint(device)}.json"
        try:
            saved = json.loads(path.read_text())
            probes = tuple(FormatProbe(**row) for row in saved["probes"])
            if {p.weights for p in probes} == set(WEIGHT_FORMATS):
                return probes, f"{saved['measured']} on this machine, reused"
        except (OSError, ValueError, KeyError, TypeError):
            pass
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


def _return_freed_memory() -> None:
    """Hand the conversion's freed buffers back to the OS (glibc keeps them otherwise: ~300 MB here)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return


def _forward_only(model: Any, weights: str, blocks: Mapping[str, Q4Block] | None) -> LeanLlama:
    return build_forward(model, weights, blocks)[0]
