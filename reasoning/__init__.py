"""Tenet's reasoning core: constraints, graphs, evidence, DAGs and provenance.

This package never imports HTTP or database code; it is usable as a library.
"""
