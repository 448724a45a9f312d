"""Token controllers: character policies, layouts, counted bounds, forbidden words, keywords.

``compile_steering`` (``inference.decoder.compile``) composes them into one
``ConstraintSteering`` per request; the beam search talks to it only through
the ``Steering`` protocol.
"""

from __future__ import annotations

from inference.decoder.controllers.charset import CharPolicy
from inference.decoder.controllers.counts import Counts, Limits
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
