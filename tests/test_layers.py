"""The layers of DESIGN.md section 1: the core and the inference package import no HTTP code and
no code of the HTTP layer; the core imports nothing of ours (read from the real source files)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Package -> the top-level modules it must never import.
FORBIDDEN = {
    "reasoning": {"app", "inference", "store", "litestar", "sqlalchemy"},
    "inference": {"app", "store", "litestar", "sqlalchemy"},
}


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_stay_within_its_layer(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert modules, f"no modules found under {package}/"
    crossing = {
        str(m.relative_to(ROOT)): sorted(_imported_roots(m) & FORBIDDEN[package]) for m in modules
    }
    assert {m: found for m, found in crossing.items() if found} == {}
