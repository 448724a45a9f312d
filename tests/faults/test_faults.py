"""Fault injection: a full disk, a read-only data directory, a killed database connection and a
killed process. Each must end in a clear problem response or a clean refusal to start,
readiness must tell the truth, and nothing may be half-written.

The file-system faults mount a small tmpfs (root with CAP_SYS_ADMIN); without that they skip
with the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from app.cli import main as cli_main
from app.settings import Settings
from store.db import sqlite_unwritable
from tests.conftest import MODEL_CACHE, POSTGRES_URL, postgres_available
from tests.inloop import serve, settings_on

REPO = Path(__file__).resolve().parents[2]
TENET = [sys.executable, "-m", "app.cli"]


def _mount(target: Path, options: str) -> None:
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({result.stderr.strip() or 'not root'})")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    target = tmp_path / "small"
    target.mkdir()
    _mount(target, "size=4m,mode=0700")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "TENET_DATA_DIR": str(data_dir), "TENET_LOAD_MODEL": "false",
            "TENET_MODEL_CACHE_DIR": str(MODEL_CACHE), **extra}


def test_a_read_only_data_directory_is_a_clean_refusal_to_start(
    small_fs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tenet serve``'s own entry point, in this process (a server start is not needed to see
    it refuse before serving)."""
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    for name, value in _env(small_fs).items():
        monkeypatch.setenv(name, value)
    status = cli_main(["serve", "--port", "0"])
    captured = capsys.readouterr()
    assert status == 1
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert "not writable" in captured.err and str(small_fs) in captured.err
    assert len(captured.err.strip().splitlines()) == 1


async def test_a_full_disk_answers_503_and_readiness_says_so(
    small_fs: Path, migrated_sqlite_template: Path
) -> None:
    shutil.copy(migrated_sqlite_template, small_fs / "tenet.db")
    settings = Settings(data_dir=small_fs, load_model=False, model_cache_dir=MODEL_CACHE)
    async with serve(settings) as served:
        client, admin = served.client, served.admin
        filler = small_fs / "filler"
        with filler.open("wb") as out:
            try:
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
            except OSError:
                pass
        failures = []
        refused_tenant = ""
        for i in range(20):  # the WAL may have room for a few pages: write until it refuses
            response = await client.post("/v1/keys", headers=admin,
                                         json={"tenant": f"full-{i}", "scopes": ["reason"]})
            assert response.status_code in (201, 503), response.text
            if response.status_code == 503:
                failures.append(response)
                refused_tenant = f"full-{i}"
                break
        assert failures, "the full disk never refused a write"
        body = failures[0].json()
        assert failures[0].headers["content-type"].startswith("application/problem+json")
        assert body["storage"] == "disk full" and "Traceback" not in failures[0].text
        ready = await client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["database"] == "disk full"
        filler.unlink()
        healed = await client.post("/v1/keys", headers=admin,
                                   json={"tenant": "after", "scopes": ["reason"]})
        assert healed.status_code == 201, healed.text
        keys = (await client.get("/v1/keys", headers=admin, params={"limit": "1000"})).json()
        tenants = {k["tenant"] for k in keys["data"]}
        assert refused_tenant not in tenants  # the refused creation left no key behind
        events = (await client.get("/v1/audit/verify", headers=admin)).json()
        assert events["intact"] is True


@pytest.fixture
def pg_settings(
    request: pytest.FixtureRequest, tmp_path: Path, migrated_sqlite_template: Path
) -> Settings:
    if not postgres_available():
        pytest.skip(f"PostgreSQL does not answer at {POSTGRES_URL}")
    return settings_on("postgres", request, tmp_path, migrated_sqlite_template)


