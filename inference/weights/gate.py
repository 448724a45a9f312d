"""The steered-accuracy half of the weights' quality gate, measured by the bench and kept for loads.

Per weight format, the IFEval instruction-strict accuracy of the steered
decode (``bench.steering --weights F --record-gate``) is compared with
float32's on the same prompts: a format more than :data:`STEERED_DROP`
below it is not chosen by ``auto``. Measuring takes minutes per format, far
longer than a model load may, so the bench records its figures in a JSON
file (:data:`GATE_FILE`) beside the auto probe's measurements in the model
cache (one directory per model file digest), and a load only reads it.

The repository also carries the figures measured for the bundled model
(:data:`SHIPPED_GATE`, keyed by the probe directory's name, which is the
model file's digest; ``bench.steering --record-gate --ship`` writes them),
so that a fresh clone's ``auto`` applies the gate without spending the
minutes per format again; a figure kept in the model cache replaces the
shipped one of its format.

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
from typing import Any

__all__ = [
    "GATE_FILE",
    "SHIPPED_GATE",
    "STEERED_DROP",
    "SteeredAccuracy",
    "excluded",
    "measured_now",
    "read_gate",
    "record",
    "ship",
    "unmeasured",
]

#: Largest drop in steered instruction-strict accuracy from float32 a chosen format may show.
STEERED_DROP = 0.01
#: The file, in the model's probe directory, holding each format's steered accuracy.
GATE_FILE = "steering-gate.json"
#: The figures measured for the bundled model, in the repository: ``{probe dir name: {format: row}}``.
SHIPPED_GATE = Path(__file__).with_name("steering_gate.json")


@dataclass(frozen=True)
class SteeredAccuracy:
    """One format's steered IFEval accuracy on one prompt sample."""

    weights: str
    sample: str
    instruction_strict: float
    n_prompts: int
    n_instructions: int
    measured: str


def read_gate(
    probe_dir: Path | None, shipped: Path | None = SHIPPED_GATE
) -> dict[str, SteeredAccuracy]:
    """Every format's figure: the model cache's, else the repository's for this model.

    Empty when neither holds one (an unreadable file counts as none).
    """
    if probe_dir is None:
        return {}
    out = {} if shipped is None else _rows(shipped, probe_dir.name)
    out.update(_rows(probe_dir / GATE_FILE))
    return out


def _load(path: Path) -> Any:
    """The JSON ``path`` holds ({} where it is missing or unreadable)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _rows_of(data: Any, model: str | None = None) -> dict[str, SteeredAccuracy]:
    """The rows of a gate file's ``data``: the model cache's (``formats``), or ``model``'s in the
    repository's; none where they are not rows."""
    try:
        rows = data["formats"] if model is None else data.get(model, {})
        return {name: SteeredAccuracy(**row) for name, row in rows.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def _rows(path: Path, model: str | None = None) -> dict[str, SteeredAccuracy]:
    return _rows_of(_load(path), model)


def _write(path: Path, data: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def record(probe_dir: Path, result: SteeredAccuracy) -> None:
    """Keep ``result`` for its format in the model cache (replacing an earlier figure), atomically."""
    kept = _rows(probe_dir / GATE_FILE)
    kept[result.weights] = result
    probe_dir.mkdir(parents=True, exist_ok=True)
    _write(probe_dir / GATE_FILE, {"formats": {name: asdict(row) for name, row in kept.items()}})


def ship(probe_dir: Path, result: SteeredAccuracy, shipped: Path = SHIPPED_GATE) -> None:
    """Keep ``result`` in the repository's figures for the model of ``probe_dir`` (atomically)."""
    data = _load(shipped)
    rows = _rows_of(data, probe_dir.name)
    rows[result.weights] = result
    data[probe_dir.name] = {name: asdict(row) for name, row in rows.items()}
    _write(shipped, data)


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
