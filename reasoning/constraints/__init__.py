"""Typed constraints: the catalog of kinds, extraction, verification."""
