"""A write stopped by a fatal embedding error (a key revoked mid-write) says so: its report's rows read
but never sent fail as ``Stopped`` (retryable, named by id and position, in dead letters), and its
summary reads "STOPPED (n rows dropped)". It said "OK: 0/0 written … 820 embedded" before."""

from __future__ import annotations

import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer, Fault
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.errors import AuthError


def test_a_write_stopped_mid_way_reports_the_rows_it_dropped(pinecone: ServerHandle) -> None:
    rows = [{"id": f"r{i}", "text": f"hello {i}"} for i in range(5000)]
    with EmbeddingsServer() as server:
        server.script(*[Fault.slow(0.0)] * 39, Fault.error(401))
        with (
            connect(
                pinecone.uri,
                on_error="report",
                **embedding_options(server),
                embed_batch_size=20,
                embed_max_concurrency=4,
            ) as client,
            pytest.raises(AuthError) as caught,
        ):
            client.upsert(rows)
        report = caught.value.report
        assert report is not None
        stopped = [f for f in report.failures if f.error_type == "Stopped"]
        dropped = sum(f.rows for f in stopped)
        assert dropped > 0 and all(f.retryable for f in stopped)
        assert report.summary().startswith(f"STOPPED ({dropped} rows dropped): {report.written}/")
        assert "not written: the write stopped on AuthError" in stopped[0].error
        positions = sorted(p for f in report.failures for p in f.positions)
        assert len(positions) == len(set(positions)) == report.failed  # each row counted once
        letters = client.dead_letters(rows, report)
        assert len(letters) == report.failed
