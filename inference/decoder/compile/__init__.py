"""Compile a request's constraints into the token controllers of its decode.

``compile_steering`` (``steering``) runs the shared stages (``lowering``: the form's named kinds;
``stages``: the character policy, the counted bounds, citations, keywords, capital words;
``layout`` and ``structure``: the answer's layout), then each constraint family's compile step
in the order of ``token_controllers.registry.FAMILIES`` over one compile context (``context``), then
the refusals of ``checks``. ``forms`` is what every step reads of the form constraints.

The names below are loaded on first use: the families' compile steps import this package's
shared modules while the registry that ``steering`` loops over imports the families, so this
package's ``__init__`` imports nothing of its own at load time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inference.decoder.compile.steering import (
        CONTROLLED_KINDS,
        IDENTIFIABLE_WORDS,
        branch_steerings,
        compile_steering,
    )

__all__ = ["CONTROLLED_KINDS", "IDENTIFIABLE_WORDS", "branch_steerings", "compile_steering"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from inference.decoder.compile import steering

        return getattr(steering, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
