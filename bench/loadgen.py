"""A lean HTTP/1.1 load generator (closed or open loop), run in a process of its own.

``python -m bench.loadgen`` reads one JSON spec on stdin and prints one JSON
result on stdout (see :class:`Spec` and :class:`Outcome`).

Why not httpx in the benchmark's own process: on a 2-core machine an asyncio
httpx client spends about 2.5 ms of CPU per request, more than the service
spends answering ``/v1/constraints``. Sharing a core and an event loop with
the measurement, the client then becomes the bottleneck and its own
scheduling delays show up as the server's latency. This client writes
pre-encoded requests on keep-alive connections and parses only the status
line and the headers it needs (``Content-Length``, chunked transfer,
``Retry-After``, ``Connection``), so the figures are the server's, and it
reports its own CPU time so a reader can check.

Closed loop (the default): semantics match ``bench.service.drive``: ``clients`` loops each send their
next request as soon as the last answered, bodies round robin, until
``max_requests`` were sent or ``max_seconds`` passed (a request already sent
is awaited). Latency is from writing the request to reading the whole body.
A 429/503 with ``Retry-After`` is a refusal: the client backs off for it
(at most ``retry_cap_s``) and the request is not counted as a success.

Open loop (``rate`` > 0): a closed loop of ``C`` clients measures capacity,
not latency at a given load: by Little's law its latency is about ``C`` /
throughput whatever the service does. The open loop instead sends requests
at a fixed offered rate, whether or not earlier ones were answered, as
independent users do: the i-th request is scheduled at ``i / rate`` seconds
(``arrivals="even"``) or at the i-th arrival of a Poisson process of that
rate (``arrivals="poisson"``, exponential gaps drawn from ``seed``). At its
time it takes an idle keep-alive connection, or opens one (at most
``clients`` connections; beyond that it waits for one to come free).
Latency is measured from the *scheduled* send time to the whole answer, so
the time a request waited for a connection, or for this process to get
the CPU, counts as the service's (the conservative side); ``send_lag_ms``
lists how late each request left against its schedule so a reader can
tell the two apart. A refusal is not retried and does not slow the
schedule: refused requests are counted and left out of the latencies.
Scheduling stops after ``max_requests`` or ``max_seconds``; ``elapsed_s``
runs from the first scheduled send to the last answer.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import msgspec

__all__ = ["Outcome", "Spec", "run_spec", "schedule"]


class Spec(msgspec.Struct, frozen=True, kw_only=True):
    """One load phase: where to send what, how many clients, and its bounds."""

    host: str
    port: int
    path: str
    bodies: list[Any]
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    clients: int = 1
    max_requests: int = 1
    max_seconds: float = 10.0
    retry_cap_s: float = 2.0
    timeout_s: float = 300.0
    #: Offered requests per second for the open loop; 0 runs the closed loop.
    rate: float = 0.0
    #: Open-loop arrival process: "poisson" (exponential gaps) or "even" (fixed gaps).
    arrivals: str = "poisson"
    #: Seed of the Poisson gaps (the same seed gives the same schedule).
    seed: int = 0


class Outcome(msgspec.Struct, kw_only=True):
    """What one phase measured; ``cpu_s`` is this process's own CPU time during the phase."""

    latencies_ms: list[float] = msgspec.field(default_factory=list)
    statuses: dict[int, int] = msgspec.field(default_factory=dict)
    refused: int = 0
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    #: Open loop only: how late each request was written against its schedule (ms).
    send_lag_ms: list[float] = msgspec.field(default_factory=list)
    #: Open loop only: the most connections open at once.
    connections: int = 0


