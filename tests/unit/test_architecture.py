"""The layering, checked on the source: every import, at module level or inside a function.

- the client core (``connector/``) imports no engine adapter (pyspark, apache_beam, vectordb.spark,
  vectordb.beam);
- outside ``backends/`` and ``transports/``, the core imports no database's own package;
- transports import no backend;
- ``spark/`` and ``beam/`` import neither each other nor a transport (they hand data to the client).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"connector": "vectordb.connector", "spark": "vectordb.spark", "beam": "vectordb.beam"}
ADAPTERS = ("pyspark", "apache_beam", "vectordb.spark", "vectordb.beam")
DATABASE_PACKAGES = (
    "pymilvus",
    "milvus_lite",
    "pinecone",
    "chromadb",
    "qdrant_client",
    "weaviate",
    "psycopg",
)


def module_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    parts = [PACKAGES[folder], *rest]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, ``from x import y`` counted as ``x.y``."""
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in files
        for name in sorted(imports_of(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


def test_the_checker_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    probe = ROOT / "connector" / "transports" / "grpc.py"
    found = imports_of(probe)
    assert "hpack" in found  # imported inside a function
    assert "vectordb.connector.errors" in found  # a relative import, resolved


def test_the_core_imports_no_engine_adapter() -> None:
    assert violations(sources("connector"), ADAPTERS) == []


@pytest.mark.parametrize("folder", ["connector"])
def test_only_backends_and_transports_import_a_databases_own_package(folder: str) -> None:
    core = [
        p for p in sources(folder) if p.relative_to(ROOT / folder).parts[0] not in ("backends", "transports")
    ]
    assert violations(core, DATABASE_PACKAGES) == []


def test_transports_import_no_backend() -> None:
    assert violations(sources("connector/transports"), ("vectordb.connector.backends",)) == []


def test_adapters_import_neither_each_other_nor_a_transport() -> None:
    transports = ("vectordb.connector.transports",)
    assert violations(sources("spark"), ("vectordb.beam", "apache_beam", *transports)) == []
    assert violations(sources("beam"), ("vectordb.spark", "pyspark", *transports)) == []


def test_adapters_name_no_database_and_take_no_bulk_decision_of_their_own() -> None:
    """Spark and Beam hand rows to the client: a database's module (its bulk path included) is reached
    only through the backend (``Client.bulk``), never imported, and no adapter tests ``write_mode``."""
    backends = ("vectordb.connector.backends",)
    allowed = ("vectordb.connector.backends.registry",)  # what a URI names, not a database
    found = [
        v
        for folder in ("spark", "beam")
        for v in violations(sources(folder), backends)
        if not any(v.endswith(a) or f"{a}." in v for a in allowed)
    ]
    assert found == []
    mentions = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder in ("spark", "beam")
        for path in sources(folder)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "write_mode"
    ]
    assert mentions == []


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        # the embedding stage fills rows; the client drives it (and a planner probes it): never back
        ("connector/embedding/stage.py", "vectordb.connector.client"),
        # options read a key and parse embedding options; neither reads options back
        ("connector/embedding/options.py", "vectordb.connector.options"),
        ("connector/keys.py", "vectordb.connector.options"),
        # the Pinecone backend names its bulk import; the import never names the backend
        ("connector/backends/pinecone_import.py", "vectordb.connector.backends.pinecone"),
        ("connector/backends/pinecone_import_api.py", "vectordb.connector.backends.pinecone"),
    ],
)
def test_no_module_imports_back_the_module_that_imports_it(module: str, forbidden: str) -> None:
    """The import circles that were: any import counts, a type-only one too (a circle at type level
    still means two modules that cannot be read, or changed, alone)."""
    found = [
        name for name in imports_of(ROOT / module) if name == forbidden or name.startswith(forbidden + ".")
    ]
    assert found == []
