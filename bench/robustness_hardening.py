"""The hardening cases of ``bench.robustness``: rules that would reach out or hang, a deleted
ontology uploaded again, bodies dripped slowly, tenant names that look like others.

:func:`run_hardening` drives a served app (``bench.robustness`` serves it in this process)
and returns the statuses it got (counted with the other hostile cases for ``five_xx``) and
its findings:

- ``sparql_outside_refused``: ontologies with ``SERVICE`` in a SPARQL target, in a
  condition's constraint, in a SHACL function, inside a rule's ``FILTER EXISTS``, a
  ``FROM`` in a target and a ``sh:update`` uploaded; each must be a 422 ("refused/sent");
  ``outside_calls`` counts the requests a loopback listener named by them received (0);
- ``regex``: an ontology whose rule filters ``regex(?t, "^(a+)+$")`` over 30 ``a``s and a
  ``!`` is uploaded (accepted: RE2 runs it), then its rules are evaluated repeatedly in a
  thread of this process (where the server runs) while ``/healthz`` is probed every 10 ms:
  ``rule_max_s`` is the slowest evaluation; ``join`` does the same with a join without
  bound, which the rule time limit stops (``RuleTimeout``); ``healthz_max_ms`` is the
  slowest probe answer of both;
- ``restore_audited``: upload, delete, upload the same bytes again: a 200 with the version
  back in service and an ``ontology.restored`` audit event;
- ``slow_bodies_closed``: connections whose body is dripped are closed within the body
  deadline (plus slack); the requests count as 499 in ``/metrics``, never 5xx;
- ``confusable_tenants_refused``: keys for tenants named ``\\u3164``, ``\\u2800``,
  ``default\\u3164``, ``dеfault`` (Cyrillic ``е``) and fullwidth ``ＤＥＦＡＵＬＴ``; each a 400.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import httpx

from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.engine import RuleTimeout

__all__ = ["RULE_SHAPE", "SLOW_BODIES", "one_rule_ontology", "run_hardening"]

SLOW_BODIES: Final = 20
REGEX_N: Final = 30
_HEAD: Final = """
@prefix ex: <https://example.org/h#> .
@prefix tv: <https://tenet.dev/ns/views#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Thing a owl:Class ; rdfs:label "gadget"@en .
ex:needs a owl:ObjectProperty , tv:DecisionProperty ; rdfs:label "needs"@en .
ex:note a owl:DatatypeProperty .
ex:a1 ex:note "%(note)s" .
ex:p sh:declare [ sh:prefix "ex" ; sh:namespace "https://example.org/h#"^^xsd:anyURI ] ,
    [ sh:prefix "tv" ; sh:namespace "https://tenet.dev/ns/views#"^^xsd:anyURI ] .
ex:r a sh:SPARQLRule ; sh:prefixes ex:p ;
    sh:construct '''CONSTRUCT { $this ex:needs ex:a1 } WHERE { $this a tv:Case %(where)s }''' .
