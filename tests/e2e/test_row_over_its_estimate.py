"""A row is refused as too large only when its request alone is: the gRPC size estimate errs large (a list
of zeros: 15 bytes each estimated, 4 sent to Qdrant; a list of one-letter strings: 17 estimated, 5 sent to
Pinecone), and a row over it was refused on the estimate alone, though its request fits.
"""

from __future__ import annotations

from tests.servers.fixtures import ServerHandle
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect

MIB = 1 << 20


def test_qdrant_grpc_sends_a_row_over_its_estimate_whose_request_fits(qdrant_server: QdrantServer) -> None:
    """100,000 zeros: estimated at 1.5 MB, sent in 0.4 MB; 300,000 are 1.2 MB sent: refused, saying so."""
    rows = [
        {"id": 1, "values": [1.0, 0.5, 0.25], "metadata": {"f": [0] * 100_000}},
        {"id": 2, "values": [1.0, 0.5, 0.25], "metadata": {"f": [0] * 300_000}},
        {"id": 3, "values": [1.0, 0.5, 0.25], "metadata": {"f": [0]}},
    ]
    with connect(
        qdrant_server.grpc_uri("c"), create=True, dimension=3, on_error="report", max_batch_bytes=MIB
    ) as client:
        report = client.write(rows)
    assert (report.written, report.failed_ids) == (2, ["2"]), report.failures
    assert sorted(qdrant_server.store.points("c")) == [1, 3]
    assert max(entry.size for entry in qdrant_server.store.log) <= MIB
    error = report.failures[0].error
    assert error.startswith("row is 1") and error.endswith(
        f"bytes encoded (a request of it alone); a request takes at most {MIB} (option max_batch_bytes)"
    ), error
    assert int(error.split()[2]) > MIB


def test_pinecone_grpc_sends_a_row_over_its_estimate_whose_request_fits(
    pinecone_grpc_server: ServerHandle,
) -> None:
    """10,000 one-letter strings (40 KB of JSON, under Pinecone's metadata limit): estimated at 170 KB, sent
    in 50 KB; under max_batch_bytes=40000 that is refused, saying so."""
    row = {"id": "letters", "values": [1.0, 0.5], "metadata": {"f": ["a"] * 10_000}}
    with connect(pinecone_grpc_server.uri, on_error="report", max_batch_bytes=100_000) as client:
        report = client.write([row])
    assert (report.written, report.failed) == (1, 0), report.failures
    with connect(pinecone_grpc_server.uri, on_error="report", max_batch_bytes=40_000) as client:
        report = client.write([{**row, "id": "refused"}])
    assert report.failed_ids == ["refused"], report
    assert "bytes encoded (a request of it alone); a request takes at most 40000" in report.failures[0].error
    assert pinecone_grpc_server.arrived().ids() == {"letters"}
