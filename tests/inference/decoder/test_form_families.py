"""token_controllers.registry.FAMILIES: one entry per constraint family, its compile step beside its builder.

A family with a compile step of its own keeps both halves in its controller module and is one
line of ``FAMILIES``; these tests fail when the compile order is ambiguous, when a step lives
away from its controller, or when a family's compiled spec does not reach its controller.
"""

from __future__ import annotations

from typing import Any

from test_form_controllers import gen

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.registry import FAMILIES, compile_steps
from inference.decoder.token_controllers.steering import ConstraintSteering
from reasoning.constraints.model import Kind


def test_each_family_is_one_entry_and_the_compile_order_is_total() -> None:
    names = [family.name for family in FAMILIES]
    assert len(names) == len(set(names))
    assert len({family.build for family in FAMILIES}) == len(FAMILIES)
    ranks = [family.compile_rank for family in compile_steps()]
    assert len(ranks) == len(set(ranks))
    assert ranks == sorted(ranks)
    assert {f.name for f in compile_steps()} == {f.name for f in FAMILIES if f.compile is not None}


def test_a_familys_compile_step_lives_in_its_controllers_module() -> None:
    for family in compile_steps():
        assert family.compile is not None
        assert family.compile.__module__ == family.build.__module__, family.name
        assert family.compile.__module__.startswith("inference.decoder.token_controllers."), family.name


def test_a_form_familys_spec_reaches_its_controller(tokenizer: Any) -> None:
    # "End every sentence with '!'": the sentence-mark family compiles it and its builder controls it.
    constraint = gen(Kind.WRAP, "c1", left="", right="!", unit="sentences")
    steering = compile_steering([constraint], tokenizer, prompt="Cheer the team on.", max_new_tokens=64)
    family = next(f for f in FAMILIES if f.name == "sentence_mark")
    assert isinstance(steering, ConstraintSteering)
    assert "c1" in steering.controlled
    assert any(type(c).__module__ == family.build.__module__ for c in steering.controllers)
    assert family.build.__module__.endswith(".sentence_marks")


def test_the_composer_runs_the_families_in_registry_order(tokenizer: Any) -> None:
    # Two families a request needs: their controllers' slots follow FAMILIES' order.
    constraints = [gen(Kind.WRAP, "c1", left="", right="!", unit="sentences"),
                   gen(Kind.COUNT, "c2", unit="hashtags", relation="at least", n=2)]
    steering = compile_steering(constraints, tokenizer, prompt="Cheer the team on.", max_new_tokens=96)
    modules = [type(c).__module__ for c in steering.controllers]
    order = [f.build.__module__ for f in FAMILIES]
    positions = [order.index(m) for m in modules if m in order]
    assert positions == sorted(positions)
    assert len(positions) >= 2