"""
#: A join without bound: stopped by the rule time limit (RuleTimeout) after 1 s of its CPU time.
_JOIN: Final = (". ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n ?o . ?q ?r ?s . ?t ?u ?v . "
                "?w ?x ?y . FILTER (STR(?a) = STR(?y) && STR(?a) = 'never')")
#: The shape that runs the one rule ``ex:r`` on every case.
RULE_SHAPE: Final = "ex:shape a sh:NodeShape ; sh:targetClass tv:Case ; sh:rule ex:r .\n"
_TENANTS: Final = ("\u3164", "\u2800", "default\u3164", "d\u0435fault",
                   "\uff24\uff25\uff26\uff21\uff35\uff2c\uff34")


def one_rule_ontology(extra: str, *, where: str = "", note: str = "n") -> bytes:
    """A small domain whose one rule ``ex:r`` concludes ``ex:needs ex:a1`` for a case, with
    ``where`` appended to its graph pattern, ``note`` as ``ex:a1``'s text and ``extra`` Turtle
    after it: the frame the hostile rules of this bench and of the rule-check tests are put in."""
    return (_HEAD % {"where": where, "note": note} + extra).encode()


def _hostile(url: str) -> dict[str, bytes]:
    service = f"SERVICE <{url}> {{ ?s ?p ?o }}"
    return {name: one_rule_ontology(extra) for name, extra in {
        "target": "ex:shape a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; "
                  f'sh:prefixes ex:p ; sh:select "SELECT ?this WHERE {{ {service} }}" ] .',
        "condition": RULE_SHAPE + "ex:r sh:condition [ a sh:NodeShape ; sh:sparql [ "
                     f'a sh:SPARQLConstraint ; sh:select "SELECT $this WHERE {{ {service} }}" ] ] .',
        "function": RULE_SHAPE + "ex:f a sh:SPARQLFunction ; "
                    f'sh:select "SELECT ?r WHERE {{ {service} BIND(1 AS ?r) }}" .',
        "rule": RULE_SHAPE + 'ex:r2 a sh:SPARQLRule ; sh:construct "CONSTRUCT { ?s ?p ?o } WHERE { '
                f'FILTER EXISTS {{ {service} }} }}" . ex:shape sh:rule ex:r2 .',
        "target FROM": "ex:shape a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; "
                       f'sh:select "SELECT ?this FROM <{url}> WHERE {{ ?this ?p ?o }}" ] .',
        "update": RULE_SHAPE + f'ex:u sh:update "LOAD <{url}>" .',
    }.items()}


class _Listener:
    """A loopback HTTP server counting the requests it receives."""

    def __init__(self) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                self.send_response(200)
                self.end_headers()

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sparql"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _upload(http: httpx.Client, headers: dict[str, str], domain: str, data: bytes) -> httpx.Response:
    return http.post("/v1/ontologies", params={"domain": domain}, content=data,
                     headers={**headers, "content-type": "text/turtle"})


def _regex_case(http: httpx.Client, headers: dict[str, str], seconds: float,
                where: str = '. ex:a1 ex:note ?t FILTER(regex(?t, "^(a+)+$"))',
                domain: str = "regex") -> tuple[int, dict[str, Any]]:
    data = one_rule_ontology(RULE_SHAPE, where=where, note="a" * REGEX_N + "!")
    uploaded = _upload(http, headers, domain, data).status_code
    engine = DecisionEngine(ingest_ontology(data, "text/turtle").index.with_version(domain))
    engine.build_case("A gadget.", evaluation_date=date(2026, 12, 1))  # warm: spaCy
    done = threading.Event()
    durations: list[float] = []
    statuses: list[str] = []

    def evaluate() -> None:
        while not done.is_set():
            started = time.perf_counter()
            try:
                statuses.append(engine.decide("A gadget.", evaluation_date=date(2026, 12, 1),
                                              timeout_s=1.0).status)
            except RuleTimeout:
                statuses.append("RuleTimeout")
            durations.append(time.perf_counter() - started)

    worker = threading.Thread(target=evaluate, daemon=True)
    worker.start()
    probes: list[float] = []
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        started = time.perf_counter()
        http.get("/healthz")
        probes.append((time.perf_counter() - started) * 1000)
        time.sleep(0.01)
    done.set()
    worker.join(timeout=60)
    return uploaded, {
        "upload_status": uploaded,
        "n": REGEX_N,
        "evaluations": len(durations),
        "statuses": sorted(set(statuses)),
        "rule_max_s": round(max(durations, default=0.0), 4),
        "healthz_probes": len(probes),
        "healthz_max_ms": round(max(probes, default=0.0), 2),
    }


def _restore_case(http: httpx.Client, headers: dict[str, str]) -> tuple[list[int], bool]:
    data = one_rule_ontology(RULE_SHAPE)
    first = _upload(http, headers, "restore", data)
    deleted = http.delete(f"/v1/ontologies/{first.json()['id']}", headers=headers)
    again = _upload(http, headers, "restore", data)
    events = http.get("/v1/audit/events", headers=headers, params={"limit": "1000"})
    kinds = [(e["event_type"], e["subject_id"]) for e in events.json()["data"]] \
        if events.status_code == 200 else []
    ok = (first.status_code == 201 and deleted.status_code == 200 and again.status_code == 200
          and again.json()["deleted_at"] is None
          and kinds[-1:] == [("ontology.restored", first.json()["id"])])
    return [first.status_code, deleted.status_code, again.status_code, events.status_code], ok


def _post_key_statuses(http: httpx.Client) -> dict[str, float]:
    counts: dict[str, float] = {}
    for line in http.get("/metrics").text.splitlines():
        if line.startswith("tenet_http_request_seconds_count{") and 'route="/v1/keys"' in line \
                and 'method="POST"' in line:
            status = line.split('status="', 1)[1].split('"', 1)[0]
            counts[status] = counts.get(status, 0.0) + float(line.rsplit(" ", 1)[1])
    return counts


def _slow_bodies(base: str, http: httpx.Client, admin: dict[str, str], body_timeout_s: float
                 ) -> tuple[int, dict[str, float]]:
    host, port = base.removeprefix("http://").split(":")
    before = _post_key_statuses(http)
    head = (f"POST /v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: {admin['Authorization']}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"tenant\"").encode()
    sockets = [socket.create_connection((host, int(port)), timeout=10) for _ in range(SLOW_BODIES)]
    closed = 0
    try:
        for sock in sockets:
            sock.sendall(head)
        deadline = time.monotonic() + body_timeout_s + 5.0
        for sock in sockets:
            while (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([sock], [], [], left)
                if not readable:
                    continue
                try:
                    gone = sock.recv(4096) == b""
                except ConnectionResetError:
                    gone = True
                if gone:
                    closed += 1
                    break
    finally:
        for sock in sockets:
            sock.close()
    time.sleep(0.5)
    after = _post_key_statuses(http)
    return closed, {status: after[status] - before.get(status, 0.0) for status in after
                    if after[status] != before.get(status, 0.0)}


def run_hardening(base: str, admin: dict[str, str], body_timeout_s: float
                  ) -> tuple[list[int], dict[str, Any]]:
    """Drive the hardening cases (see the module doc): ``(statuses, findings)``."""
    statuses: list[int] = []
    found: dict[str, Any] = {}
    listener = _Listener()
    try:
        with httpx.Client(base_url=base, timeout=120) as http:
            created = http.post("/v1/keys", headers=admin, json={
                "tenant": "hardening", "scopes": ["ontology:write", "ontology:read", "audit:read"]})
            statuses.append(created.status_code)
            writer = {"Authorization": f"Bearer {created.json()['key']}"}
            hostile = _hostile(listener.url)
            refused = 0
            for i, data in enumerate(hostile.values()):
                answer = _upload(http, writer, f"hostile-{i}", data)
                statuses.append(answer.status_code)
                refused += answer.status_code == 422
            found["sparql_outside_refused"] = f"{refused}/{len(hostile)}"
            found["outside_calls"] = listener.hits
            regex_status, found["regex"] = _regex_case(http, writer, 3.0)
            statuses.append(regex_status)
            join_status, found["join"] = _regex_case(http, writer, 3.0, where=_JOIN, domain="join")
            statuses.append(join_status)
            found["healthz_max_ms"] = max(found["regex"]["healthz_max_ms"],
                                          found["join"]["healthz_max_ms"])
            restore_statuses, found["restore_audited"] = _restore_case(http, writer)
            statuses += restore_statuses
            refused = 0
            for tenant in _TENANTS:
                answer = http.post("/v1/keys", headers=admin,
                                   json={"tenant": tenant, "scopes": ["reason"]})
                statuses.append(answer.status_code)
                refused += answer.status_code == 400
            found["confusable_tenants_refused"] = f"{refused}/{len(_TENANTS)}"
            closed, counted = _slow_bodies(base, http, admin, body_timeout_s)
            found["slow_bodies_closed"] = f"{closed}/{SLOW_BODIES}"
            found["slow_bodies_statuses"] = counted
            statuses += [int(status) for status, n in counted.items() for _ in range(int(n))]
    finally:
        listener.close()
    return statuses, found
