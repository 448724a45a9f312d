"""OWL 2 RL materialisation: reasonable, the owlrl reference, fallbacks and the time limit."""

from __future__ import annotations

from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.materialise import materialise
from reasoning.evidence.safe_parse import parse_rdf

EX = "https://example.org/m#"
ONTOLOGY = f"""@prefix ex: <{EX}> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:Dog rdfs:subClassOf ex:Animal .
ex:owns owl:inverseOf ex:ownedBy .
ex:born a owl:DatatypeProperty ; rdfs:domain ex:Living .
ex:rex a ex:Dog ; ex:ownedBy ex:ann ; ex:born "2020-01-01"^^xsd:date .
""".encode()


def triples() -> tuple[tuple[str, str, str], ...]:
    return parse_rdf(ONTOLOGY, "text/turtle").triples


def test_reasonable_infers_types_inverses_and_domains_through_literals() -> None:
    result = materialise(triples(), engine="reasonable")
    assert result.engine == "reasonable" and not result.timed_out and result.note is None
    inferred = set(result.inferred)
    rdf_type = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    assert (f"<{EX}rex>", rdf_type, f"<{EX}Animal>") in inferred
    assert (f"<{EX}ann>", f"<{EX}owns>", f"<{EX}rex>") in inferred
    assert (f"<{EX}rex>", rdf_type, f"<{EX}Living>") in inferred
    assert not any(s.startswith('"') for s, _, _ in inferred)
    assert not set(triples()) & inferred


def test_owlrl_reference_agrees_on_the_domain_inferences() -> None:
    asserted = _asserted_clinical()
    fast = materialise(asserted, engine="reasonable")
    reference = materialise(asserted, engine="owlrl")
    clin = "<https://tenet.dev/ontologies/clinical#"

    def domain(found: tuple[tuple[str, str, str], ...]) -> set[tuple[str, str, str]]:
        return {t for t in found if t[0].startswith(clin) and t[2].startswith(clin)}

    assert domain(fast.inferred)
    assert domain(fast.inferred) == domain(reference.inferred)
    assert not any(s == o and p.endswith("#sameAs>") for s, p, o in reference.inferred)


def _asserted_clinical() -> tuple[tuple[str, str, str], ...]:
    return parse_rdf(dict(bundled_domains())["clinical"].read_bytes(), "text/turtle").triples


def test_auto_uses_owlrl_for_property_chains_reasonable_does_not_apply() -> None:
    chain = ONTOLOGY + b"""
ex:petOfOwnerOf owl:propertyChainAxiom ( ex:ownedBy ex:owns ) .
"""
    parsed = parse_rdf(chain, "text/turtle").triples
    result = materialise(parsed, engine="auto")
    assert result.engine == "owlrl"
    assert result.note is not None and "propertyChainAxiom" in result.note
    assert (f"<{EX}rex>", f"<{EX}petOfOwnerOf>", f"<{EX}rex>") in set(result.inferred)
    plain = materialise(parsed, engine="reasonable")
    assert (f"<{EX}rex>", f"<{EX}petOfOwnerOf>", f"<{EX}rex>") not in set(plain.inferred)


def test_time_limit_kills_the_reasoner_and_keeps_asserted_only() -> None:
    big = [(f"<{EX}n{i}>", f"<{EX}next>", f"<{EX}n{i + 1}>") for i in range(200_000)]
    big.append((f"<{EX}next>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>",
                "<http://www.w3.org/2002/07/owl#TransitiveProperty>"))
    result = materialise(big, timeout_s=0.5)
    assert result.timed_out
    assert result.inferred == ()
    assert result.note is not None and "exceeded 0.5 s" in result.note
    assert result.seconds < 5


def _transitive_chain(n: int) -> tuple[tuple[str, str, str], ...]:
    """A transitive property over a chain of ``n`` nodes: its closure holds about n^2/2 triples."""
    links = "".join(f"ex:n{i} ex:next ex:n{i + 1} .\n" for i in range(n))
    turtle = f"""@prefix ex: <{EX}> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
ex:next a owl:TransitiveProperty .
{links}"""
    return parse_rdf(turtle.encode(), "text/turtle").triples


def test_a_closure_over_the_triple_cap_is_dropped_and_reported() -> None:
    asserted = _transitive_chain(120)  # about 7,000 inferred triples
    unbounded = materialise(asserted, timeout_s=60)
    assert len(unbounded.inferred) > 5000 and not unbounded.capped
    capped = materialise(asserted, timeout_s=60, max_triples=2000)
    assert capped.capped and capped.inferred == ()
    assert capped.note is not None and "2000" in capped.note and "TENET_ONTOLOGY_MAX_TRIPLES" in capped.note


def test_the_reasoner_process_runs_under_a_memory_limit() -> None:
    # 16 MiB of address space cannot hold the interpreter and the closure: the child fails,
    # and the caller gets the asserted triples with the failure in the note.
    starved = materialise(_transitive_chain(300), timeout_s=60, memory_bytes=16 << 20)
    assert starved.inferred == () and starved.note is not None
