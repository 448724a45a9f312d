"""Token controllers as plug-ins: one module per family, composed per request.

``protocol`` is what a family implements (``Controller``), ``registry`` lists
the families in the composer's order, ``layout`` is the compiled layout they
hang on, and ``steering.ConstraintSteering`` composes them; ``compile_steering``
(``inference.decoder.compile``) builds one per request from the compiled specs.
The beam search talks to it only through the ``Steering`` protocol. The package is
``token_controllers`` (not ``controllers``): ``app/controllers`` are the HTTP controllers.

``ConstraintSteering`` is loaded on first use: the composer imports the registry, whose
families' compile steps import ``inference.decoder.compile``'s shared modules, which import
this package's ``template``; loading it here would make that an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inference.decoder.token_controllers.charset import CharPolicy
from inference.decoder.token_controllers.count_tallies import Counts, Limits
from inference.decoder.token_controllers.lexical import ForbiddenWords
from inference.decoder.token_controllers.state import SteerState
from inference.decoder.token_controllers.template import Body, Layout, build_layout

if TYPE_CHECKING:
    from inference.decoder.token_controllers.steering import ConstraintSteering

__all__ = [
    "Body",
    "CharPolicy",
    "ConstraintSteering",
    "Counts",
    "ForbiddenWords",
    "Layout",
    "Limits",
    "SteerState",
    "build_layout",
]


def __getattr__(name: str) -> Any:
    if name == "ConstraintSteering":
        from inference.decoder.token_controllers.steering import ConstraintSteering

        return ConstraintSteering
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
