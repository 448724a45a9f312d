"""Token controllers as plug-ins: one module per family, composed per request.

``protocol`` is what a family implements (``Controller``), ``registry`` lists
the families in the composer's order, ``layout`` is the compiled layout they
hang on, and ``steering.ConstraintSteering`` composes them; ``compile_steering``
(``inference.decoder.compile``) builds one per request from the compiled specs.
The beam search talks to it only through the ``Steering`` protocol.
"""

from __future__ import annotations

from inference.decoder.controllers.charset import CharPolicy
from inference.decoder.controllers.count_tallies import Counts, Limits
from inference.decoder.controllers.lexical import ForbiddenWords
from inference.decoder.controllers.steering import ConstraintSteering, SteerState
from inference.decoder.controllers.template import Body, Layout, build_layout

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
