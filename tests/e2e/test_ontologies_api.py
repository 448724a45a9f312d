"""/v1/ontologies end to end: real app, real parser, reasoner and index, real SQLite, over HTTP."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import func, select

from app.controllers.ontologies import MULTIPART_ALLOWANCE_BYTES
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from reasoning.errors import InvalidInput
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import IngestLimits
from reasoning.evidence.safe_parse import ParseLimits
from store.models import OntologyVersion
from tests.conftest import REGIMES_TTL

URL = "/v1/ontologies"
Client = AsyncTestClient[Litestar]
Problem = Callable[[Any, int], dict[str, Any]]

CLINICAL = dict(bundled_domains())["clinical"].read_bytes()

SMALL_TTL = """@prefix ex: <https://example.org/onto#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<https://example.org/onto> a owl:Ontology ; owl:imports <https://example.org/remote/core.ttl> .
ex:Animal a owl:Class .
ex:Dog a owl:Class ; rdfs:subClassOf ex:Animal ; owl:disjointWith ex:Cat .
ex:Cat a owl:Class ; rdfs:subClassOf ex:Animal .
ex:rex a ex:Dog , ex:Cat ; rdfs:label "Rex"@en , "雷克斯"@zh ; ex:ownedBy ex:ann .
ex:ann a ex:Person ; rdfs:label "Ann"@en .
""".encode()

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="https://example.org/#">
  <rdf:Description rdf:about="https://example.org/#a"><ex:v>&lol3;</ex:v></rdf:Description>
</rdf:RDF>
"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE r [ <!ENTITY secret SYSTEM "file:///etc/passwd"> ]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="https://example.org/#">
  <rdf:Description rdf:about="https://example.org/#a"><ex:v>&secret;</ex:v></rdf:Description>
</rdf:RDF>
"""

