"""Named dense vectors and a multi-vector against the real ``qdrant/qdrant`` image (testcontainers), REST and
gRPC: marked ``docker``, skipped with the reason where no Docker engine answers (the Qdrant-protocol test
servers stand in there: tests/e2e/test_qdrant_named.py)."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.integration.test_qdrant_docker import qdrant  # the fixture: skips without Docker
from vectordb.connector import ConfigError, connect

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

__all__ = ["qdrant"]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_real_qdrant_named_and_multi_vectors(qdrant: Any, transport: str) -> None:
    host = qdrant.get_container_host_ip()
    port = qdrant.get_exposed_port(qdrant.grpc_port if transport == "grpc" else qdrant.rest_port)
    scheme = "qdrant+grpc" if transport == "grpc" else "qdrant"
    collection = f"docker_named_{transport}_{uuid.uuid4().hex[:8]}"
    rng = np.random.default_rng(5)
    title = rng.standard_normal((40, 8)).astype(np.float32)
    tokens = [rng.standard_normal((int(k), 4)).astype(np.float32) for k in rng.integers(1, 6, 40)]
    table = pa.table(
        {
            "id": list(range(40)),
            "title_vec": pa.array([list(v) for v in title], pa.list_(pa.float32())),
            "tokens": pa.array([[list(v) for v in m] for m in tokens], pa.list_(pa.list_(pa.float32()))),
        }
    )
    options = {"vector_columns": "title:title_vec", "multi_vector_columns": "colbert:tokens", "tls": False}
    uri = f"{scheme}://{host}:{port}/{collection}"
    with connect(
        uri, create=True, metric="dotproduct", vector_dimensions="title:8,colbert:4", **options
    ) as client:
        report = client.upsert(table)
    assert report.ok and report.written == 40, report

    official = qdrant.get_client()  # REST; Dot keeps vectors as written (Cosine would normalise them)
    params = official.get_collection(collection).config.params
    assert params.vectors["colbert"].multivector_config is not None
    records = {r.id: r.vector for r in official.retrieve(collection, list(range(40)), with_vectors=True)}
    for i in range(40):
        assert np.asarray(records[i]["title"], np.float32).tobytes() == title[i].tobytes()
        assert np.asarray(records[i]["colbert"], np.float32).tobytes() == tokens[i].tobytes()

    with (
        connect(uri, vector_columns="title:title_vec,colbert:tokens", tls=False) as client,
        pytest.raises(ConfigError, match=r"'colbert' of collection .* is a multi-vector"),
    ):
        client.prepare_target()
