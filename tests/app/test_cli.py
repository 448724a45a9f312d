from __future__ import annotations

import asyncio
import io
import os
import stat
from pathlib import Path

import pytest
from litestar import Litestar

import migrations
from app.cli import _bootstrap, _migrate, format_answer, main
from app.controllers import CONTROLLERS
from app.settings import Settings
from store.db import create_engine, create_sessionmaker
from store.keys import find_key

MODEL_CACHE = Path(
    os.environ.get("TENET_TEST_MODEL_CACHE", Path(__file__).resolve().parents[2] / "var" / "models")
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("TENET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TENET_MODEL_CACHE_DIR", str(MODEL_CACHE))
    monkeypatch.setenv("TENET_DEVICE", "cpu")
    # A named format: `tenet ask` here is about the request, not the weights probe (tested in
    # tests/inference/weights), which builds and times every format on a fresh cache.
    monkeypatch.setenv("TENET_WEIGHTS", "float32")
    return Settings.from_env()


def test_db_upgrade_downgrade_current(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "upgrade"]) == 0
    assert f"revision {migrations.head_revision()}" in capsys.readouterr().out
    assert main(["db", "downgrade", "base"]) == 0
    assert "revision base" in capsys.readouterr().out
    assert migrations.current_revision(env.database_url) is None


def test_keys_create_prints_a_working_token_once(
    env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--tenant", "acme", "--scopes", "reason,audit:read"]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert token.startswith("tnt_") and token not in err

    async def lookup() -> list[str]:
        engine = create_engine(env.database_url)
        try:
            async with create_sessionmaker(engine)() as session:
                key = await find_key(session, token)
                assert key is not None
                return list(key.scopes)
        finally:
            await engine.dispose()

    assert asyncio.run(lookup()) == ["audit:read", "reason"]


def test_errors_are_one_line_without_traceback(
    env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--tenant", "acme", "--scopes", "reason,root"]) == 1
    err = capsys.readouterr().err
    assert "unknown scope" in err and "root" in err and "Traceback" not in err


def test_invalid_setting_stops_the_command(
    env: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TENET_DEVICE", "tpu")
    assert main(["db", "upgrade"]) == 1
    assert "TENET_DEVICE" in capsys.readouterr().err


def test_bootstrap_key_file_is_private(env: Settings) -> None:
    env.data_dir.mkdir(parents=True)
    _migrate(env)
    out = io.StringIO()
    _bootstrap(env, out)
    token = env.admin_key_file.read_text().strip()
    assert token in out.getvalue()
    assert stat.S_IMODE(env.admin_key_file.stat().st_mode) == 0o600
    again = io.StringIO()
    _bootstrap(env, again)
    assert again.getvalue() == ""  # printed once only


def test_format_answer_shows_verdicts_and_confidences() -> None:
    text = format_answer(
        {
            "answer": "Escalate the transfer.",
            "status": "ok",
            "run_id": "r1",
            "constraints": [
                {
                    "kind": "max_words",
                    "verdict": {"satisfied": True},
                    "source": {"text": "under 80 words"},
                },
                {
                    "kind": "cite_sources",
                    "verdict": {"satisfied": False, "detail": "no rule id cited"},
                },
            ],
            "confidence_by_step": {"S1.1": 0.91, "S1.2": 0.5},
        }
    )
    assert text.startswith("Escalate the transfer.")
    assert "[ok  ] max_words  «under 80 words»" in text
    assert "[FAIL] cite_sources  no rule id cited" in text
    assert "S1.1=0.91, S1.2=0.50" in text and "run: r1" in text


def test_format_answer_shows_conflicts_instead_of_an_answer() -> None:
    text = format_answer(
        {
            "answer": "",
            "status": "needs_confirmation",
            "run_id": "r2",
            "detail": "the constraints conflict",
            "conflicts": [
                {
                    "reason": "excludes",
                    "spans": [{"text": "answer in English"}, {"text": "必须用中文回答"}],
                }
            ],
            "constraints": [{"kind": "response_language", "verdict": None}],
            "confidence_by_step": {},
        }
    )
    assert text.startswith("(no answer)")
    assert "«answer in English» vs «必须用中文回答»" in text
    assert "[n/a ] response_language" in text


@pytest.mark.model
def test_model_prepare_reuses_the_cache(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "prepare"]) == 0
    assert "model cache ready at" in capsys.readouterr().out


@pytest.mark.model
@pytest.mark.slow
def test_ask_runs_one_request_in_process(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    has_reason = any(
        route.path == "/v1/reason"
        for route in Litestar(route_handlers=CONTROLLERS, logging_config=None).routes
    )
    prompt = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
    status = main(["ask", prompt, "--domain", "aml", "--max-new-tokens", "16"])
    out, err = capsys.readouterr()
    assert "loading model" in err
    if has_reason:
        assert status == 0, err
        assert "status:" in out and "run:" in out
        # The rules' decision comes first, each conclusion with its rule and the words that fired it.
        assert out.startswith("decision: decided"), out
        assert "AML-R-017" in out and "because: «" in out
        assert out.index("decision:") < out.index("status:")
    else:
        assert status == 1
        assert "POST /v1/reason is not available" in err


def test_format_answer_puts_the_decision_first() -> None:
    text = format_answer({
        "answer": "This case requires escalation to the MLRO (AML-R-017) [E4].",
        "status": "ok", "run_id": "r2", "constraints": [],
        "decision": {
            "status": "decided", "statement": "This case requires escalation to the MLRO (AML-R-017).",
            "conclusions": [{"statement": "This case requires escalation to the MLRO (AML-R-017).",
                             "rule_id": "AML-R-017", "action": "act-escalate", "evidence_ids": ["E4"],
                             "case_facts": [{"subject": "s", "predicate": "p", "object": "o",
                                             "span": {"start": 0, "end": 12, "text": "our PEP list"}}],
                             "premise_ids": []}],
            "missing": [{"input": "amount", "label": "amount", "rule_ids": ["AML-R-024"]}],
        },
    })
    first, *rest = text.splitlines()
    assert first.startswith("decision: decided")
    assert any("AML-R-017" in line and "[E4]" in line for line in rest)
    assert any("«our PEP list»" in line for line in rest)
    assert any(line.strip() == "missing: amount" for line in rest)
    assert text.index("decision:") < text.index("status: ok")
