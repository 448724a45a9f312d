"""The steered-accuracy half of the weights' quality gate, measured by the bench and kept for loads.

Per weight format, the IFEval instruction-strict accuracy of the steered
decode (``bench.steering --weights F --record-gate``) is compared with
float32's on the same prompts: a format more than :data:`STEERED_DROP`
below it is not chosen by ``auto``. Measuring takes minutes per format, far
longer than a model load may, so the bench records its figures in a JSON
file (:data:`GATE_FILE`) beside the auto probe's measurements in the model
cache (one directory per model file digest), and a load only reads it.

Guarantees: :func:`excluded` never excludes float32 (the reference); a
format is compared only with a float32 figure of the same prompt set
(``sample``, e.g. ``quick`` or ``limit 40``); a format with no comparable
figure is not excluded, and :func:`excluded`'s caller says so in the
reason (``unmeasured``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "GATE_FILE",
    "STEERED_DROP",
    "SteeredAccuracy",
    "excluded",
    "measured_now",
    "read_gate",
    "record",
    "unmeasured",
]

#: Largest drop in steered instruction-strict accuracy from float32 a chosen format may show.
STEERED_DROP = 0.01
#: The file, in the model's probe directory, holding each format's steered accuracy.
GATE_FILE = "steering-gate.json"


@dataclass(frozen=True)
class SteeredAccuracy:
    """One format's steered IFEval accuracy on one prompt sample."""

    weights: str
    sample: str
    instruction_strict: float
    n_prompts: int
    n_instructions: int
    measured: str


def read_gate(probe_dir: Path | None) -> dict[str, SteeredAccuracy]:
    """Every format's kept figure (empty when none was recorded or the file is unreadable)."""
    if probe_dir is None:
        return {}
    try:
        rows = json.loads((probe_dir / GATE_FILE).read_text())["formats"]
        return {name: SteeredAccuracy(**row) for name, row in rows.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def record(probe_dir: Path, result: SteeredAccuracy) -> None:
    """Keep ``result`` for its format (replacing an earlier figure), written atomically."""
    kept = read_gate(probe_dir)
    kept[result.weights] = result
    probe_dir.mkdir(parents=True, exist_ok=True)
    path = probe_dir / GATE_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps({"formats": {name: asdict(row) for name, row in sorted(kept.items())}}, indent=1)
    )
    tmp.replace(path)


def measured_now() -> str:
    """The current UTC time as the gate records it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def excluded(kept: Mapping[str, SteeredAccuracy]) -> dict[str, str]:
    """Formats the gate excludes, each with why (float32 never is)."""
    reference = kept.get("float32")
    if reference is None:
        return {}
    out = {}
    for name, row in kept.items():
        if name == "float32" or row.sample != reference.sample:
            continue
        drop = round(reference.instruction_strict - row.instruction_strict, 6)
        if drop > STEERED_DROP:
            out[name] = (
                f"steered accuracy {row.instruction_strict} is {round(drop, 4)} below "
                f"float32's {reference.instruction_strict} ({row.sample}), more than {STEERED_DROP}"
            )
    return out


def unmeasured(kept: Mapping[str, SteeredAccuracy], formats: tuple[str, ...]) -> list[str]:
    """Formats with no steered figure comparable with float32's."""
    reference = kept.get("float32")
    return [
        name
        for name in formats
        if name != "float32"
        and (reference is None or name not in kept or kept[name].sample != reference.sample)
    ]
