"""compile.FORM_FAMILIES and controllers.registry.CONTROLLERS name the same form families.

A form family is a compile step (``FORM_FAMILIES``, in the compile order)
and a controller builder (``CONTROLLERS``, in the composer's order); these
tests fail when a family is added to one list and not the other.
"""

from __future__ import annotations

from typing import Any

from test_form_controllers import gen

from inference.decoder.compile import compile_steering
from inference.decoder.compile.steering import FORM_FAMILIES
from inference.decoder.controllers.count_limits import build_bounds, build_word_pace
from inference.decoder.controllers.keywords import build_keywords
from inference.decoder.controllers.registry import CONTROLLERS
from reasoning.constraints.model import Kind

#: Builders whose specs come from compile_steering's shared stages, not a form family's step.
_SHARED = {
    "build_stating", "build_bounds", "build_charset", "build_citing", "build_sentence_close",
    "build_landing", "build_placeholders", "build_forbidden", "build_keywords", "build_capitals",
    "build_word_pace",
}


def test_every_form_family_has_its_builder_in_the_composer_and_no_builder_is_left_out() -> None:
    names = [family.name for family in FORM_FAMILIES]
    assert len(names) == len(set(names))
    builders = {family.build for family in FORM_FAMILIES}
    assert builders <= set(CONTROLLERS)
    assert {build.__name__ for build in set(CONTROLLERS) - builders} == _SHARED
    assert {build_bounds, build_word_pace, build_keywords} <= set(CONTROLLERS) - builders


def test_a_form_familys_spec_reaches_its_controller(tokenizer: Any) -> None:
    # "End every sentence with '!'": the sentence-mark family compiles it and its builder controls it.
    constraint = gen(Kind.WRAP, "c1", left="", right="!", unit="sentences")
    steering = compile_steering([constraint], tokenizer, prompt="Cheer the team on.", max_new_tokens=64)
    family = next(f for f in FORM_FAMILIES if f.name == "sentence_mark")
    assert "c1" in steering.controlled
    assert any(type(c).__module__.endswith(".sentence_marks") for c in steering.controllers)
    assert family.build.__module__.endswith(".sentence_marks")
