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


#: The modules of ``reasoning.evidence`` the store may import when it runs: value objects only.
#: Parsing, materialising, indexing and caching indexes are the core's work, run by the app's
#: ontology service (``app/services/ontologies.py``); the store holds rows and bytes.
STORE_EVIDENCE_ALLOWED = {"reasoning.evidence.model"}


def _runtime_imports(tree: ast.AST) -> set[str]:
    """Modules imported when the module runs (``if TYPE_CHECKING:`` blocks left out), with
    ``from package import module`` counted as ``package.module``."""
    found: set[str] = set()
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                found |= _runtime_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        else:
            found |= _runtime_imports(node)
    return found


def test_store_imports_no_ontology_ingestion() -> None:
    modules = sorted((ROOT / "store").rglob("*.py"))
    assert modules
    ingesting = {}
    for module in modules:
        tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
        evidence = {
            name for name in _runtime_imports(tree)
            if name.startswith("reasoning.evidence.") and not any(
                name == allowed or name.startswith(allowed + ".") for allowed in STORE_EVIDENCE_ALLOWED)
        }
        if evidence:
            ingesting[str(module.relative_to(ROOT))] = sorted(evidence)
    assert ingesting == {}
