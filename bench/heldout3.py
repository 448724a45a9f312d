"""The third held-out set through the public API: ``python -m bench.heldout --set heldout3``.

``python -m bench.heldout3 [--quick] [--limit N] [--max-new-tokens N] [--port N] [--progress PATH] [--concurrency N] [--extraction-only]``

Kept so the command of earlier reports still runs. The harness, the two arms
and the report are ``bench.heldout``'s; the set (``bench/data/heldout3.jsonl``,
who wrote it, when and how: ``bench/data/README.md``) and its judges are
described in ``bench/data/heldout_sets.json`` and judged by ``bench.heldout_judge``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bench import heldout
from bench.heldout_judge import sets

__all__ = ["DATA", "SUITE", "main"]

SUITE = sets.suite("heldout3")
DATA = SUITE.data


def main(argv: Sequence[str] | None = None) -> int:
    """Serve, run the third held-out set through both arms, print the report."""
    return heldout.main(argv, SUITE)


if __name__ == "__main__":
    sys.exit(main())
