"""The compile context: what a family's compile step reads, and the shared state it adds to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inference.decoder.token_controllers.template import Layout
from reasoning.constraints.model import Constraint
from reasoning.errors import ConflictError

__all__ = ["CompileContext", "conflict"]


def conflict(detail: str, *constraints: Constraint) -> ConflictError:
    """The refusal of ``constraints`` together (``extra["constraint_ids"]`` names them)."""
    return ConflictError(detail, constraint_ids=[c.id for c in constraints])


@dataclass
class CompileContext:
    """What a family's compile step reads, and the shared state it adds to.

    ``hard`` are the hard constraints (forms lowered); ``layout`` the answer's
    layout so far; a step adds the ids it controls to ``controlled`` (or only
    assists to ``assisted``); ``inserts``: citations or a stated decision
    write text of their own in the body. ``compiled`` holds, by family name,
    the spec of every family compiled before (None: not needed or not
    controllable), in the compile order (``token_controllers.registry.compile_steps``).
    """

    hard: list[Constraint]
    layout: Layout
    controlled: set[str]
    assisted: set[str]
    max_new_tokens: int | None
    inserts: bool
    compiled: dict[str, Any] = field(default_factory=dict)

    @property
    def placed(self) -> bool:
        """Whether the k-th word's placement is compiled (the openings and closings yield to it)."""
        return self.compiled.get("placement") is not None
