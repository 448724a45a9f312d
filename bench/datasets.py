"""Where the data sets the benchmarks and tests read live inside the repository.

The repository carries every file its tests and benchmarks read (a fresh clone with
nothing beside it collects and passes the suite), so the paths here are relative to
this package and never reach outside the checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["DATA_DIR", "IFEVAL_PROMPTS"]

DATA_DIR: Final = Path(__file__).resolve().parent / "data"
"""The vendored data sets, each in a folder with its README and licence."""

IFEVAL_PROMPTS: Final = DATA_DIR / "ifeval" / "input_data.jsonl"
"""The 541 IFEval prompts with their instruction ids and kwargs (Apache-2.0, google-research)."""
