"""The model cache the benchmarks share with the service.

The bundled GGUF is dequantised once per cache directory (about 20 s on the
CPU), so the benchmarks read the directory ``make prepare`` filled for
``tenet serve`` instead of converting the model again into a cache of their own.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.settings import Settings


def add_cache_option(parser: argparse.ArgumentParser) -> None:
    """``--cache DIR``: default ``TENET_MODEL_CACHE_DIR``, else ``<TENET_DATA_DIR>/models``."""
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="model cache directory (default: the service's, TENET_MODEL_CACHE_DIR or <TENET_DATA_DIR>/models)",
    )


def model_cache(chosen: Path | None) -> Path:
    """The directory named on the command line, else the one ``tenet serve`` uses."""
    if chosen is not None:
        return chosen
    resolved = Settings.from_env().model_cache_dir
    assert resolved is not None  # Settings resolves it against the data dir
    return resolved
