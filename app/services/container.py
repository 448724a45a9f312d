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
from app.services.confirmations import ConfirmationService
from app.services.pending import PendingConfirmations
from app.services.runs import RunService
from app.services.sessions import SessionService, SessionWorkspace
from app.webhooks import WebhookNotifier
from inference.scheduler import JobHints

__all__ = ["Services"]


class Services:
    """What every request of one app shares above the runtime's resources.

    ``pending.notifier`` is the webhook notifier built from the settings
    (``TENET_WEBHOOK_URL``; None when unset) and may be replaced while the
    app runs.
    """

    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings
        notifier = WebhookNotifier(settings.webhook_url, settings.webhook_format) if settings.webhook_url else None
        self.runtime = runtime
        self.pending = PendingConfirmations(notifier)
        self.runs = RunService(runtime, self.pending)
        self.workspace = SessionWorkspace(runtime)
        self.diagnostics = Diagnostics(runtime)

    def sessions(self, auth: AuthContext, hints: JobHints) -> SessionService:
        """The caller's session service (turn locks shared with every other request of the app)."""
        return SessionService(
            self.workspace, self.runs, self.pending, self.runtime.settings,
            tenant_id=auth.tenant_id, key_id=auth.key_id, hints=hints,
        )

    def confirmations(self, auth: AuthContext, hints: JobHints) -> ConfirmationService:
        """The caller's confirmation service."""
        return ConfirmationService(self.runs, self.sessions(auth, hints), auth, hints)
