"""Evidence subgraph latency against graph size, and upload + materialisation time.

Run ``python -m bench.evidence [--quick] [--queries N]``.

For each size (10^3, 10^4, 10^5 and, without ``--quick``, 10^6 asserted
triples) it generates a synthetic AML-like domain in process: parties,
accounts and transfers with English labels (a tenth also in Chinese), a
few jurisdictions, and the three views of the bundled AML domain. Transfer
endpoints are drawn with a skewed (power-law) choice, so a few parties are
hubs and most have a handful of transfers, as in payment data.

- ``upload_s`` (wall) and ``upload_cpu_s`` (CPU of this process and of the
  reasoner child; on a shared machine the wall time includes waiting for a
  core): :func:`reasoning.evidence.ingest.ingest_ontology` on the
  N-Triples bytes: safe parse, OWL 2 RL materialisation (reasonable, in a
  child process), validation report, label/lemma index, CSR adjacency and
  the serialised blob: everything an upload does except the HTTP transfer
  and the database INSERT.
- ``hopK_p50_ms`` / ``hop2_p95_ms``: :func:`build_evidence` over all three
  views from one seed party (hop budget K, token budget 512 per view), for
  the same seed parties at every size: parties drawn uniformly, so their
  neighbourhood size does not grow with the graph. The first query of a
  size (which computes each view's triple mask once) is not timed.

The last stdout line is one JSON object:
``{"sizes": [{"triples", "upload_s", "hop1_p50_ms", "hop2_p50_ms", "hop2_p95_ms",
"hop3_p50_ms", ...}, ...], ...}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import sys
import time
from datetime import date
from typing import Any

from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import IngestLimits, ingest_ontology
from reasoning.evidence.lemmas import default_lemmatizer
from reasoning.evidence.model import LinkedEntity
from reasoning.evidence.safe_parse import ParseLimits
from reasoning.evidence.subgraph import build_evidence

SYN = "https://bench.tenet.dev/aml#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
TV = "https://tenet.dev/ns/views#"
XSD_DECIMAL = "<http://www.w3.org/2001/XMLSchema#decimal>"
TODAY = date(2026, 11, 29)
SEED_PARTIES = 40
TRIPLES_PER_PARTY = 18


def _iri(local: str) -> str:
    return f"<{SYN}{local}>"


def _schema() -> list[str]:
    """Classes, properties and the three views (the same vocabulary as the AML domain)."""
    owl = "http://www.w3.org/2002/07/owl#"
    rdfs = "http://www.w3.org/2000/01/rdf-schema#"
    lines = [f"{_iri(c)} {RDF_TYPE} <{owl}Class> ." for c in
             ("Party", "Organisation", "Account", "Transfer", "Jurisdiction")]
    lines.append(f"{_iri('Organisation')} <{rdfs}subClassOf> {_iri('Party')} .")
    for prop in ("registeredIn", "holdsAccount", "bookedIn", "originator", "beneficiary",
                 "fromAccount", "toAccount"):
        lines.append(f"{_iri(prop)} {RDF_TYPE} <{owl}ObjectProperty> .")
    lines.append(f"{_iri('amount')} {RDF_TYPE} <{owl}DatatypeProperty> .")
    lines.append(f"{_iri('accountHolder')} <{owl}inverseOf> {_iri('holdsAccount')} .")
    views = {
        "fund_flow": ("originator", "beneficiary", "fromAccount", "toAccount", "amount",
                      "holdsAccount", "accountHolder"),
        "entity_relations": ("registeredIn", "holdsAccount"),
        "compliance": ("registeredIn", "bookedIn"),
    }
    for name, props in views.items():
        view = _iri(f"view-{name}")
        lines.append(f"{view} {RDF_TYPE} <{TV}View> .")
        lines.append(f'{view} <{TV}name> "{name}" .')
        lines.extend(f"{view} <{TV}includesProperty> {_iri(p)} ." for p in props)
        lines.append(f"{view} <{TV}includesClass> {_iri('Organisation')} .")
    return lines


def generate(triples: int, rng: random.Random) -> tuple[bytes, int]:
    """N-Triples of a synthetic domain with about ``triples`` triples; returns (bytes, parties)."""
    parties = max(SEED_PARTIES, triples // TRIPLES_PER_PARTY)
    jurisdictions = 50
    lines = _schema()
    for j in range(jurisdictions):
        lines.append(f"{_iri(f'j{j}')} {RDF_TYPE} {_iri('Jurisdiction')} .")
        lines.append(f'{_iri(f"j{j}")} {LABEL} "Jurisdiction {j}"@en .')
    for i in range(parties):
        party = _iri(f"p{i}")
        account = _iri(f"a{i}")
        lines.append(f"{party} {RDF_TYPE} {_iri('Organisation')} .")
        lines.append(f'{party} {LABEL} "Party {i} Ltd"@en .')
        if i % 10 == 0:
            lines.append(f'{party} {LABEL} "第{i}号公司"@zh .')
        lines.append(f"{party} {_iri('registeredIn')} {_iri(f'j{rng.randrange(jurisdictions)}')} .")
        lines.append(f"{party} {_iri('holdsAccount')} {account} .")
        lines.append(f"{account} {RDF_TYPE} {_iri('Account')} .")
        lines.append(f"{account} {_iri('bookedIn')} {_iri(f'j{rng.randrange(jurisdictions)}')} .")
    transfers = max(1, (triples - len(lines)) // 7)
    for t in range(transfers):
        src = int(parties * rng.random() ** 3)
        dst = int(parties * rng.random() ** 3)
        transfer = _iri(f"t{t}")
        lines.append(f"{transfer} {RDF_TYPE} {_iri('Transfer')} .")
        lines.append(f"{transfer} {_iri('originator')} {_iri(f'p{src}')} .")
        lines.append(f"{transfer} {_iri('beneficiary')} {_iri(f'p{dst}')} .")
        lines.append(f"{transfer} {_iri('fromAccount')} {_iri(f'a{src}')} .")
        lines.append(f"{transfer} {_iri('toAccount')} {_iri(f'a{dst}')} .")
        lines.append(f'{transfer} {_iri("amount")} "{rng.randrange(100, 5_000_000)}"^^{XSD_DECIMAL} .')
        lines.append(f'{transfer} {LABEL} "Transfer {t}"@en .')
    return ("\n".join(lines) + "\n").encode(), parties


def _child_cpu() -> float:
    """CPU seconds used by finished child processes (the reasoner runs in one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_queries(index: OntologyIndex, seeds: list[int], queries: int) -> dict[str, float]:
    entities = [LinkedEntity(iri=f"{SYN}p{s}", label=f"Party {s} Ltd", mention=f"Party {s} Ltd",
                             start=0, end=10, score=1.0) for s in seeds]
    build_evidence(index, entities[:1], hops=1, token_budget=512, today=TODAY)
    out: dict[str, float] = {}
    facts: dict[int, list[int]] = {}
    for hops in (1, 2, 3):
        times: list[float] = []
        facts[hops] = []
        for q in range(queries):
            seed = entities[q % len(entities)]
            started = time.perf_counter()
            graphs = build_evidence(index, [seed], hops=hops, token_budget=512, today=TODAY)
            times.append((time.perf_counter() - started) * 1000)
            facts[hops].append(sum(len(g.facts) for g in graphs))
        out[f"hop{hops}_p50_ms"] = round(statistics.median(times), 3)
        out[f"hop{hops}_p95_ms"] = round(_percentile(times, 0.95), 3)
        out[f"hop{hops}_mean_facts"] = round(statistics.mean(facts[hops]), 1)
    return out


def run_size(triples: int, queries: int, rng_seed: int = 7) -> dict[str, Any]:
    rng = random.Random(rng_seed)
    data, parties = generate(triples, rng)
    limits = IngestLimits(parse=ParseLimits(max_bytes=1 << 31, max_triples=5_000_000,
                                            timeout_s=3600), materialise_timeout_s=3600)
    gc.collect()
    started, cpu_started, child_started = time.perf_counter(), time.process_time(), _child_cpu()
    result = ingest_ontology(data, "application/n-triples", limits=limits)
    upload_s = time.perf_counter() - started
    upload_cpu_s = time.process_time() - cpu_started + _child_cpu() - child_started
    index = OntologyIndex.from_bytes(result.index_blob, version=f"bench-{triples}")
    seed_rng = random.Random(1234)
    seeds = [seed_rng.randrange(parties) for _ in range(SEED_PARTIES)]
    row: dict[str, Any] = {
        "triples": result.triples_asserted,
        "upload_s": round(upload_s, 3),
        "upload_cpu_s": round(upload_cpu_s, 3),
        "materialised_triples": result.triples_materialised,
        "parse_s": result.report.parse_seconds,
        "materialise_s": result.report.materialisation.seconds,
        "engine": result.report.materialisation.engine,
        "index_s": result.report.index_seconds,
        "blob_bytes": len(result.index_blob),
    }
    row.update(measure_queries(index, seeds, queries))
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="stop at 10^5 triples")
    parser.add_argument("--queries", type=int, default=60, help="queries per hop count")
    args = parser.parse_args(argv)
    sizes = [1_000, 10_000, 100_000] + ([] if args.quick else [1_000_000])
    default_lemmatizer().lemma("warm")  # the server loads spaCy at start-up, not per upload
    rows = []
    for size in sizes:
        row = run_size(size, args.queries)
        rows.append(row)
        print(f"{size:>9} triples: upload {row['upload_s']:.2f} s, "
              f"2-hop p50 {row['hop2_p50_ms']:.2f} ms", file=sys.stderr, flush=True)
    growth = None
    if len(rows) >= 2 and rows[0]["hop2_p50_ms"] > 0:
        growth = round(rows[-1]["hop2_p50_ms"] / rows[0]["hop2_p50_ms"], 3)
    print(json.dumps({
        "sizes": rows,
        "hop2_growth_first_to_last": growth,
        "size_growth_first_to_last": rows[-1]["triples"] / rows[0]["triples"],
        "seed_parties": SEED_PARTIES,
        "queries_per_hop": args.queries,
        "views": ["compliance", "entity_relations", "fund_flow"],
        "notes": "upload_s = ingest_ontology on N-Triples bytes (parse, OWL 2 RL, report, index, "
                 "blob), without HTTP and database; query times = build_evidence over all views "
                 "from one uniformly drawn seed party; shared CPU, times indicative",
    }))


if __name__ == "__main__":
    main()
