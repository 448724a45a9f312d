"""Announce new confirmations to an incoming webhook (Slack or Microsoft Teams).

Delivery never blocks or fails the request that opened the confirmation: the
message is POSTed by a background task, retried with exponential back-off on
connection errors, timeouts, 408, 429 and 5xx answers (at most
``attempts`` tries, the delay doubling from ``base_delay_s`` up to
``max_delay_s``; a 429's ``Retry-After`` is honoured within that cap), and a
final failure is logged, never raised. Other 4xx answers are not retried: the
URL or the message is wrong and repeating it cannot help.

Messages carry the confirmation id, what conflicts and the candidate choices
(the source spans of the prompt that conflict), never the whole prompt.

Formats:

- ``slack``: ``{"text": ..., "blocks": [...]}`` (Block Kit), as Slack's
  incoming webhooks accept.
- ``teams``: a ``message`` with one Adaptive Card attachment, as Teams
  Workflows ("post to a channel when a webhook request is received") accept.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

import httpx
import msgspec

from reasoning.errors import InvalidInput

__all__ = [
    "Announcement",
    "Choice",
    "Delivery",
    "WebhookNotifier",
    "message_for",
    "slack_message",
    "teams_message",
]

log = logging.getLogger("tenet.webhooks")

WebhookFormat = Literal["slack", "teams"]
_RETRYABLE = frozenset({408, 425, 429})


class Choice(msgspec.Struct, frozen=True, kw_only=True):
    """One candidate a person may choose: a constraint or a premise, with where it was read."""

    id: str
    label: str
    text: str


class Announcement(msgspec.Struct, frozen=True, kw_only=True):
    """What a webhook message says about one new confirmation."""

    confirmation_id: str
    kind: str
    detail: str
    choices: tuple[Choice, ...]
    resolve_path: str


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of delivering one message: attempts made and the last HTTP status."""

    delivered: bool
    attempts: int
    status: int | None
    error: str | None = None


def _title(a: Announcement) -> str:
    what = "Conflicting constraints" if a.kind == "constraint_conflict" else "Ambiguous premise"
    return f"Tenet needs a confirmation: {what}"


def _choice_line(c: Choice) -> str:
    return f"`{c.id}` ({c.label}): \u201c{c.text}\u201d"


def slack_message(a: Announcement) -> dict[str, Any]:
    """Slack incoming-webhook payload: a plain ``text`` fallback and Block Kit ``blocks``."""
    choices = "\n".join(f"\u2022 {_choice_line(c)}" for c in a.choices)
    how = f"Resolve with `POST {a.resolve_path}` and `{{\"choose\": \"<id>\"}}`."
    return {
        "text": f"{_title(a)} ({a.confirmation_id}): {a.detail}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": _title(a)[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": a.detail[:2900] or "-"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*Choose one that stands:*\n{choices}"[:2900]}},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": f"Confirmation `{a.confirmation_id}`. {how}"}],
            },
        ],
    }


def teams_message(a: Announcement) -> dict[str, Any]:
    """Teams Workflows webhook payload: a message with one Adaptive Card (schema 1.4)."""
    return {
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": [
                        {"type": "TextBlock", "size": "Medium", "weight": "Bolder", "text": _title(a), "wrap": True},
                        {"type": "TextBlock", "text": a.detail or "-", "wrap": True},
                        {
                            "type": "FactSet",
                            "facts": [{"title": f"{c.id} ({c.label})", "value": c.text} for c in a.choices],
                        },
                        {
                            "type": "TextBlock",
                            "isSubtle": True,
                            "wrap": True,
                            "text": f"Confirmation {a.confirmation_id}. Resolve with POST {a.resolve_path} "
                            '{"choose": "<id>"}.',
                        },
                    ],
                },
            }
        ],
    }


def message_for(fmt: str, a: Announcement) -> dict[str, Any]:
    """The payload of ``a`` in ``fmt`` (``slack`` or ``teams``)."""
    if fmt == "slack":
        return slack_message(a)
    if fmt == "teams":
        return teams_message(a)
    raise InvalidInput(f"unknown webhook format {fmt!r}; use slack or teams", field="format")


class WebhookNotifier:
    """Posts announcements to one webhook URL from background tasks.

    ``announce`` returns at once; ``drain`` waits for the deliveries in flight
    (shutdown, tests). The notifier keeps a reference to each task until it
    ends, so none is garbage-collected mid-delivery.
    """

    def __init__(
        self,
        url: str,
        fmt: str = "slack",
        *,
        attempts: int = 5,
        base_delay_s: float = 0.5,
        max_delay_s: float = 30.0,
        timeout_s: float = 5.0,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidInput("the webhook URL must start with http:// or https://", field="url")
        if fmt not in ("slack", "teams"):
            raise InvalidInput(f"unknown webhook format {fmt!r}; use slack or teams", field="format")
        if attempts < 1:
            raise InvalidInput("webhook attempts must be at least 1", field="attempts")
        self.url = url
        self.format = fmt
        self.attempts = attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.timeout_s = timeout_s
        self._tasks: set[asyncio.Task[Delivery]] = set()
        #: The latest outcomes (bounded), for health checks and tests.
        self.results: deque[Delivery] = deque(maxlen=100)

    def announce(self, announcement: Announcement) -> asyncio.Task[Delivery]:
        """Schedule delivery of ``announcement`` on the running loop and return its task."""
        task = asyncio.get_running_loop().create_task(self.deliver(message_for(self.format, announcement)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait after failed ``attempt`` (1-based): doubling, capped; Retry-After within the cap."""
        wait = float(self.base_delay_s * 2 ** (attempt - 1))
        if retry_after is not None:
            try:
                wait = max(wait, float(retry_after))
            except ValueError:
                pass
        return min(wait, self.max_delay_s)

    async def deliver(self, payload: dict[str, Any]) -> Delivery:
        """POST ``payload`` until it is accepted or the attempts are spent; never raises."""
        status: int | None = None
        error: str | None = None
        async with httpx.AsyncClient(timeout=self.timeout_s) as client:
            for attempt in range(1, self.attempts + 1):
                retry_after = None
                try:
                    response = await client.post(self.url, json=payload)
                    status, error = response.status_code, None
                    if response.is_success:
                        return self._done(Delivery(delivered=True, attempts=attempt, status=status))
                    if status < 500 and status not in _RETRYABLE:
                        error = f"the webhook refused the message (HTTP {status})"
                        break
                    retry_after = response.headers.get("retry-after")
                    error = f"HTTP {status}"
                except httpx.HTTPError as exc:
                    status, error = None, f"{type(exc).__name__}: {exc}"
                if attempt < self.attempts:
                    await asyncio.sleep(self.delay(attempt, retry_after))
        log.warning("webhook delivery failed after %d attempt(s): %s", attempt, error)
        return self._done(Delivery(delivered=False, attempts=attempt, status=status, error=error))

    def _done(self, delivery: Delivery) -> Delivery:
        self.results.append(delivery)
        return delivery

    async def drain(self, timeout: float | None = None) -> Sequence[Delivery]:
        """Wait for every delivery in flight (at most ``timeout`` seconds); return their outcomes."""
        pending = list(self._tasks)
        if not pending:
            return []
        done, _ = await asyncio.wait(pending, timeout=timeout)
        return [t.result() for t in done]
