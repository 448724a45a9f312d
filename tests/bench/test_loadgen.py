"""bench.loadgen against a real HTTP server: framing, keep-alive, refusals, bounds, the open loop's
schedule and latency from it; the distinct prompts."""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bench.loadgen import Spec, run_spec, schedule
from bench.service import OPEN_PROMPTS_START, unique_constraint_prompts
from reasoning.analysis import analyse

REPO = Path(__file__).resolve().parents[2]


class _Handler(BaseHTTPRequestHandler):
    """Answers by the body's ``mode``: sized, chunked, closing, refused; records what it read."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[dict[str, Any]]] = []
    connections: ClassVar[set[int]] = set()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append({"body": body, "auth": self.headers.get("Authorization"), "path": self.path})
        _Handler.connections.add(id(self.connection))
        payload = json.dumps({"echo": body}).encode()
        mode = body.get("mode", "sized")
        if mode == "slow":
            time.sleep(0.05)
        if mode == "refused":
            self.send_response(429)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            return
        self.send_response(200)
        if mode == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(payload) // 2
            for part in (payload[:half], payload[half:], b""):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            return
        self.send_header("Content-Length", str(len(payload)))
        if mode == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        elif mode == "drop":  # kept alive by its headers, then closed while idle (a header deadline)
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    _Handler.seen = []
    _Handler.connections = set()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


def spec(port: int, bodies: list[dict[str, Any]], **kw: Any) -> Spec:
    return Spec(host="127.0.0.1", port=port, path="/v1/x", bodies=bodies,
                headers={"Authorization": "Bearer t"}, **kw)


def test_every_framing_is_read_whole_and_counted(server: int) -> None:
    bodies = [{"mode": "sized"}, {"mode": "chunked"}, {"mode": "close"}]
    outcome = run_spec(spec(server, bodies, clients=3, max_requests=30, max_seconds=30))
    assert outcome.statuses == {200: 30}
    assert len(outcome.latencies_ms) == 30 and all(ms > 0 for ms in outcome.latencies_ms)
    modes = [s["body"]["mode"] for s in _Handler.seen]
    assert {m: modes.count(m) for m in set(modes)} == {"sized": 10, "chunked": 10, "close": 10}  # round robin
    assert {s["auth"] for s in _Handler.seen} == {"Bearer t"} and {s["path"] for s in _Handler.seen} == {"/v1/x"}
    assert outcome.cpu_s > 0 and outcome.elapsed_s > 0


def test_keep_alive_reuses_one_connection_per_client(server: int) -> None:
    outcome = run_spec(spec(server, [{"mode": "sized"}], clients=2, max_requests=20, max_seconds=30))
    assert outcome.statuses == {200: 20}
    assert len(_Handler.connections) == 2


def test_refusals_are_not_successes(server: int) -> None:
    outcome = run_spec(spec(server, [{"mode": "refused"}, {"mode": "sized"}], clients=1, max_requests=4,
                            max_seconds=30))
    assert outcome.statuses == {429: 2, 200: 2}
    assert outcome.refused == 2 and len(outcome.latencies_ms) == 2


def test_a_dead_server_counts_status_zero() -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = int(closed.server_address[1])
    closed.server_close()
    outcome = run_spec(spec(port, [{"mode": "sized"}], clients=2, max_requests=4, max_seconds=10))
    assert outcome.statuses == {0: 4} and outcome.latencies_ms == []


def test_the_command_reads_a_spec_and_prints_the_outcome(server: int) -> None:
    payload = {"host": "127.0.0.1", "port": server, "path": "/v1/x", "bodies": [{"mode": "sized"}],
               "clients": 1, "max_requests": 3, "max_seconds": 30}
    done = subprocess.run([sys.executable, "-m", "bench.loadgen"], input=json.dumps(payload), text=True,
                          capture_output=True, cwd=REPO, timeout=120, check=True)
    result = json.loads(done.stdout)
    assert result["statuses"] == {"200": 3} and len(result["latencies_ms"]) == 3


def test_unique_prompts_are_distinct_and_carry_constraints() -> None:
    prompts = unique_constraint_prompts(300)
    assert len(set(prompts)) == 300
    assert not set(prompts) & set(unique_constraint_prompts(300, start=OPEN_PROMPTS_START))
    assert unique_constraint_prompts(3, start=5) == prompts[5:8]
    for prompt in prompts[:5]:
        kinds = {c.kind.value for c in analyse(prompt, cache=None).constraints}
        assert "word_count" in kinds, (prompt, kinds)


def test_the_open_schedule_is_its_rate_and_bounded() -> None:
    even = schedule(Spec(host="h", port=1, path="/", bodies=[], rate=50.0, arrivals="even",
                         max_requests=1000, max_seconds=2.0))
    assert even == [i / 50.0 for i in range(100)]  # the time bound ends it first
    poisson = Spec(host="h", port=1, path="/", bodies=[], rate=200.0, max_requests=3000, max_seconds=1e9, seed=7)
    times = schedule(poisson)
    assert len(times) == 3000 and times == sorted(times) and times == schedule(poisson)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert abs(statistics.fmean(gaps) - 1 / 200) < 0.1 / 200  # mean gap 1/rate
    assert statistics.pstdev(gaps) > 0.8 / 200  # exponential gaps vary (sd = mean), even ones do not
    with pytest.raises(ValueError):
        schedule(Spec(host="h", port=1, path="/", bodies=[], rate=10.0, arrivals="bursty"))


def test_the_open_loop_sends_on_schedule_and_counts_queueing(server: int) -> None:
    fast = run_spec(spec(server, [{"mode": "sized"}, {"mode": "chunked"}], rate=100.0, arrivals="even",
                         clients=8, max_requests=20, max_seconds=30))
    assert fast.statuses == {200: 20} and len(fast.latencies_ms) == 20 and len(fast.send_lag_ms) == 20
    assert fast.elapsed_s >= 19 / 100  # the last request left at its scheduled 190 ms, not sooner
    modes = [s["body"]["mode"] for s in _Handler.seen]
    assert modes.count("sized") == modes.count("chunked") == 10  # round robin
    # One connection, 50 ms answers, a request every 10 ms: each waits for the ones before it,
    # and that wait is latency (a closed loop would report about 50 ms for each).
    slow = run_spec(spec(server, [{"mode": "slow"}], rate=100.0, arrivals="even", clients=1,
                         max_requests=5, max_seconds=30))
    assert slow.statuses == {200: 5} and slow.connections == 1
    assert max(slow.latencies_ms) >= 150 and min(slow.latencies_ms) >= 45
    assert max(slow.send_lag_ms) >= 100  # the last left late: it waited for the one connection


def test_open_loop_refusals_are_counted_not_retried(server: int) -> None:
    outcome = run_spec(spec(server, [{"mode": "refused"}, {"mode": "sized"}], rate=200.0, clients=4,
                            max_requests=6, max_seconds=30))
    assert outcome.statuses == {429: 3, 200: 3} and outcome.refused == 3 and len(outcome.latencies_ms) == 3
    assert len(_Handler.seen) == 6


def test_a_connection_the_server_closed_while_idle_is_opened_again(server: int) -> None:
    outcome = run_spec(spec(server, [{"mode": "drop"}], rate=20.0, arrivals="even", clients=1,
                            max_requests=4, max_seconds=30))
    assert outcome.statuses == {200: 4}
