from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import DOCUMENTS, SETTINGS_DOC, Settings, rewrite_settings_table
from reasoning.errors import InvalidInput

REPO = Path(__file__).resolve().parents[2]


def test_defaults_live_under_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"TENET_DATA_DIR": str(tmp_path / "d")})
    assert settings.data_dir == (tmp_path / "d").resolve()
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'd' / 'tenet.db'}"
    assert settings.model_cache_dir == settings.data_dir / "models"
    assert settings.admin_key_file == settings.data_dir / "admin-key.txt"
    assert (settings.model, settings.device, settings.load_model) == ("bundled", "auto", True)


def test_relative_data_dir_is_resolved_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings.from_env({}).data_dir == tmp_path.resolve() / "var"


def test_values_are_parsed_and_normalised() -> None:
    settings = Settings.from_env(
        {
            "TENET_DATABASE_URL": "postgresql+asyncpg://u@h/db",
            "TENET_DEVICE": "CUDA:1",
            "TENET_LOAD_MODEL": "off",
            "TENET_LOG_JSON": "yes",
            "TENET_LOG_LEVEL": "debug",
            "TENET_MAX_BODY_BYTES": "4096",
        }
    )
    assert settings.database_url == "postgresql+asyncpg://u@h/db"
    assert not settings.is_sqlite
    assert (settings.device, settings.load_model, settings.log_json) == ("cuda:1", False, True)
    assert (settings.log_level, settings.max_body_bytes) == ("DEBUG", 4096)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TENET_DEVICE", "tpu"),
        ("TENET_DEVICE", "cuda:x"),
        ("TENET_WEIGHTS", "fp8"),
        ("TENET_WEIGHTS", "int3"),
        ("TENET_LOAD_MODEL", "maybe"),
        ("TENET_LOG_JSON", "2"),
        ("TENET_MAX_BODY_BYTES", "lots"),
        ("TENET_MAX_BODY_BYTES", "10"),
        ("TENET_MAX_PROMPT_CHARS", "0"),
        ("TENET_LOG_LEVEL", "chatty"),
        ("TENET_DATABASE_URL", "mysql://x/y"),
        ("TENET_DATABASE_URL", "sqlite:///sync-driver.db"),
    ],
)
def test_invalid_values_name_the_variable(variable: str, value: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        Settings.from_env({variable: value})
    assert variable in caught.value.detail
    assert caught.value.extra["variable"] == variable


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_setting_is_documented(document: str) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    assert rewrite_settings_table(text) == text, (
        f"the settings table in {document} is out of date: run .venv/bin/python -m app.settings --write"
    )
    settable = {f"TENET_{name.upper()}" for name in Settings.__dataclass_fields__}
    assert settable == {variable for variable, _, _ in SETTINGS_DOC}


def test_new_fields_are_parsed_by_their_type() -> None:
    settings = Settings.from_env({"TENET_MODEL_CACHE_DIR": "/tmp/elsewhere", "TENET_LOG_JSON": "1"})
    assert settings.model_cache_dir == Path("/tmp/elsewhere")
    assert settings.log_json is True
