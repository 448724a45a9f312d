"""Safe parsing: every format, every refusal, caps and the time limit."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from reasoning.errors import InvalidInput, LimitExceeded, UnsafeContent
from reasoning.evidence.safe_parse import (
    MEDIA_TYPES,
    ParseLimits,
    UnsupportedFormat,
    media_type_for,
    parse_rdf,
)

EX = "https://example.org/#"
TTL = f"""@prefix ex: <{EX}> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
<https://example.org/> owl:imports <https://example.org/remote.ttl> .
ex:a ex:p ex:b ; ex:name "Alpha"@en , "阿尔法"@zh ; ex:n 5 ; ex:q [ ex:r ex:c ] .
""".encode()
RDF_XML = f"""<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="{EX}">
  <rdf:Description rdf:about="{EX}a">
    <ex:p rdf:resource="{EX}b"/>
    <ex:name xml:lang="en">Alpha</ex:name>
  </rdf:Description>
</rdf:RDF>""".encode()
JSON_LD = json.dumps({
    "@context": {"ex": EX, "name": {"@id": "ex:name", "@language": "en"}},
    "@id": "ex:a", "name": "Alpha", "ex:p": {"@id": "ex:b"},
}).encode()
N_TRIPLES = f'<{EX}a> <{EX}p> <{EX}b> .\n<{EX}a> <{EX}name> "Alpha"@en .\n'.encode()


@pytest.fixture
def network_events() -> Iterator[list[str]]:
    seen: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and event in {"socket.connect", "socket.getaddrinfo", "urllib.Request"}:
            seen.append(event)

    sys.addaudithook(hook)
    yield seen
    active[0] = False


@pytest.mark.parametrize(
    ("data", "media_type"),
    [(RDF_XML, "application/rdf+xml"), (JSON_LD, "application/ld+json"),
     (N_TRIPLES, "application/n-triples")],
    ids=["rdfxml", "jsonld", "ntriples"],
)
def test_each_format_gives_the_same_triples(data: bytes, media_type: str) -> None:
    parsed = parse_rdf(data, media_type)
    assert set(parsed.triples) == {
        (f"<{EX}a>", f"<{EX}p>", f"<{EX}b>"),
        (f"<{EX}a>", f"<{EX}name>", '"Alpha"@en'),
    }
    assert parsed.media_type == media_type


def test_turtle_terms_imports_and_no_network(network_events: list[str]) -> None:
    parsed = parse_rdf(TTL, "text/turtle; charset=utf-8")
    objects = {o for _, _, o in parsed.triples}
    assert '"阿尔法"@zh' in objects
    assert '"5"^^<http://www.w3.org/2001/XMLSchema#integer>' in objects
    assert any(o.startswith("_:") for o in objects)
    assert parsed.imports == ("https://example.org/remote.ttl",)
    assert network_events == []


@pytest.mark.parametrize(
    ("data", "media_type", "error", "needle"),
    [
        ((b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
          b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>'),
         "application/rdf+xml", UnsafeContent, "DTD"),
        ((b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "http://example.com/x">]>'
          b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">&e;</rdf:RDF>'),
         "application/rdf+xml", UnsafeContent, "DTD"),
        (b'{"@context": ["https://schema.org/", {"ex": "https://example.org/#"}], "@id": "ex:a"}',
         "application/ld+json", UnsafeContent, "https://schema.org/"),
        ((b'{"@context": {"ex": {"@id": "https://example.org/#", "@context": "https://x.org/c"}},'
          b' "@id": "https://example.org/#a"}'),
         "application/ld+json", UnsafeContent, "https://x.org/c"),
        (b'{"@context": {"@import": "https://x.org/ctx"}, "@id": "https://example.org/#a"}',
         "application/ld+json", UnsafeContent, "@import"),
        (b'{"@id": ', "application/ld+json", InvalidInput, "line 1"),
        (b"@prefix ex: <https://e/#> .\nex:a ex:b .\n", "text/turtle", InvalidInput, "line 2"),
        (b"<root>\n<open></close></root>", "application/rdf+xml", InvalidInput, "line 2"),
        (b"<https://e/a> <https://e/b> .\n", "application/n-triples", InvalidInput, "N-Triples"),
        (b"   \n", "text/turtle", InvalidInput, "empty"),
    ],
    ids=["entity-expansion", "external-entity", "remote-context-in-list", "scoped-remote-context",
         "context-import", "bad-json", "bad-turtle", "bad-xml", "bad-ntriples", "empty"],
)
def test_refusals_are_clear(network_events: list[str], data: bytes, media_type: str,
                            error: type[Exception], needle: str) -> None:
    with pytest.raises(error) as caught:
        parse_rdf(data, media_type)
    assert needle in str(caught.value)
    assert network_events == []


def test_byte_cap_is_checked_before_parsing() -> None:
    with pytest.raises(LimitExceeded, match="limit is 100 bytes"):
        parse_rdf(TTL, "text/turtle", limits=ParseLimits(max_bytes=100))


def test_triple_cap_stops_the_parser() -> None:
    data = "".join(f"<{EX}s{i}> <{EX}p> <{EX}o> .\n" for i in range(1000)).encode()
    with pytest.raises(LimitExceeded, match="more than 10 triples"):
        parse_rdf(data, "application/n-triples", limits=ParseLimits(max_triples=10))


@pytest.mark.parametrize("refused", [True, False])
def test_nothing_a_large_parse_built_outlives_it(refused: bool) -> None:
    """A refused 3-million-triple upload kept ~700 MB until the next full collection (rdflib's
    graphs and parsers form reference cycles): after a large parse, refused or not, none of
    the parser's graphs is alive and the collected triples are gone with it."""
    import gc

    from rdflib import Graph

    # Over the 1 MiB after which a parse is collected, in few triples (the parse's cost is
    # per triple): long local names make each line about 100 bytes.
    pad = "x" * 80
    data = ("@prefix ex: <https://example.org/big#> .\n"
            + "".join(f"ex:s{i}{pad} ex:p ex:o{i} .\n" for i in range(12_000))).encode()
    assert len(data) > 1024 * 1024
    gc.collect()
    graphs_before = sum(isinstance(o, Graph) for o in gc.get_objects())
    gc.disable()  # only what parse_rdf itself frees may count
    try:
        if refused:
            with pytest.raises(LimitExceeded, match="more than 10000 triples"):
                parse_rdf(data, "text/turtle", limits=ParseLimits(max_triples=10_000))
        else:
            parsed = parse_rdf(data, "text/turtle")
            assert len(parsed.triples) == 12_000
        assert sum(isinstance(o, Graph) for o in gc.get_objects()) == graphs_before
    finally:
        gc.enable()


