"""The service container: the services of one app, built once on its runtime.

The factory puts one :class:`Services` on the app state (``services``); the
dependency providers of :mod:`app.deps` hand its members to the handlers
(``runs``, ``diagnostics``) or build the per-request services from them
(``sessions``, ``confirmations``: the caller's identity and scheduling
hints). No service is found through a module global.
"""

from __future__ import annotations

from app.auth import AuthContext
from app.diagnostics import Diagnostics
from app.runtime import Runtime
from app.schemas.constraints import ConstraintsResponse
from app.services.analyses import AnalysisBatcher
from app.services.confirmations import ConfirmationService
from app.services.pending import PendingConfirmations
from app.services.runs import RunService
from app.services.sessions import SessionService, SessionWorkspace
from app.webhooks import WebhookNotifier
from inference.scheduler import JobHints

__all__ = ["CHECK_BATCH", "CHECK_MAX_WAIT_S", "Services"]

#: Most prompt checks parsed in one spaCy pass (batches of 8-16 cost about half the CPU per prompt).
CHECK_BATCH = 32
#: Longest predicted wait (seconds) a ``POST /v1/constraints`` check accepts; beyond it, 429
#: (a request's ``X-Tenet-Deadline-S`` can only lower it). A safety valve against a growing
#: queue, not a throughput regulator: refused clients back off at least 1 s (``Retry-After``
#: has whole seconds), so a bound near the batch cycle (tens of ms) left the parser idle
#: and cut the answered rate by 40 % under 32 closed-loop clients.
CHECK_MAX_WAIT_S = 1.0


class Services:
    """What every request of one app shares above the runtime's resources.

    ``pending.notifier`` is the webhook notifier built from the settings
    (``TENET_WEBHOOK_URL``; None when unset) and may be replaced while the
    app runs. ``analyses`` batches the prompt checks of ``POST /v1/constraints``.
    """

    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings
        notifier = WebhookNotifier(settings.webhook_url, settings.webhook_format) if settings.webhook_url else None
        self.runtime = runtime
        self.pending = PendingConfirmations(notifier)
        self.runs = RunService(runtime, self.pending)
        self.workspace = SessionWorkspace(runtime)
        self.diagnostics = Diagnostics(runtime)
        self.analyses: AnalysisBatcher[ConstraintsResponse] = AnalysisBatcher(
            max_batch=CHECK_BATCH, max_wait_s=CHECK_MAX_WAIT_S
        )

    def sessions(self, auth: AuthContext, hints: JobHints) -> SessionService:
        """The caller's session service (turn locks shared with every other request of the app)."""
        return SessionService(
            self.workspace, self.runs, self.pending, self.runtime.settings,
            tenant_id=auth.tenant_id, key_id=auth.key_id, hints=hints,
        )

    def confirmations(self, auth: AuthContext, hints: JobHints) -> ConfirmationService:
        """The caller's confirmation service."""
        return ConfirmationService(self.runs, self.sessions(auth, hints), auth, hints)
