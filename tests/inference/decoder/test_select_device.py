"""Where the beam search selects tokens: beside the steering's tables."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from inference.decoder.beam import select_device
from inference.decoder.compile import compile_steering
from inference.decoder.unsteered import Unsteered
from reasoning.constraints.model import Constraint, Kind

CPU, META = torch.device("cpu"), torch.device("meta")


def test_the_select_follows_the_steering_tables(tokenizer: object) -> None:
    steering = compile_steering([Constraint(id="c1", kind=Kind.NO_COMMA)], tokenizer, prompt="Hi.")
    assert steering.device == CPU
    assert select_device([steering], META) == CPU  # a model elsewhere: logits come to the tables


def test_without_tables_the_select_stays_beside_the_model() -> None:
    assert select_device([Unsteered()], META) == META


def test_branch_steerings_on_different_devices_are_refused() -> None:
    with pytest.raises(ValueError, match="different devices"):
        select_device([SimpleNamespace(device=CPU), SimpleNamespace(device=META)], CPU)  # type: ignore[list-item]
