"""Benchmarks: ``python -m bench.<name> [--quick]``; the last stdout line is one JSON object."""