OWL_XML_BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE Ontology [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="https://example.org/onto">
  <Declaration><Class IRI="https://example.org/onto#Dog"/></Declaration>
  <AnnotationAssertion><AnnotationProperty abbreviatedIRI="rdfs:label"/>
    <IRI>https://example.org/onto#Dog</IRI><Literal>&lol3;</Literal></AnnotationAssertion>
</Ontology>
"""

OWL_XML_REMOTE_IMPORT = b"""<?xml version="1.0"?>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="https://example.org/onto">
  <Import>http://203.0.113.7/remote/core.owl</Import>
  <Declaration><Class IRI="https://example.org/onto#Dog"/></Declaration>
</Ontology>
"""

REMOTE_CONTEXT = b'{"@context": "https://schema.org/", "@id": "https://example.org/#a", "name": "A"}'

MALFORMED_TTL = b"""@prefix ex: <https://example.org/#> .
ex:a ex:p ex:b .
ex:a ex:p .
"""


@pytest.fixture
def network_events() -> Iterator[list[str]]:
    """Socket and URL-open audit events raised while the test runs (real audit hook)."""
    seen: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and event in {"socket.connect", "socket.getaddrinfo", "urllib.Request"}:
            seen.append(f"{event} {args[:2]!r}")

    sys.addaudithook(hook)
    yield seen
    active[0] = False


async def count_versions(app: Litestar) -> int:
    runtime: Runtime = app.state.runtime
    async with runtime.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(OntologyVersion)) or 0)


async def upload(client: Client, headers: dict[str, str], data: bytes, content_type: str,
                 domain: str = "pets") -> Any:
    return await client.post(f"{URL}?domain={domain}", content=data,
                             headers={**headers, "Content-Type": content_type})


async def test_turtle_upload_reports_and_is_idempotent(client: Client, make_key: Any,
                                                       network_events: list[str]) -> None:
    headers = await make_key("acme", ["ontology:write", "ontology:read"])
    first = await upload(client, headers, SMALL_TTL, "text/turtle")
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["domain"] == "pets" and body["current"] is True
    assert len(body["content_hash"]) == 64
    assert body["triples_asserted"] == 15
    assert body["triples_materialised"] > body["triples_asserted"]
    report = body["report"]
    assert report["imports"] == [{"iri": "https://example.org/remote/core.ttl", "fetched": False,
                                  "note": report["imports"][0]["note"]}]
    assert network_events == []
    assert report["undeclared_classes"] == ["https://example.org/onto#Person"]
    assert report["undeclared_properties"] == ["https://example.org/onto#ownedBy"]
    assert report["disjointness_violations"] == [{
        "individual": "https://example.org/onto#rex",
        "class_a": "https://example.org/onto#Cat",
        "class_b": "https://example.org/onto#Dog",
    }]
    assert report["consistent"] is False
    assert report["materialisation"]["triples_before"] == 15
    assert [v["name"] for v in body["views"]] == ["all"]

    again = await upload(client, headers, SMALL_TTL, "text/turtle")
    assert again.status_code == 200, again.text
    assert again.json()["id"] == body["id"]
    listed = (await client.get(URL, headers=headers)).json()["data"]
    assert [v["id"] for v in listed] == [body["id"]]


async def test_multipart_upload_reads_domain_and_type_from_the_form(client: Client,
                                                                   make_key: Any) -> None:
    headers = await make_key("acme", ["ontology:write"])
    response = await client.post(
        URL, headers=headers, data={"domain": "clinical"},
        files={"file": ("clinical.ttl", CLINICAL, "application/octet-stream")},
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["domain"] == "clinical" and body["filename"] == "clinical.ttl"
    assert body["media_type"] == "text/turtle"
    assert {v["name"] for v in body["views"]} == {"findings", "anatomy", "guidelines"}
    report = (await client.get(f"{URL}/{body['id']}/report", headers=headers)).json()
    assert report["report"]["consistent"] is True
    assert report["report"]["materialisation"]["triples_after"] == body["triples_materialised"]


@pytest.mark.parametrize(
    ("data", "content_type", "status", "needle"),
    [
        (BILLION_LAUGHS, "application/rdf+xml", 422, "DTD"),
        (EXTERNAL_ENTITY, "application/rdf+xml", 422, "DTD"),
        (REMOTE_CONTEXT, "application/ld+json", 422, "https://schema.org/"),
        (MALFORMED_TTL, "text/turtle", 400, "line 3"),
        (b"<a> <b> <c> .", "application/pdf", 415, "unsupported ontology media type"),
        (b"\xff\xfe not utf-8", "text/turtle", 400, "UTF-8"),
    ],
    ids=["billion-laughs", "external-entity", "remote-jsonld-context", "malformed-turtle",
         "unsupported-type", "not-utf8"],
)
async def test_hostile_or_broken_files_are_refused_and_leave_nothing(
    client: Client, app: Litestar, make_key: Any, assert_problem: Problem,
    network_events: list[str], data: bytes, content_type: str, status: int, needle: str,
) -> None:
    headers = await make_key("acme", ["ontology:write"])
    response = await upload(client, headers, data, content_type)
    body = assert_problem(response, status)
    assert needle in body["detail"]
    assert await count_versions(app) == 0
    assert network_events == []


@pytest.mark.parametrize(
    ("limits", "needle"),
    [
        (IngestLimits(parse=ParseLimits(max_bytes=200)), "limit is 200 bytes"),
        (IngestLimits(parse=ParseLimits(max_triples=5)), "more than 5 triples"),
    ],
    ids=["bytes", "triples"],
)
async def test_files_over_the_caps_get_413_and_leave_nothing(
    client: Client, app: Litestar, make_key: Any, assert_problem: Problem,
    limits: IngestLimits, needle: str,
) -> None:
    app.state.runtime.ontology_limits = limits
    headers = await make_key("acme", ["ontology:write"])
    body = assert_problem(await upload(client, headers, SMALL_TTL, "text/turtle"), 413)
    assert needle in body["detail"]
    assert await count_versions(app) == 0


@pytest.mark.parametrize(
    ("data", "content_type", "filename", "status", "needle"),
    [
        (OWL_XML_BILLION_LAUGHS, "application/owl+xml", None, 415, "OWL/XML"),
        (OWL_XML_BILLION_LAUGHS, "application/octet-stream", "pets.owl", 422, "DTD"),
        (OWL_XML_BILLION_LAUGHS, "application/rdf+xml", None, 422, "DTD"),
        (OWL_XML_REMOTE_IMPORT, "application/owl+xml", None, 415, "OWL/XML"),
        (OWL_XML_REMOTE_IMPORT, "application/octet-stream", "pets.owx", 415, "OWL/XML"),
        (OWL_XML_REMOTE_IMPORT, "application/octet-stream", "pets.owl", 415, "root element"),
        (OWL_XML_REMOTE_IMPORT, "application/rdf+xml", None, 415, "root element"),
    ],
    ids=["laughs-owl-xml-type", "laughs-as-owl-file", "laughs-as-rdf-xml", "import-owl-xml-type",
         "import-owx-file", "import-as-owl-file", "import-as-rdf-xml"],
)
async def test_owl_xml_is_refused_with_415_or_as_unsafe_and_never_fetches(
    client: Client, app: Litestar, make_key: Any, assert_problem: Problem,
    network_events: list[str], data: bytes, content_type: str, filename: str | None,
    status: int, needle: str,
) -> None:
    headers = await make_key("acme", ["ontology:write"])
    if filename is None:
        response = await upload(client, headers, data, content_type)
    else:
        response = await client.post(URL, headers=headers, data={"domain": "pets"},
                                     files={"file": (filename, data, content_type)})
    body = assert_problem(response, status)
    assert needle in body["detail"]
    if status == 415:
        assert body["title"] == "Unsupported media type"
        assert "accepted: text/turtle, application/rdf+xml" in body["detail"]
        assert body["accepted"] == ["text/turtle", "application/rdf+xml", "application/ld+json",
                                    "application/n-triples"]
    assert await count_versions(app) == 0
    assert network_events == []


async def test_upload_limits_come_from_the_settings(
    settings: Settings, make_key: Any, assert_problem: Problem,
) -> None:
    environment = {"TENET_ONTOLOGY_MAX_BYTES": "300", "TENET_ONTOLOGY_MAX_TRIPLES": "7",
                   "TENET_ONTOLOGY_PARSE_TIMEOUT_S": "5", "TENET_ONTOLOGY_MATERIALISE_TIMEOUT_S": "2"}
    configured = Settings.from_env(environment)
    tight = replace(settings, **{f.name: getattr(configured, f.name) for f in fields(Settings)
                                 if f.name.startswith("ontology_")})
    application = create_app(tight)
    limits = application.state.runtime.ontology_limits
    assert (limits.parse.max_bytes, limits.parse.max_triples) == (300, 7)
    assert (limits.parse.timeout_s, limits.materialise_timeout_s) == (5.0, 2.0)
    key = await make_key("acme", ["ontology:write"])
    try:
        async with AsyncTestClient(app=application) as client:
            over_bytes = assert_problem(await upload(client, key, SMALL_TTL, "text/turtle"), 413)
            assert "limit is 300 bytes" in over_bytes["detail"]
            few = b"".join(b"<e:s%d> <e:p> <e:o> .\n" % i for i in range(8))
            assert len(few) < 300
            over_triples = assert_problem(await upload(client, key, few, "application/n-triples"), 413)
            assert "more than 7 triples" in over_triples["detail"]
            body = SMALL_TTL + b"#" * (MULTIPART_ALLOWANCE_BYTES + 300)
            too_big = assert_problem(await upload(client, key, body, "text/turtle"), 413)
            assert "request body" in too_big["detail"]
            assert await count_versions(application) == 0
    finally:
        await application.state.runtime.close()


@pytest.mark.parametrize("variable", ["TENET_ONTOLOGY_MAX_BYTES", "TENET_ONTOLOGY_MAX_TRIPLES",
                                      "TENET_ONTOLOGY_PARSE_TIMEOUT_S",
                                      "TENET_ONTOLOGY_MATERIALISE_TIMEOUT_S"])
def test_upload_limit_settings_must_be_positive(tmp_path: Path, variable: str) -> None:
    with pytest.raises(InvalidInput, match=variable) as caught:
        Settings.from_env({"TENET_DATA_DIR": str(tmp_path), variable: "0"})
    assert caught.value.extra["variable"] == variable


async def test_missing_domain_is_a_clear_400(client: Client, make_key: Any,
                                             assert_problem: Problem) -> None:
    headers = await make_key("acme", ["ontology:write"])
    response = await client.post(URL, content=SMALL_TTL,
                                 headers={**headers, "Content-Type": "text/turtle"})
    assert "domain" in assert_problem(response, 400)["detail"]


async def test_another_tenants_ontology_is_invisible(client: Client, make_key: Any,
                                                     assert_problem: Problem) -> None:
    owner = await make_key("acme", ["ontology:write", "ontology:read"])
    other = await make_key("globex", ["ontology:write", "ontology:read"])
    created = (await upload(client, owner, SMALL_TTL, "text/turtle")).json()
    for path in (f"{URL}/{created['id']}", f"{URL}/{created['id']}/report"):
        assert_problem(await client.get(path, headers=other), 404)
    assert_problem(await client.delete(f"{URL}/{created['id']}", headers=other), 404)
    assert (await client.get(URL, headers=other)).json()["data"] == []
    assert (await client.get(f"{URL}/{created['id']}", headers=owner)).status_code == 200


async def test_read_only_key_cannot_upload(client: Client, make_key: Any,
                                           assert_problem: Problem) -> None:
    reader = await make_key("acme", ["ontology:read"])
    assert_problem(await upload(client, reader, SMALL_TTL, "text/turtle"), 403)


async def test_delete_puts_the_previous_version_back_in_service(client: Client, make_key: Any,
                                                                assert_problem: Problem) -> None:
    headers = await make_key("acme", ["ontology:write", "ontology:read"])
    old = (await upload(client, headers, SMALL_TTL, "text/turtle")).json()
    newer = SMALL_TTL + b'ex:tom a ex:Cat ; rdfs:label "Tom"@en .\n'
    new = (await upload(client, headers, newer, "text/turtle")).json()
    assert new["current"] is True
    assert (await client.get(f"{URL}/{old['id']}", headers=headers)).json()["current"] is False
    deleted = await client.delete(f"{URL}/{new['id']}", headers=headers)
    assert deleted.status_code == 200 and deleted.json()["deleted_at"] is not None
    assert (await client.get(f"{URL}/{old['id']}", headers=headers)).json()["current"] is True
    assert_problem(await client.get(f"{URL}/{new['id']}", headers=headers), 404)
    listed = (await client.get(URL, headers=headers)).json()["data"]
    assert [v["id"] for v in listed] == [old["id"]]


async def test_a_refused_upload_leaves_the_previous_version_in_service(
    client: Client, app: Litestar, make_key: Any, assert_problem: Problem,
) -> None:
    headers = await make_key("acme", ["ontology:write", "ontology:read"])
    good = (await upload(client, headers, SMALL_TTL, "text/turtle")).json()
    assert_problem(await upload(client, headers, BILLION_LAUGHS, "application/rdf+xml"), 422)
    assert_problem(await upload(client, headers, MALFORMED_TTL, "text/turtle"), 400)
    assert await count_versions(app) == 1
    listed = (await client.get(f"{URL}?domain=pets", headers=headers)).json()["data"]
    assert [(v["id"], v["current"]) for v in listed] == [(good["id"], True)]




async def test_an_uploaded_disjointness_makes_two_jurisdictions_conflict(
    client: Client, make_key: Any,
) -> None:
    headers = await make_key("acme", ["ontology:write", "reason"])
    assert (await upload(client, headers, REGIMES_TTL, "text/turtle", "regimes")).status_code == 201
    prompt = "请依据欧盟的法律并根据美国的法规回答。"
    without = (await client.post("/v1/constraints", json={"prompt": prompt}, headers=headers)).json()
    assert without["status"] == "ok" and without["conflicts"] == []
    response = await client.post("/v1/constraints", json={"prompt": prompt, "domain": "regimes"},
                                 headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "needs_confirmation"
    [conflict] = body["conflicts"]
    assert "owl:disjointWith" in conflict["reason"] and "US regime" in conflict["reason"]


async def test_uploads_and_deletions_are_audited(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["ontology:write", "audit:read"])
    created = (await upload(client, headers, SMALL_TTL, "text/turtle")).json()
    assert (await upload(client, headers, SMALL_TTL, "text/turtle")).status_code == 200
    assert (await client.delete(f"{URL}/{created['id']}", headers=headers)).status_code == 200
    events = (await client.get("/v1/audit/events", headers=headers)).json()["data"]
    assert [(e["event_type"], e["subject_id"]) for e in events] == [
        ("ontology.uploaded", created["id"]),  # the identical re-upload changed nothing
        ("ontology.deleted", created["id"]),
    ]
    assert events[0]["payload"]["content_hash"] == created["content_hash"]
    assert (await client.get("/v1/audit/verify", headers=headers)).json()["intact"] is True


async def test_uploading_a_deleted_version_again_restores_it_on_the_record(
    client: Client, make_key: Any,
) -> None:
    headers = await make_key("acme", ["ontology:write", "ontology:read", "audit:read"])
    created = (await upload(client, headers, SMALL_TTL, "text/turtle")).json()
    assert (await client.delete(f"{URL}/{created['id']}", headers=headers)).status_code == 200
    again = await upload(client, headers, SMALL_TTL, "text/turtle")
    assert again.status_code == 200
    body = again.json()
    assert (body["id"], body["deleted_at"], body["current"]) == (created["id"], None, True)
    assert body["created_at"] == created["created_at"]  # the first upload's time, not rewritten
    events = (await client.get("/v1/audit/events", headers=headers)).json()["data"]
    assert [(e["event_type"], e["subject_id"]) for e in events] == [
        ("ontology.uploaded", created["id"]),
        ("ontology.deleted", created["id"]),
        ("ontology.restored", created["id"]),
    ]
    assert events[2]["payload"]["deleted_at"] and events[2]["payload"]["by_key"]


_SHACL = b"""@prefix ex: <https://example.org/onto#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix tv: <https://tenet.dev/ns/views#> .
ex:r a sh:SPARQLRule ; sh:construct "CONSTRUCT { $this <urn:x:p> <urn:x:o> } WHERE { $this ?p ?o }" .
"""


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ((b'ex:s a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; sh:select '
         b'"SELECT ?this WHERE { SERVICE <http://127.0.0.1:9/x> { ?this ?p ?o } }" ] .'), 422),
        ((b'ex:s a sh:NodeShape ; sh:targetClass tv:Case ; sh:rule ex:r . ex:r sh:condition [ '
         b'sh:sparql [ sh:select "SELECT $this WHERE { SERVICE <http://127.0.0.1:9/x> { } }" ] ] .'),
         422),
        ((b'ex:s a sh:NodeShape ; sh:rule ex:r ; sh:target [ a sh:SPARQLTarget ; sh:select '
         b'"SELECT ?this WHERE { ?this " ] .'), 400),
    ],
)
async def test_a_target_or_condition_that_reaches_out_or_does_not_parse_is_refused(
    client: Client, app: Litestar, make_key: Any, assert_problem: Problem, extra: bytes,
    status: int,
) -> None:
    headers = await make_key("acme", ["ontology:write"])
    problem = assert_problem(await upload(client, headers, _SHACL + extra, "text/turtle"), status)
    assert next(t for t in problem["sparql"] if not t["ok"])["hostile"] is (status == 422)
    assert await count_versions(app) == 0
