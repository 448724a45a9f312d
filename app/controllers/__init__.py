"""Every controller of the API. Features register theirs here, one line each."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from app.controllers.audit import AuditController
from app.controllers.chat import ChatController
from app.controllers.confirmations import ConfirmationsController
from app.controllers.console import ConsoleController
from app.controllers.constraints import ConstraintsController
from app.controllers.diagnostics import DiagnosticsController
from app.controllers.evidence import EvidenceController
from app.controllers.feedback import FeedbackController
from app.controllers.health import HealthController
from app.controllers.keys import KeysController
from app.controllers.metrics import MetricsController
from app.controllers.models import ModelsController
from app.controllers.ontologies import OntologiesController
from app.controllers.reason import ReasonController
from app.controllers.runs import RunsController
from app.controllers.sessions import SessionsController

__all__ = ["CONTROLLERS"]

CONTROLLERS: list[ControllerRouterHandler] = [
    HealthController,
    MetricsController,
    ModelsController,
    KeysController,
    ConstraintsController,
    OntologiesController,
    EvidenceController,
    ReasonController,
    RunsController,
    AuditController,
    SessionsController,
    FeedbackController,
    ConfirmationsController,
    DiagnosticsController,
    ChatController,
    ConsoleController,
]
