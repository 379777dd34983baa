"""TLS stays on for every host off this machine unless turned off by name (option ``tls=false``, or a
scheme or ``sslmode`` that says so), on every database; loopback hosts default to plain connections."""

from __future__ import annotations

import pytest

from vectordb.connector.client import load_backend, resolve_options

# scheme → a remote URI, a loopback URI, and how the backend shows whether it will use TLS
CASES = {
    "pinecone+grpc": ("pinecone+grpc://idx-abc.svc.pinecone.io", "pinecone+grpc://127.0.0.1:5081"),
    "pinecone": ("pinecone://idx-abc.svc.pinecone.io", "pinecone://localhost:5080"),
    "milvus": ("milvus://milvus.example:19530/docs", "milvus://127.0.0.1:19530/docs"),
    "chroma": ("chroma://chroma.example:8000/docs", "chroma://127.0.0.1:8000/docs"),
    "qdrant": ("qdrant://qdrant.example:6333/docs", "qdrant://127.0.0.1:6333/docs"),
    "qdrant+grpc": ("qdrant+grpc://qdrant.example:6334/docs", "qdrant+grpc://[::1]:6334/docs"),
    "postgresql": ("postgresql://u@db.example/app?table=t", "postgresql://u@127.0.0.1/app?table=t"),
    "weaviate": ("weaviate://weaviate.example:8080/Docs", "weaviate://127.0.0.1:8080/Docs"),
}


def uses_tls(uri: str, **options: str) -> bool:
    backend = load_backend(resolve_options({"uri": uri, "api_key": "k", **options}))
    if hasattr(backend, "target"):  # PostgreSQL: libpq's sslmode
        return "sslmode=require" in backend.target.conninfo
    return bool(backend.tls)


@pytest.mark.parametrize("scheme", sorted(CASES))
def test_tls_is_on_off_this_machine_and_off_only_by_name(scheme: str) -> None:
    remote, loopback = CASES[scheme]
    assert uses_tls(remote), f"{scheme}: a remote host without TLS"
    assert not uses_tls(remote, tls="false"), f"{scheme}: tls=false is not honoured"
    assert not uses_tls(loopback), f"{scheme}: a loopback host gets TLS by default"
    assert uses_tls(loopback, tls="true"), f"{scheme}: tls=true is not honoured"


def test_every_database_is_in_the_table() -> None:
    from vectordb.connector.backends.registry import backends

    covered = {scheme.partition("+")[0] for scheme in CASES} | {"postgres"}  # postgres: postgresql's alias
    assert set(backends()) <= covered, "add the new database's URIs to CASES"