class _Connection:
    """One keep-alive connection; reopened when the server closes it."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        """Open the connection unless it is open (a connection the server closed while it
        was idle, as ``tenet serve``'s header deadline does, is opened again)."""
        if self.writer is None or self.writer.is_closing() or self.reader is None or self.reader.at_eof():
            if self.writer is not None:
                self.writer.close()
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def request(self, payload: bytes) -> tuple[int, str | None]:
        """Send ``payload`` (a whole request), read the whole answer; return status and Retry-After."""
        await self.connect()
        assert self.reader is not None and self.writer is not None
        self.writer.write(payload)
        status_line = await self.reader.readuntil(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        length, chunked, close, retry_after = 0, False, False, None
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = b"close" in value.lower()
            elif name == b"retry-after":
                retry_after = value.strip().decode("latin-1")
        if chunked:
            await self._read_chunks()
        elif length:
            await self.reader.readexactly(length)
        if close:
            self.close()
        return status, retry_after

    async def _read_chunks(self) -> None:
        assert self.reader is not None
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await self.reader.readexactly(size + 2)
            if size == 0:
                return

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def _send(connection: _Connection, payload: bytes, timeout_s: float) -> tuple[int, str | None]:
    """One request's status and Retry-After; a failed or timed-out exchange is status 0 and
    closes the connection (`request` opens it again next time)."""
    try:
        return await asyncio.wait_for(connection.request(payload), timeout_s)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
        connection.close()
        return 0, None


def encode_requests(spec: Spec) -> list[bytes]:
    """Each body as a complete HTTP/1.1 POST with keep-alive."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in spec.headers.items())
    out = []
    for body in spec.bodies:
        data = json.dumps(body).encode("utf-8")
        head = (
            f"POST {spec.path} HTTP/1.1\r\nHost: {spec.host}:{spec.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra}\r\n"
        )
        out.append(head.encode("latin-1") + data)
    return out


async def drive(spec: Spec, payloads: Sequence[bytes]) -> Outcome:
    """The closed loop of ``spec`` over ``payloads`` (see the module docstring)."""
    outcome = Outcome()
    statuses: Counter[int] = Counter()
    sent = 0
    connections = [_Connection(spec.host, spec.port) for _ in range(spec.clients)]
    # Connected before the clock starts, as long-running clients are: otherwise a short
    # phase counts each client's TCP set-up (all at once) in its first request's latency.
    await asyncio.gather(*(c.connect() for c in connections), return_exceptions=True)
    started = time.perf_counter()
    end = started + spec.max_seconds

    async def loop(connection: _Connection) -> None:
        nonlocal sent
        try:
            while sent < spec.max_requests and time.perf_counter() < end:
                payload = payloads[sent % len(payloads)]
                sent += 1
                t0 = time.perf_counter()
                status, retry_after = await _send(connection, payload, spec.timeout_s)
                statuses[status] += 1
                if 200 <= status < 300:
                    outcome.latencies_ms.append((time.perf_counter() - t0) * 1000)
                elif status in (429, 503) and retry_after:
                    outcome.refused += 1
                    await asyncio.sleep(min(float(retry_after), spec.retry_cap_s))
        finally:
            connection.close()

    await asyncio.gather(*(loop(c) for c in connections))
    outcome.elapsed_s = time.perf_counter() - started
    outcome.statuses = dict(statuses)
    return outcome


def schedule(spec: Spec) -> list[float]:
    """The open loop's send times in seconds from its start, at most ``max_requests`` of them
    and none at or after ``max_seconds`` (see the module docstring)."""
    if spec.rate <= 0:
        raise ValueError("an open loop needs rate > 0")
    if spec.arrivals not in ("poisson", "even"):
        raise ValueError(f"unknown arrival process {spec.arrivals!r}")
    gaps = random.Random(spec.seed)
    times: list[float] = []
    at = 0.0
    while len(times) < spec.max_requests:
        at = len(times) / spec.rate if spec.arrivals == "even" else at + gaps.expovariate(spec.rate)
        if at >= spec.max_seconds:
            break
        times.append(at)
    return times


async def drive_open(spec: Spec, payloads: Sequence[bytes]) -> Outcome:
    """The open loop of ``spec`` over ``payloads`` (see the module docstring)."""
    outcome = Outcome()
    statuses: Counter[int] = Counter()
    times = schedule(spec)
    idle: list[_Connection] = [_Connection(spec.host, spec.port) for _ in range(min(spec.clients, 32))]
    # Connected before the clock starts (as in the closed loop): TCP set-up is not the service's latency.
    await asyncio.gather(*(c.connect() for c in idle), return_exceptions=True)
    opened = len(idle)
    freed = asyncio.Condition()
    loop = asyncio.get_running_loop()
    started = time.perf_counter()

    async def take() -> _Connection:
        nonlocal opened
        async with freed:
            while not idle and opened >= spec.clients:
                await freed.wait()
            if idle:
                return idle.pop()
            opened += 1
            return _Connection(spec.host, spec.port)

    async def give(connection: _Connection) -> None:
        async with freed:
            idle.append(connection)
            freed.notify()

    async def one(index: int, due: float) -> None:
        connection = await take()
        payload = payloads[index % len(payloads)]
        outcome.send_lag_ms.append((time.perf_counter() - due) * 1000)
        status, retry_after = await _send(connection, payload, spec.timeout_s)
        statuses[status] += 1
        if 200 <= status < 300:
            outcome.latencies_ms.append((time.perf_counter() - due) * 1000)
        elif status in (429, 503) and retry_after:
            outcome.refused += 1
        await give(connection)

    tasks = []
    for index, offset in enumerate(times):
        due = started + offset
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(loop.create_task(one(index, due)))
    await asyncio.gather(*tasks)
    outcome.elapsed_s = time.perf_counter() - started
    outcome.statuses = dict(statuses)
    outcome.connections = opened
    for connection in idle:
        connection.close()
    return outcome


def run_spec(spec: Spec) -> Outcome:
    """Run one phase on a fresh event loop (uvloop when installed) and time this process's CPU."""
    payloads = encode_requests(spec)
    runner: Callable[[Coroutine[Any, Any, Outcome]], Outcome] = asyncio.run
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        pass
    cpu0 = time.process_time()
    outcome = runner(drive_open(spec, payloads) if spec.rate > 0 else drive(spec, payloads))
    outcome.cpu_s = time.process_time() - cpu0
    return outcome


def main() -> int:
    spec = msgspec.json.decode(sys.stdin.buffer.read(), type=Spec)
    sys.stdout.buffer.write(msgspec.json.encode(run_spec(spec)) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
