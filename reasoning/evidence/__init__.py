"""Ontology ingestion, entity linking and multi-hop evidence subgraphs.

Modules, in the order a request meets them (import them directly: this
package's ``__init__`` stays light so that ``reasoning.evidence.model`` is
cheap to import):

- ``safe_parse``: :func:`parse_rdf` turns uploaded bytes into triples with no
  DTDs, entities, remote contexts or imports followed, under byte, triple and
  time caps.
- ``ingest``: :func:`ingest_ontology` (once per upload): parse, read the views
  (``views``), OWL 2 RL materialisation (``materialise``, in a child process
  under a time limit), validation report (``validation``, ``report``) and the
  compact index (``index``: :class:`OntologyIndex`, stored as one blob).
- ``cache``: :class:`IndexCache`, the per-process LRU of loaded indexes.
- ``linking``: :func:`link_mentions` (prompt -> :class:`LinkedEntity`).
- ``subgraph``: :func:`build_evidence` (k-hop expansion per view, ranking,
  token budget, dates) and :func:`apply_time_window` (citation windows).
- ``export``: :func:`subgraphs_to_turtle`.
- ``bundled``: :func:`bundled_domains`, the sample AML and clinical domains.

Typical use by the request pipeline::

    index = await app.services.ontologies.load_index(session, runtime.ontology_indexes,
                                                     tenant_id, domain)
    linked = link_mentions(index, prompt, doc=english_doc)
    graphs = build_evidence(index, linked, hops=budget.evidence_hops,
                            token_budget=512, today=date.today())
    graphs = apply_time_window(graphs, not_before=date(2020, 1, 1))
"""
