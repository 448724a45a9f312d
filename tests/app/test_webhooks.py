"""Webhook messages in Slack's and Teams' formats, delivered to a real loopback receiver with retries."""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app.webhooks import (
    Announcement,
    Choice,
    WebhookNotifier,
    message_for,
    slack_message,
    teams_message,
)
from reasoning.errors import InvalidInput

ANNOUNCEMENT = Announcement(
    confirmation_id="c-123",
    kind="constraint_conflict",
    detail="c1 \u201cAnswer in English\u201d conflicts with c2 \u201c必须用中文回答\u201d: response language en vs zh",
    choices=(
        Choice(id="c1", label="response_language", text="Answer in English"),
        Choice(id="c2", label="response_language", text="必须用中文回答"),
    ),
    resolve_path="/v1/confirmations/c-123",
)


class Receiver:
    """A loopback HTTP server answering the scripted statuses in turn (then 200), after ``delay_s``."""

    def __init__(self, statuses: Sequence[int] = (), delay_s: float = 0.0, headers: dict[str, str] | None = None):
        self.script = list(statuses)
        self.bodies: list[dict[str, Any]] = []
        self.times: list[float] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.bodies.append(json.loads(body))
                receiver.times.append(time.monotonic())
                time.sleep(delay_s)
                status = receiver.script.pop(0) if receiver.script else 200
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    made: list[Receiver] = []
    yield made
    for r in made:
        r.close()


def test_slack_message_has_text_and_blocks() -> None:
    message = slack_message(ANNOUNCEMENT)
    assert set(message) == {"text", "blocks"}
    assert "c-123" in message["text"]
    types = [b["type"] for b in message["blocks"]]
    assert types[0] == "header" and "section" in types and types[-1] == "context"
    rendered = json.dumps(message, ensure_ascii=False)
    assert "`c1`" in rendered and "必须用中文回答" in rendered and "/v1/confirmations/c-123" in rendered
    assert message_for("slack", ANNOUNCEMENT) == message


def test_teams_message_is_an_adaptive_card() -> None:
    message = teams_message(ANNOUNCEMENT)
    assert message["type"] == "message"
    attachment = message["attachments"][0]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["version"]
    facts = next(b for b in card["body"] if b["type"] == "FactSet")["facts"]
    assert [f["value"] for f in facts] == ["Answer in English", "必须用中文回答"]
    assert message_for("teams", ANNOUNCEMENT) == message


async def test_failures_are_retried_with_growing_back_off(receivers: list[Receiver]) -> None:
    receiver = Receiver(statuses=[503, 500])
    receivers.append(receiver)
    notifier = WebhookNotifier(receiver.url, "teams", attempts=5, base_delay_s=0.05)
    notifier.announce(ANNOUNCEMENT)
    [delivery] = await notifier.drain(timeout=10)
    assert delivery.delivered and delivery.attempts == 3 and delivery.status == 200
    assert len(receiver.bodies) == 3 and all(b == teams_message(ANNOUNCEMENT) for b in receiver.bodies)
    gaps = [b - a for a, b in itertools.pairwise(receiver.times)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1


async def test_a_refusal_is_not_retried(receivers: list[Receiver]) -> None:
    receiver = Receiver(statuses=[400])
    receivers.append(receiver)
    notifier = WebhookNotifier(receiver.url, "slack", attempts=4, base_delay_s=0.01)
    delivery = await notifier.deliver(slack_message(ANNOUNCEMENT))
    assert not delivery.delivered and delivery.attempts == 1 and delivery.status == 400
    assert len(receiver.bodies) == 1


async def test_attempts_are_bounded_and_failure_never_raises() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    notifier = WebhookNotifier(f"http://127.0.0.1:{port}/gone", "slack", attempts=3, base_delay_s=0.01)
    delivery = await notifier.deliver(slack_message(ANNOUNCEMENT))
    assert not delivery.delivered and delivery.attempts == 3 and delivery.status is None
    assert delivery.error and "Connect" in delivery.error


async def test_announce_returns_before_the_receiver_answers(receivers: list[Receiver]) -> None:
    receiver = Receiver(delay_s=0.5)
    receivers.append(receiver)
    notifier = WebhookNotifier(receiver.url, "slack")
    t0 = time.perf_counter()
    task = notifier.announce(ANNOUNCEMENT)
    assert time.perf_counter() - t0 < 0.05 and not task.done()
    [delivery] = await notifier.drain(timeout=10)
    assert delivery.delivered


def test_back_off_doubles_up_to_the_cap_and_honours_retry_after() -> None:
    notifier = WebhookNotifier("http://127.0.0.1:9/x", base_delay_s=0.5, max_delay_s=3.0)
    assert [notifier.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert notifier.delay(1, "2") == 2.0
    assert notifier.delay(1, "120") == 3.0
    assert notifier.delay(1, "Wed, 21 Oct 2015 07:28:00 GMT") == 0.5


@pytest.mark.parametrize(
    ("url", "fmt", "attempts"),
    [("ftp://x", "slack", 3), ("http://x", "discord", 3), ("http://x", "slack", 0)],
)
def test_bad_configuration_is_refused(url: str, fmt: str, attempts: int) -> None:
    with pytest.raises(InvalidInput):
        WebhookNotifier(url, fmt, attempts=attempts)
