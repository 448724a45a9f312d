"""Ontology ingestion, entity linking and multi-hop evidence subgraphs."""
