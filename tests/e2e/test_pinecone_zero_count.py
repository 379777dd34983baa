"""An upsert reply counting 0 rows fails them over gRPC as over REST.

Pinecone's ``UpsertResponse.upserted_count`` is a proto3 ``uint32``: a count of 0 is left off the wire, so the
reply is empty. The backend read a reply without field 1 as "no count" and took every row for written, where
REST's ``{"upsertedCount": 0}`` failed them: the same server's answer, two accounts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pinecone_upsert_pb2 as pb
import pytest

from tests.servers import pinecone_grpc, pinecone_rest, script
from tests.servers.fixtures import start_server
from vectordb.connector import connect
from vectordb.connector.transports.base import forget_shared

pytestmark = pytest.mark.timeout(60)


def test_proto3_leaves_a_count_of_zero_off_the_wire() -> None:
    assert pb.UpsertResponse(upserted_count=0).SerializeToString() == b""
    assert pb.UpsertResponse(upserted_count=10).SerializeToString() == b"\x08\x0a"


@pytest.mark.parametrize("kind", ["rest", "grpc"])
def test_an_upserted_count_of_zero_fails_the_rows(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    serve = script.serve_upsert

    def serve_upsert(*args: Any, **kwargs: Any) -> script.Verdict:
        verdict = serve(*args, **kwargs)  # applied, counted as none upserted
        return dataclasses.replace(verdict, upserted=0) if verdict.outcome == "ok" else verdict

    for module in (pinecone_rest, pinecone_grpc):
        monkeypatch.setattr(module, "serve_upsert", serve_upsert)
    rows = [{"id": f"d{i}", "values": [float(i), 1.0]} for i in range(20)]
    with start_server(kind) as server:
        try:
            with connect(server.uri, on_error="report", batch_size=10, max_retries=1) as client:
                report = client.write(rows)
        finally:
            forget_shared()
    assert report.written == 0 and report.failed == 20 and report.retries == 2, report  # old gRPC: 20 written
    assert sorted(report.failed_ids, key=str) == sorted(r["id"] for r in rows)
    reasons = {f.error for f in report.failures}
    assert len(reasons) == 1 and "upserted 0 of the 10 rows sent" in reasons.pop(), report
