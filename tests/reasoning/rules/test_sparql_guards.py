"""Every SPARQL text an ontology carries is checked at upload, and evaluation cannot reach out
or be frozen by a regular expression even when a hostile text was never checked."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.robustness_hardening import RULE_SHAPE, one_rule_ontology
from reasoning.errors import InvalidInput, TenetError, UnsafeContent
from reasoning.evidence.index import build_index
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.safe_parse import parse_rdf
from reasoning.evidence.views import read_profile
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.engine import RuleFailure
from reasoning.rules.sandbox import OutsideCall


class _Listener:
    """A loopback HTTP server counting the requests it receives (none may arrive)."""

    def __init__(self) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                self.send_response(200)
                self.send_header("content-type", "application/sparql-results+json")
                self.end_headers()
                self.wfile.write(b'{"head": {"vars": ["o"]}, "results": {"bindings": []}}')

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sparql"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    served = _Listener()
    yield served
    served.server.shutdown()
    served.server.server_close()


def _service(url: str) -> str:
    return f"SERVICE <{url}> {{ ?s ?p ?o }}"


def _places(url: str) -> dict[str, str]:
    """The same SERVICE clause in every place of SHACL that holds SPARQL."""
    return {
        "target": "ex:shape a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; "
                  f'sh:prefixes ex:p ; sh:select "SELECT ?this WHERE {{ {_service(url)} }}" ] .',
        "condition": "ex:shape a sh:NodeShape ; sh:targetClass tv:Case ; sh:rule ex:r . "
                     "ex:r sh:condition [ a sh:NodeShape ; sh:sparql [ a sh:SPARQLConstraint ; "
                     f'sh:select "SELECT $this WHERE {{ {_service(url)} }}" ] ] .',
        "ask validator": RULE_SHAPE + "ex:C a sh:ConstraintComponent ; sh:parameter [ sh:path ex:v ] ; "
                         f'sh:validator [ a sh:SPARQLAskValidator ; sh:ask "ASK {{ {_service(url)} }}" ] .',
        "function": RULE_SHAPE + "ex:f a sh:SPARQLFunction ; sh:returnType xsd:string ; "
                    f'sh:select "SELECT ?r WHERE {{ {_service(url)} BIND(1 AS ?r) }}" .',
        "rule, in FILTER EXISTS": RULE_SHAPE.replace("ex:r .", "ex:r2 . ex:r2 a sh:SPARQLRule ; "
            'sh:prefixes ex:p ; sh:construct "CONSTRUCT { $this ex:needs ex:a1 } WHERE { '
            f'$this a tv:Case FILTER EXISTS {{ {_service(url)} }} }}" .'),
        "target, FROM": "ex:shape a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; "
                        f'sh:select "SELECT ?this FROM <{url}> WHERE {{ ?this ?p ?o }}" ] .',
        "update": RULE_SHAPE + f'ex:u sh:update "LOAD <{url}>" .',
    }


@pytest.mark.parametrize("place", list(_places("http://127.0.0.1:9/x")))
def test_sparql_reaching_out_is_refused_at_upload_wherever_it_sits(place: str) -> None:
    with pytest.raises(UnsafeContent) as caught:
        ingest_ontology(one_rule_ontology(_places("http://127.0.0.1:9/x")[place]), "text/turtle")
    listed = caught.value.extra["sparql"]
    assert isinstance(listed, list)
    refused = [t for t in listed if not t["ok"]]
    assert refused and all(t["hostile"] for t in refused)
    assert any(word in caught.value.detail for word in ("SERVICE", "FROM", "updates"))


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("ex:shape a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; "
         'sh:select "SELECT ?this WHERE { ?this ?p " ] .'), "does not parse"),
        (("ex:shape a sh:NodeShape ; sh:targetClass tv:Case ; sh:rule ex:r . ex:r sh:condition "
         '[ sh:sparql [ sh:select "ASK { ?s ?p ?o }" ] ] .'), "SELECT query"),
        (("ex:shape a sh:NodeShape ; sh:targetClass tv:Case ; sh:rule ex:r . ex:r sh:condition "
         '[ sh:sparql [ sh:select "SELECT $this WHERE { $this ?p ?o MINUS { $this ?p 1 } }" ] ] .'),
         "MINUS"),
        (RULE_SHAPE + 'ex:r sh:condition [ sh:property [ sh:path ex:note ; sh:pattern "(a)\\\\1" ] ] .',
         "not supported"),
    ],
)
def test_a_target_condition_or_pattern_that_cannot_run_is_refused_at_upload(
    extra: str, words: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        ingest_ontology(one_rule_ontology(extra), "text/turtle")
    assert not isinstance(caught.value, UnsafeContent)
    assert words in caught.value.detail


def test_a_regex_rdflib_cannot_run_on_re2_is_refused_at_upload() -> None:
    with pytest.raises(InvalidInput) as caught:
        ingest_ontology(one_rule_ontology(RULE_SHAPE, where='. ex:a1 ex:note ?t FILTER(regex(?t, "(?=a)"))'),
                        "text/turtle")
    assert "not supported" in caught.value.detail


def _unchecked_engine(data: bytes) -> DecisionEngine:
    """An engine over ``data`` built without the upload checks (as if something slipped in)."""
    parsed = parse_rdf(data, "text/turtle")
    index = build_index(parsed.triples, [], views=(), profile=read_profile(parsed.triples))
    return DecisionEngine(index.with_version("unchecked"))


@pytest.mark.parametrize("place", ["target", "condition", "rule, in FILTER EXISTS"])
def test_evaluation_never_calls_out_even_for_an_unchecked_ontology(
    listener: _Listener, place: str
) -> None:
    engine = _unchecked_engine(one_rule_ontology(_places(listener.url)[place]))
    with pytest.raises(TenetError) as caught:
        engine.decide("A gadget.", evaluation_date=date(2026, 12, 1), timeout_s=2.0)
    # pyshacl refuses SERVICE in a constraint itself: a clear RuleFailure, never an internal error.
    assert isinstance(caught.value, RuleFailure if place == "condition" else OutsideCall)
    assert caught.value.extra.get("rule") or caught.value.extra.get("event")
    assert listener.hits == 0


def test_a_catastrophic_regex_does_not_freeze_the_process() -> None:
    # ^(a+)+$ over 30 a's and a '!' backtracks for minutes on a backtracking engine, holding
    # the interpreter lock; on RE2 it is linear. A ticking thread measures the stall.
    note = "a" * 30 + "!"
    engine = _unchecked_engine(one_rule_ontology(
        RULE_SHAPE + 'ex:r sh:condition [ sh:property [ sh:path ex:missing ; sh:pattern "^(b+)+$" ] ] .',
        where='. ex:a1 ex:note ?t FILTER(regex(?t, "^(a+)+$") || regex(REPLACE(?t, "^(a+)+$", ""), '
              '"^(a+)+$"))', note=note))
    gaps: list[float] = []
    done = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        decision = engine.decide("A gadget.", evaluation_date=date(2026, 12, 1), timeout_s=1.0)
    finally:
        done.set()
        ticker.join()
    assert decision.status == "no_rule_applies"
    assert max(gaps) < 1.0
