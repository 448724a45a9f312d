"""Streaming a decode's steps: every branch's steps, once each, in order, numbered as the result numbers them.

The beam search reports a step as soon as every candidate of its branch
agrees on it (``generate``'s ``on_decided``): such a step is a prefix of the
branch's final answer and never changes. With several beams the last steps
(or all of them) often settle only when the search ends; ``StepStream.finish``
reports those from the decoded branches before the decode returns. A step of
bare white space (a blank line between paragraphs) is layout, not a step:
it is neither reported nor counted, exactly as the result leaves it out.

Guarantee: for every branch, the ``StepEvent``s of that branch, in order, are
exactly that branch's ``steps`` in the ``DecodeResult`` (same ids, same
texts). Branches interleave; an event names its branch's view and belongs to
that branch, which may or may not become the answer: which one answers is
known only when the decode ends (``DecodeResult.answer_branch``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reasoning.steps import Step, step_id

__all__ = ["StepEvent", "StepStream", "is_layout", "step_text"]


@dataclass(frozen=True)
class StepEvent:
    """One step of one branch as streamed: its id (``<view>.S<k>``), the branch's view, its text."""

    id: str
    branch: str
    text: str


def step_text(tokenizer: Any, tokens: Sequence[int]) -> str:
    """A step's text: its tokens decoded as the result's steps are (special tokens skipped)."""
    return str(tokenizer.decode(list(tokens), skip_special_tokens=True))


def is_layout(text: str) -> bool:
    """True for a step of bare white space: layout between steps, not a step of its own."""
    return not text.strip()


class StepStream:
    """Turns the search's decided steps and the final branches into ``StepEvent``s (see the module).

    ``listener`` runs on the decoding thread and must be quick (hand the
    event over, nothing more).
    """

    def __init__(
        self, views: Sequence[str], tokenizer: Any, listener: Callable[[StepEvent], None]
    ) -> None:
        self._views = tuple(views)
        self._tokenizer = tokenizer
        self._listener = listener
        self._sent = [0] * len(self._views)

    def decided(self, branch: int, tokens: tuple[int, ...]) -> None:
        """The search decided the next step of ``branch`` (its tokens); report it unless it is layout."""
        text = step_text(self._tokenizer, tokens)
        if is_layout(text):
            return
        self._sent[branch] += 1
        view = self._views[branch]
        self._listener(StepEvent(id=step_id(view, self._sent[branch]), branch=view, text=text))

    def finish(self, steps: Sequence[Sequence[Step]]) -> None:
        """Report what each branch's final ``steps`` hold beyond the steps already reported."""
        for branch, branch_steps in enumerate(steps):
            for step in branch_steps[self._sent[branch] :]:
                self._listener(StepEvent(id=step.id, branch=step.branch, text=step.text))
            self._sent[branch] = max(self._sent[branch], len(branch_steps))