@pytest.mark.postgres
async def test_killed_database_connections_are_recovered_or_a_clear_503(
    pg_settings: Settings,
) -> None:
    settings = pg_settings
    database = settings.database_url.rsplit("/", 1)[1]
    async with serve(settings) as served:
        client, admin = served.client, served.admin
        assert (await client.get("/v1/keys", headers=admin)).status_code == 200
        import asyncpg

        admin_conn = await asyncpg.connect(POSTGRES_URL.replace("+asyncpg", ""))
        try:
            killed = await admin_conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = $1 AND pid <> pg_backend_pid()", database)
        finally:
            await admin_conn.close()
        assert killed >= 1
        statuses = []
        for i in range(3):
            response = await client.post("/v1/keys", headers=admin,
                                         json={"tenant": f"pg-{i}", "scopes": ["reason"]})
            statuses.append(response.status_code)
            assert response.status_code != 500, response.text
            if response.status_code == 503:
                assert response.json()["storage"] == "database unreachable"
        assert statuses[-1] == 201  # the pool reconnects
        ready = await client.get("/readyz")
        assert ready.json()["database"] == "ok"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([*TENET, "serve", "--port", str(port)], env=_env(data_dir),
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError("tenet serve did not start")


def _chain(n: int) -> bytes:
    lines = ["@prefix ex: <https://example.org/kill#> .",
             "@prefix owl: <http://www.w3.org/2002/07/owl#> .",
             "ex:next a owl:TransitiveProperty ."]
    lines += [f"ex:n{i} ex:next ex:n{i + 1} ." for i in range(n)]
    return "\n".join(lines).encode()


def test_sigkill_during_an_upload_leaves_nothing_half_written(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = _free_port()
    first = _start(data_dir, port)
    key = (data_dir / "admin-key.txt").read_text().strip()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "text/turtle"}

    def upload() -> None:
        try:
            httpx.post(f"http://127.0.0.1:{port}/v1/ontologies?domain=killed",
                       content=_chain(1500), headers=headers, timeout=120)
        except httpx.HTTPError:
            pass

    uploading = threading.Thread(target=upload)
    uploading.start()
    time.sleep(1.0)  # parsing and materialising take seconds
    first.send_signal(signal.SIGKILL)
    uploading.join(timeout=60)
    first.wait(timeout=30)
    with sqlite3.connect(data_dir / "tenet.db") as db:
        versions = db.execute("SELECT count(*) FROM ontology_versions WHERE domain = 'killed'")
        assert versions.fetchone()[0] == 0
        uploaded = db.execute("SELECT count(*) FROM audit_events WHERE event_type = 'ontology.uploaded'")
        assert uploaded.fetchone()[0] == 0
    second = _start(data_dir, port)
    try:
        auth = {"Authorization": f"Bearer {key}"}
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert ready.status_code == 503 and ready.json()["database"] == "ok"  # no model: the truth
        listed = httpx.get(f"http://127.0.0.1:{port}/v1/ontologies?domain=killed", headers=auth)
        assert listed.status_code == 200 and listed.json()["data"] == []
        verified = httpx.get(f"http://127.0.0.1:{port}/v1/audit/verify", headers=auth).json()
        assert verified["intact"] is True
        name = f"after-{uuid.uuid4().hex[:6]}"
        created = httpx.post(f"http://127.0.0.1:{port}/v1/keys", headers=auth,
                             json={"tenant": name, "scopes": ["reason"]})
        assert created.status_code == 201, created.text
    finally:
        second.terminate()
        second.wait(timeout=60)


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """``unwritable(path)``: the existing file ``path`` can no longer be opened for writing,
    even by root (a read-only bind mount of the file over itself; chmod 0444 for other users).
    Undone afterwards."""
    mounted: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() != 0:
            path.chmod(0o444)
            return
        result = subprocess.run(["mount", "--bind", "-o", "ro", str(path), str(path)],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            pytest.skip(f"cannot bind-mount a file read-only here ({result.stderr.strip()})")
        mounted.append(path)

    yield make
    for path in reversed(mounted):
        subprocess.run(["umount", str(path)], check=False)


@pytest.mark.parametrize("suffix", ["-shm", "-wal", ""])
def test_an_unwritable_sqlite_file_is_a_clean_refusal_to_start(
    suffix: str, tmp_path: Path, migrated_sqlite_template: Path,
    unwritable: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An ``-shm`` SQLite maps but cannot write ended the process by SIGBUS with no log line:
    ``tenet serve`` checks the database, ``-wal`` and ``-shm`` files first and refuses in one
    line naming the file."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    database = data_dir / "tenet.db"
    shutil.copy(migrated_sqlite_template, database)
    with sqlite3.connect(database) as db:  # leaves -wal and -shm behind while it is open
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE fault_probe (x INTEGER)")
        db.commit()
        target = Path(f"{database}{suffix}")
        target.touch()
        unwritable(target)
        for name, value in _env(data_dir).items():
            monkeypatch.setenv(name, value)
        status = cli_main(["serve", "--port", "0"])
    captured = capsys.readouterr()
    assert status == 1
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert f"{target} is not writable" in captured.err, captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_a_writable_database_passes_the_start_check(
    tmp_path: Path, migrated_sqlite_template: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    settings = Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE)
    assert sqlite_unwritable(settings.database_url) is None
    assert sorted(p.name for p in data_dir.iterdir()) == ["tenet.db"]  # the probe is gone
    assert sqlite_unwritable(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'x.db'}") is not None


async def test_a_database_locked_by_another_writer_is_a_503_and_writes_resume_after(
    tmp_path: Path, migrated_sqlite_template: Path
) -> None:
    """Another process holding SQLite's write lock past the busy timeout was a 500 ("database
    is locked"): it is a 503 problem (storage: database busy) and nothing is half-written."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    settings = Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE)
    async with serve(settings) as served:
        client, admin = served.client, served.admin
        assert (await client.get("/v1/keys", headers=admin)).status_code == 200
        blocker = sqlite3.connect(data_dir / "tenet.db", isolation_level=None, timeout=0)
        try:
            blocker.execute("BEGIN EXCLUSIVE")
            refused = await client.post("/v1/keys", headers=admin,
                                        json={"tenant": "locked-out", "scopes": ["reason"]})
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert refused.status_code == 503, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["storage"] == "database busy" and "Retry-After" in refused.headers
        created = await client.post("/v1/keys", headers=admin,
                                    json={"tenant": "after-lock", "scopes": ["reason"]})
        assert created.status_code == 201, created.text
        keys = (await client.get("/v1/keys", headers=admin, params={"limit": "1000"})).json()
        assert "locked-out" not in {k["tenant"] for k in keys["data"]}
        assert (await client.get("/v1/audit/verify", headers=admin)).json()["intact"] is True
