"""The prompt-check batcher: concurrent analyses share one spaCy pass, answers equal the
unbatched ones, one bad prompt fails alone, and a check that would wait too long is refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import msgspec
import pytest
from spacy.tokens import Doc

from app.services.analyses import AnalysisBatcher
from reasoning.analysis import Analysis, analyse
from reasoning.constraints.extraction import MAX_PROMPT_CHARS, extract, parse_english_many
from reasoning.errors import LimitExceeded, Overloaded

PROMPTS = [
    f"Summarise risk review {i} for the board. Use fewer than {40 + i} words. Do not use any commas."
    for i in range(12)
] + ["用中文回答，不超过50个字。", "Answer in exactly 3 bullet points. 必须用中文回答。"]


def _essentials(analysis: Analysis) -> object:
    return msgspec.to_builtins(
        (
            analysis.status,
            analysis.language,
            analysis.constraints,
            analysis.sentences,
            analysis.unrecognised,
        )
    )


def test_batched_parses_give_the_extraction_of_single_parses() -> None:
    docs = parse_english_many(PROMPTS)
    assert docs[-2] is None  # Chinese only: no English parse
    assert all(isinstance(d, Doc) for i, d in enumerate(docs) if i != len(PROMPTS) - 2)
    for prompt, doc in zip(PROMPTS, docs):
        assert msgspec.to_builtins(extract(prompt, english_doc=doc)) | {"features": None} == (
            msgspec.to_builtins(extract(prompt)) | {"features": None}
        )


def test_an_oversized_prompt_gets_no_batched_parse_and_raises_alone() -> None:
    docs = parse_english_many(["x" * (MAX_PROMPT_CHARS + 1), "Use at most 5 words."])
    assert docs[0] is None and docs[1] is not None
    with pytest.raises(LimitExceeded):
        extract("x" * (MAX_PROMPT_CHARS + 1), english_doc=docs[0])


def test_concurrent_checks_are_batched_and_answered_like_single_ones() -> None:
    batcher: AnalysisBatcher[Analysis] = AnalysisBatcher(max_batch=8, max_wait_s=30.0)

    def job(prompt: str) -> Callable[[Doc | None], Analysis]:
        return lambda doc: analyse(prompt, cache=None, english_doc=doc)

    async def main() -> list[Analysis | BaseException]:
        return await asyncio.gather(
            *(batcher.submit(p, job(p)) for p in [*PROMPTS, "x" * (MAX_PROMPT_CHARS + 1)]),
            return_exceptions=True,
        )

    outcomes = asyncio.run(main())
    assert isinstance(outcomes[-1], LimitExceeded)  # its own error, the others answered
    for prompt, outcome in zip(PROMPTS, outcomes):
        assert isinstance(outcome, Analysis)
        assert _essentials(outcome) == _essentials(analyse(prompt, cache=None))
    stats = batcher.stats
    assert stats.analyses == len(PROMPTS) + 1
    assert 1 < stats.largest <= 8  # what arrived together shared a pass, within the bound
    assert stats.batches < stats.analyses
    assert stats.refused == 0


def test_a_check_that_would_wait_beyond_its_deadline_is_refused() -> None:
    batcher: AnalysisBatcher[Analysis] = AnalysisBatcher(max_batch=2, max_wait_s=30.0)

    def job(prompt: str) -> Callable[[Doc | None], Analysis]:
        return lambda doc: analyse(prompt, cache=None, english_doc=doc)

    async def main() -> tuple[list[Analysis], BaseException | None]:
        first = [asyncio.ensure_future(batcher.submit(p, job(p))) for p in PROMPTS[:6]]
        await asyncio.sleep(0)
        refused: BaseException | None = None
        try:
            await batcher.submit(PROMPTS[6], job(PROMPTS[6]), deadline_s=0.001)
        except Overloaded as exc:
            refused = exc
        return list(await asyncio.gather(*first)), refused

    answered, refused = asyncio.run(main())
    assert len(answered) == 6
    assert isinstance(refused, Overloaded) and refused.retry_after_s >= 1.0
    assert batcher.stats.refused == 1
    assert batcher.predicted_wait_s() > 0  # an idle batcher still predicts its own cost


def test_an_idle_batcher_never_refuses() -> None:
    batcher: AnalysisBatcher[int] = AnalysisBatcher(max_wait_s=1e-9)
    assert asyncio.run(batcher.submit("Use at most 5 words.", lambda doc: len(doc or ()))) > 0
