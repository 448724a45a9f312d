"""The web console in real headless Chromium against the real app served by uvicorn.

The app runs on a free loopback port in a thread with the session's loaded model;
Debian's ``chromium`` (driven by Playwright, whose own browser download is never
used) opens ``/console``, takes the bootstrap admin key, asks a short prompt,
retracts a session premise and resolves a conflict. The browser tests skip, saying
why, only when Chromium or Playwright is not installed (``make install`` installs
Chromium when it runs as root); the first test needs neither and runs in ``make test-fast``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from app.bootstrap import bootstrap_admin_key, bootstrap_domains
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from inference.loader import LoadedModel

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
AML_PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on "
    "our PEP list. Should this be escalated? Answer in under 80 words and cite the rules you rely on."
)


DECISION_PROMPT = (
    "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
    " Answer in under 80 words, cite the rules you rely on, and do not cite rules in force before 2020."
)


class Served:
    """The running server: its base URL and the default tenant's admin key."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url
        self.token = token


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _bootstrap(settings: Settings) -> str:
    """The admin key and the bundled domains, written before the server starts."""
    runtime = Runtime(settings)
    try:
        token = await bootstrap_admin_key(runtime.sessionmaker, None)
        await bootstrap_domains(runtime.sessionmaker)
    finally:
        await runtime.close()
    assert token is not None
    return token


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    migrated_sqlite_template: Path,
    loaded_model: LoadedModel,
) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("console-app")
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    settings = Settings(data_dir=data_dir, load_model=False, device="cpu")
    # In its own thread: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        token = pool.submit(asyncio.run, _bootstrap(settings)).result()
    runtime = Runtime(settings)
    runtime.set_model(loaded_model)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings, runtime=runtime), host="127.0.0.1", port=port,
                       log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="console-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", token)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (make install adds it when run as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(served: Served, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{served.base_url}/console")
    page.fill("#api-key", served.token)
    page.click("#key-form button[type=submit]")
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def _screenshot(page: Any, name: str) -> Path:
    artifacts = REPO_ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    path = artifacts / name
    page.screenshot(path=str(path), full_page=True)
    return path


def _cy_nodes(page: Any, container: str, selector: str = "node") -> list[dict[str, Any]]:
    """The data of the nodes Cytoscape drew in ``container`` (read from its live instance)."""
    nodes: list[dict[str, Any]] = page.evaluate(
        "([container, selector]) => window.tenetConsole.nodesOf(container, selector)",
        [container, selector],
    )
    return nodes


async def test_console_page_is_public_and_holds_no_data(client: Any) -> None:
    """Served without a key, behind a CSP, only the listed assets; the API still wants a key."""
    page = await client.get("/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "unsafe-eval" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "Bearer" not in page.text
    for asset, media in (("console.js", "text/javascript"), ("api.js", "text/javascript"),
                         ("graphs.js", "text/javascript"), ("console.css", "text/css"),
                         ("cytoscape.min.js", "text/javascript")):
        response = await client.get(f"/console/{asset}")
        assert response.status_code == 200, asset
        assert response.headers["content-type"].startswith(media), asset
    for name in ("index.html", "vendor", "..%2Fcontrollers%2Fconsole.py", "cytoscape.LICENSE"):
        assert (await client.get(f"/console/{name}")).status_code == 404, name
    assert (await client.get("/v1/models")).status_code == 401


def _publish(shot: Path) -> None:
    """Refresh the README's screenshot from a test artifact, only when asked
    (TENET_UPDATE_SCREENSHOTS=1), so a test run leaves the tree clean."""
    if os.environ.get("TENET_UPDATE_SCREENSHOTS") == "1":
        docs_img = REPO_ROOT / "docs" / "img"
        docs_img.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, docs_img / shot.name)


@pytest.mark.model
@pytest.mark.browser
def test_prompt_round_trips_and_the_graphs_render(page: Any) -> None:
    page.fill("#prompt", "Use exactly 2 bullet points to say what a PEP is. Do not use the word risk.")
    page.fill("#max-new-tokens", "24")
    page.click("#submit")
    page.wait_for_function(
        "() => document.getElementById('status').textContent.startsWith('Done')", timeout=240_000
    )
    assert page.inner_text("#status").startswith("Done"), page.inner_text("#status")
    assert page.inner_text("#answer").strip()
    assert page.inner_text("#run-id").strip()
    assert page.locator("#steps li").count() >= 1
    assert page.locator("#confidence-chart svg rect.bar").count() == page.locator("#steps li").count()
    assert page.locator("#constraint-graph canvas").count() > 0

    constraints = [n for n in _cy_nodes(page, "constraint-graph") if "premise" not in n["classes"]]
    kinds = {n["kind"] for n in constraints}
    assert len(constraints) >= 2, constraints
    assert any("forbidden" in kind or "bullet" in kind for kind in kinds), kinds
    assert all(n["verdict"] in {"satisfied", "violated"} for n in constraints), constraints
    assert page.locator("#constraints li").count() == len(constraints)
    assert "(PROV-N" not in page.inner_text("#provenance")
    assert page.inner_text("#provenance").startswith("document")

    _publish(_screenshot(page, "console.png"))


@pytest.mark.model
@pytest.mark.browser
def test_the_decision_comes_first_and_is_a_path_in_the_evidence_graph(page: Any) -> None:
    """SCENARIOS.md's AML case: the rules' decision is shown first, stated and cited by the
    answer, and drawn as words -> rule -> action through the evidence graph (the README's
    screenshot)."""
    page.fill("#domain", "aml")
    page.fill("#prompt", DECISION_PROMPT)
    page.fill("#max-new-tokens", "56")
    page.click("#submit")
    page.wait_for_function(
        "() => document.getElementById('status').textContent.startsWith('Done')", timeout=300_000
    )
    assert page.locator("#decision").is_visible()
    assert page.inner_text("#decision-status") == "decided"
    conclusions = page.locator("#conclusions li.conclusion")
    assert conclusions.count() >= 1 and "AML-R-017" in page.inner_text("#conclusions")
    assert "fired by" in page.inner_text("#conclusions")
    answer = page.inner_text("#answer")
    assert answer.startswith(page.inner_text("#decision-statement").split(" (")[0]), answer
    assert "escalat" in answer.lower() and "[E" in answer, answer
    cite = page.locator("#constraints li", has_text="cite_sources")
    assert cite.count() >= 1 and all("ok" in (cite.nth(i).get_attribute("class") or "")
                                     for i in range(cite.count())), page.inner_text("#constraints")

    rules = _cy_nodes(page, "evidence-graph", "node.decision.rule")
    assert "AML-R-017" in {n["label"] for n in rules}, rules
    assert _cy_nodes(page, "evidence-graph", "node.decision.action")
    assert _cy_nodes(page, "evidence-graph", "node.decision.case")
    path_edges: int = page.evaluate(
        "() => window.tenetConsole.edgesOf('evidence-graph', 'edge.decision').length"
    )
    assert path_edges >= 2 * conclusions.count()
    assert "decision path" in page.inner_text("#evidence-legend")
    _publish(_screenshot(page, "console-decision.png"))


@pytest.mark.model
@pytest.mark.browser
def test_session_retraction_highlights_recomputed_nodes(page: Any) -> None:
    page.check("#use-session")
    page.fill("#domain", "aml")
    page.fill("#prompt", AML_PROMPT)
    page.fill("#max-new-tokens", "12")
    page.click("#submit")
    page.wait_for_function(
        "() => document.getElementById('status').textContent.startsWith('Done')", timeout=300_000
    )
    assert page.inner_text("#session-id").strip()
    assert len(_cy_nodes(page, "evidence-graph")) > 0
    dag = _cy_nodes(page, "dag-graph")
    assert {"premise", "constraint", "evidence", "step", "answer"} <= {n["kind"] for n in dag}
    assert _cy_nodes(page, "dag-graph", ".recomputed") == []

    tax = page.locator("#premises li", has_text="tax rate")
    assert tax.count() == 1, page.inner_text("#premises")
    premise_id = tax.get_attribute("data-premise-id")
    tax.locator("button", has_text="Retract").click()
    page.wait_for_function(
        "() => document.getElementById('status').textContent.startsWith('Retracted')", timeout=300_000
    )
    recomputed = _cy_nodes(page, "dag-graph", ".recomputed")
    assert recomputed, page.inner_text("#status")
    assert any(n["kind"] == "answer" for n in recomputed)
    retracted = _cy_nodes(page, "dag-graph", ".retracted")
    assert [n["id"] for n in retracted] == [f"premise:{premise_id}"]
    assert "retracted" in (page.locator(f"#premises li[data-premise-id='{premise_id}']").get_attribute("class") or "")
    _publish(_screenshot(page, "console-retraction.png"))


@pytest.mark.model
@pytest.mark.browser
def test_conflict_awaits_confirmation_and_a_button_resolves_it(page: Any) -> None:
    page.fill("#prompt", "Answer in English. 必须用中文回答。What is a bond?")
    page.fill("#max-new-tokens", "12")
    page.click("#submit")
    page.wait_for_function(
        "() => document.getElementById('status').textContent.startsWith('Done')", timeout=240_000
    )
    assert page.inner_text("#status").startswith("Done (needs_confirmation)"), page.inner_text("#status")
    pending = page.locator("#confirmations li[data-confirmation-id]")
    assert pending.count() == 1, page.inner_text("#confirmations")
    confirmation_id = pending.get_attribute("data-confirmation-id")
    assert pending.locator("button.choice").count() >= 2
    english = pending.locator("button.choice", has_text="English")
    assert english.count() == 1, pending.inner_text()

    english.click()
    page.wait_for_function(
        "() => /^(Resolved|[0-9]{3} )/.test(document.getElementById('status').textContent)",
        timeout=240_000,
    )
    assert page.inner_text("#status").startswith(f"Resolved {confirmation_id}"), page.inner_text("#status")
    assert page.inner_text("#answer").strip() and not page.inner_text("#answer").startswith("needs_")
    page.wait_for_function(
        "() => !document.querySelector('#confirmations li[data-confirmation-id]')", timeout=30_000
    )