def test_time_limit_aborts_a_long_parse() -> None:
    data = "".join(f"<{EX}s{i}> <{EX}p> <{EX}o{i}> .\n" for i in range(200_000)).encode()
    with pytest.raises(LimitExceeded, match="longer than 0.05 s"):
        parse_rdf(data, "application/n-triples", limits=ParseLimits(timeout_s=0.05))


def test_invalid_iris_are_skipped_with_a_warning() -> None:
    data = b'<https://example.org/a b> <https://example.org/#p> "x" .\n<https://e/a> <https://e/p> "y" .'
    parsed = parse_rdf(data, "text/turtle")
    assert parsed.triples == (("<https://e/a>", "<https://e/p>", '"y"'),)
    assert any("https://example.org/a b" in w for w in parsed.warnings)


@pytest.mark.parametrize(
    ("content_type", "filename", "expected"),
    [
        ("text/turtle", None, "text/turtle"),
        ("application/x-turtle", None, "text/turtle"),
        ("application/json", None, "application/ld+json"),
        ("application/octet-stream", "onto.owl", "application/rdf+xml"),
        (None, "data.nt", "application/n-triples"),
    ],
)
def test_media_type_resolution(content_type: str | None, filename: str | None,
                               expected: str) -> None:
    assert media_type_for(content_type, filename) == expected


def test_unknown_media_type_names_the_accepted_ones() -> None:
    with pytest.raises(InvalidInput, match="accepted: text/turtle"):
        media_type_for("application/pdf", "x.pdf")


def test_ntriples_fast_path_matches_the_rdflib_parser() -> None:
    from rdflib import Graph

    from reasoning.evidence.bundled import bundled_domains

    turtle = dict(bundled_domains())["aml"].read_bytes()
    ntriples = Graph().parse(data=turtle, format="turtle").serialize(format="nt").encode()
    ntriples += (b'<https://e/x> <https://e/p> "tab\\there \\u00e9 \\"q\\""@EN-gb .\n'
                 b'<https://e/x> <https://e/p> "s"^^<http://www.w3.org/2001/XMLSchema#string> .\n'
                 b"# a comment line\n\n")

    def named(triples: tuple[tuple[str, str, str], ...]) -> set[tuple[str, str, str]]:
        return {t for t in triples if not any(term.startswith("_:") for term in t)}

    from_turtle = named(parse_rdf(turtle, "text/turtle").triples)
    from_ntriples = named(parse_rdf(ntriples, "application/n-triples").triples)
    assert from_turtle < from_ntriples
    assert from_ntriples - from_turtle == {
        ("<https://e/x>", "<https://e/p>", '"tab\\there é \\"q\\""@en-gb'),
        ("<https://e/x>", "<https://e/p>", '"s"'),
    }


def test_ntriples_with_iri_escapes_fall_back_to_rdflib() -> None:
    data = b"<https://e/caf\\u00E9> <https://e/p> <https://e/o> .\n"
    assert parse_rdf(data, "application/n-triples").triples == (
        ("<https://e/café>", "<https://e/p>", "<https://e/o>"),
    )


OWL_XML_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE Ontology [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="https://example.org/o">
  <Declaration><Class IRI="https://example.org/o#A"/></Declaration>
  <AnnotationAssertion><AnnotationProperty abbreviatedIRI="rdfs:label"/>
    <IRI>https://example.org/o#A</IRI><Literal>&b;</Literal></AnnotationAssertion>
</Ontology>"""
OWL_XML_IMPORT = b"""<?xml version="1.0"?>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="https://example.org/o">
  <Import>http://203.0.113.7/core.owl</Import>
</Ontology>"""


@pytest.mark.parametrize(
    ("content_type", "filename"),
    [("application/owl+xml", None), ("application/owl+xml; charset=utf-8", "o.owl"),
     ("application/octet-stream", "onto.owx"), (None, "ONTO.OWX")],
)
def test_owl_xml_media_types_are_refused_with_the_accepted_formats(
    content_type: str | None, filename: str | None,
) -> None:
    with pytest.raises(UnsupportedFormat) as caught:
        media_type_for(content_type, filename)
    assert "OWL/XML" in caught.value.detail
    assert caught.value.detail.endswith("accepted: " + ", ".join(MEDIA_TYPES))
    assert caught.value.extra["accepted"] == list(MEDIA_TYPES)


def test_hostile_owl_xml_sent_as_rdf_xml_is_refused_before_parsing(
    network_events: list[str],
) -> None:
    with pytest.raises(UnsafeContent, match="DTD"):
        parse_rdf(OWL_XML_LAUGHS, "application/rdf+xml")
    with pytest.raises(UnsupportedFormat, match="root element owl:Ontology"):
        parse_rdf(OWL_XML_IMPORT, "application/rdf+xml")
    assert network_events == []
