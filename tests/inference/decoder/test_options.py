"""``DecodeOptions``: one definition of every decode setting, validated once, read by the search.

The HTTP request's options share its limits, so the API accepts exactly the
values the decoder accepts.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from inference.decoder.beam import BeamConfig
from inference.decoder.options import BEAMS, NEW_TOKENS, SEEDS, DecodeOptions, Limit
from inference.pipeline import ReasonOptions
from reasoning.budget import Budget
from reasoning.errors import InvalidInput


def test_the_defaults_are_valid_and_documented_values() -> None:
    options = DecodeOptions()
    assert (options.width, options.max_new_tokens, options.min_new_tokens) == (4, 64, 0)
    assert (options.entropy_bound, options.contrast_margin) == (0.85, 0.5)
    assert (options.max_repairs, options.counterfactual_flops_share) == (3, 0.05)
    assert options.prune and not options.counterfactual_checks


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("width", 0),
        ("width", BEAMS.high + 1),
        ("max_new_tokens", 0),
        ("max_new_tokens", NEW_TOKENS.high + 1),
        ("min_new_tokens", -1),
        ("min_new_tokens", 65),  # above the default max_new_tokens
        ("seed", -1),
        ("seed", 2**32),
        ("max_repairs", -1),
        ("max_step_tokens", 0),
        ("probe_every", 0),
        ("min_violations", 0),
        ("max_variants", -1),
        ("length_penalty", math.inf),
        ("entropy_bound", 1.5),
        ("entropy_bound", math.nan),
        ("contrast_margin", -0.1),
        ("counterfactual_flops_share", -0.01),
        ("counterfactual_flops_share", math.inf),
    ],
)
def test_a_value_out_of_range_is_refused_naming_its_field(field: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as raised:
        DecodeOptions(**{field: value})
    assert raised.value.extra["field"] == field
    assert field in raised.value.detail


def test_the_limits_themselves_are_accepted() -> None:
    options = DecodeOptions(
        width=BEAMS.high, max_new_tokens=NEW_TOKENS.high, min_new_tokens=NEW_TOKENS.high,
        seed=SEEDS.high, max_repairs=0, entropy_bound=1.0, counterfactual_flops_share=0.0,
    )
    assert (options.width, options.max_new_tokens, options.seed) == (16, 4096, 2**32 - 1)


@pytest.mark.parametrize(
    ("request_field", "decode_field", "limit"),
    [("num_beams", "width", BEAMS), ("max_new_tokens", "max_new_tokens", NEW_TOKENS), ("seed", "seed", SEEDS)],
)
def test_the_request_accepts_exactly_what_the_decoder_accepts(
    request_field: str, decode_field: str, limit: Limit
) -> None:
    for value in (limit.low - 1, limit.low, limit.high, limit.high + 1):
        decode_args: dict[str, Any] = {decode_field: value}
        request_args: dict[str, Any] = {request_field: value}
        try:
            DecodeOptions(**decode_args)
            decoder_ok = True
        except InvalidInput:
            decoder_ok = False
        try:
            ReasonOptions(**request_args)
            request_ok = True
        except InvalidInput as exc:
            assert exc.extra["field"] == f"options.{request_field}"
            request_ok = False
        assert request_ok == decoder_ok == (limit.low <= value <= limit.high), value


def test_the_request_body_reports_the_shared_limit_as_before() -> None:
    with pytest.raises(InvalidInput, match=r"^options\.num_beams must be between 1 and 16$"):
        msgspec.json.decode(b'{"num_beams": 17}', type=ReasonOptions)
    with pytest.raises(InvalidInput, match=r"^options\.seed must be between 0 and 2\*\*32 - 1$"):
        ReasonOptions(seed=-1)


def test_from_budget_reads_the_budget_and_overrides_win() -> None:
    budget = Budget(beam_width=3, max_new_tokens=256, evidence_hops=2, counterfactual_checks=True)
    options = DecodeOptions.from_budget(budget)
    assert (options.width, options.max_new_tokens, options.counterfactual_checks) == (3, 256, True)
    override = DecodeOptions.from_budget(budget, width=1, prune=False, seed=7)
    assert (override.width, override.prune, override.seed, override.max_new_tokens) == (1, False, 7, 256)
    with pytest.raises(InvalidInput):
        DecodeOptions.from_budget(budget, width=BEAMS.high + 1)


def test_the_beam_search_reads_its_settings_from_the_options() -> None:
    options = DecodeOptions(width=2, max_repairs=2, max_step_tokens=10)
    config = BeamConfig(options, eos_ids=frozenset({2}))
    assert config.options is options and config.eos_ids == frozenset({2})
    assert options.repair_slack == 2 * 10 + 2


def test_options_are_immutable() -> None:
    options = DecodeOptions()
    with pytest.raises(AttributeError):
        options.width = 2  # type: ignore[misc]
