"""A write stopped by a fatal embedding error (a key revoked mid-write) says so: its report's rows read
but never sent fail as ``Stopped`` (retryable, named by id and position, in dead letters), and its
summary reads "STOPPED (n rows dropped)". It said "OK: 0/0 written … 820 embedded" before."""

from __future__ import annotations

from tests.embedding.fixtures import write_until_key_revoked
from tests.servers.fixtures import ServerHandle


def test_a_write_stopped_mid_way_reports_the_rows_it_dropped(pinecone: ServerHandle) -> None:
    rows = [{"id": f"r{i}", "text": f"hello {i}"} for i in range(5000)]
    client, report = write_until_key_revoked(pinecone.uri, rows)
    stopped = [f for f in report.failures if f.error_type == "Stopped"]
    dropped = sum(f.rows for f in stopped)
    assert dropped > 0 and all(f.retryable for f in stopped)
    assert report.summary().startswith(f"STOPPED ({dropped} rows dropped): {report.written}/")
    assert "not written: the write stopped on AuthError" in stopped[0].error
    positions = sorted(p for f in report.failures for p in f.positions)
    assert len(positions) == len(set(positions)) == report.failed  # each row counted once
    letters = client.dead_letters(rows, report)
    assert len(letters) == report.failed
