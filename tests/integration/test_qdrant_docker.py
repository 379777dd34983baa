"""The Qdrant backend against the real ``qdrant/qdrant`` image (testcontainers), REST and gRPC: marked
``docker``, and skipped with the reason where no Docker engine answers (as on the machines this project
is built on, where the Qdrant-protocol test servers stand in)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

from vectordb.connector import connect
from vectordb.connector.ids import ORIGINAL_ID_KEY, point_id
from vectordb.connector.transports.base import forget_shared

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

QDRANT_IMAGE = "qdrant/qdrant:v1.16.2"


def _docker_reason() -> str | None:
    """Why no Docker engine can be used here, or ``None``: a raw connect to ``DOCKER_HOST`` (or the default
    socket), so a missing engine costs milliseconds and leaves no client behind."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            path = host[len("unix://") :]
            if not os.path.exists(path):
                return f"no Docker engine: {path} does not exist and DOCKER_HOST is not set"
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(3)
                sock.connect(path)
        else:
            where = urlsplit(host)
            with socket.create_connection((where.hostname or "127.0.0.1", where.port or 2375), timeout=3):
                pass
    except OSError as exc:
        return f"no Docker engine answers at {host}: {exc}"
    return None


@pytest.fixture(scope="module")
def qdrant() -> Iterator[Any]:
    reason = _docker_reason()
    if reason is not None:
        pytest.skip(reason)
    from testcontainers.community.qdrant import QdrantContainer

    with QdrantContainer(QDRANT_IMAGE) as container:
        yield container
    forget_shared()


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_real_qdrant_round_trip_and_refusals(qdrant: Any, transport: str) -> None:
    host = qdrant.get_container_host_ip()
    port = qdrant.get_exposed_port(qdrant.grpc_port if transport == "grpc" else qdrant.rest_port)
    scheme = "qdrant+grpc" if transport == "grpc" else "qdrant"
    collection = f"docker_{transport}_{uuid.uuid4().hex[:8]}"
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 8)).astype(np.float32)
    rows: list[dict[str, Any]] = [
        {"id": f"doc-{i}" if i % 2 else i, "values": vectors[i], "title": f"t{i}"} for i in range(50)
    ]
    rows.append({"id": "short", "values": vectors[0][:7]})
    uri = f"{scheme}://{host}:{port}/{collection}"
    with connect(uri, create=True, metric="dotproduct", namespace="docker", tls=False) as client:
        report = client.write(rows)
    assert report.written == 50 and report.failed_ids == ["short"], report

    official = qdrant.get_client()  # REST; Dot keeps vectors as written (Cosine would normalise them)
    records = {
        r.id: r
        for r in official.retrieve(collection, [point_id(r["id"]) for r in rows[:50]], with_vectors=True)
    }
    assert len(records) == 50
    for i, row in enumerate(rows[:50]):
        record = records[point_id(row["id"])]
        assert np.asarray(record.vector, np.float32).tobytes() == vectors[i].tobytes()
        want = {"title": f"t{i}", "namespace": "docker"}
        if i % 2:
            want[ORIGINAL_ID_KEY] = row["id"]
        assert record.payload == want
    info = official.get_collection(collection).config.params.vectors
    assert (info.size, info.distance.value) == (8, "Dot")
