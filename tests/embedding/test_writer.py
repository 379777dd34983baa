"""``client.upsert`` with the embedding options: text in, the model's vectors in the database.

End to end against Milvus Lite (read back with pymilvus), PostgreSQL + pgvector (read back with psycopg)
and the project's Pinecone-protocol server
(which records every vector's float32 bytes and when each request arrived): every stored vector is
exactly the one the embeddings server derives from the row's text, and the rows whose text the
server refused are exactly the failed ones, never upserted.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from tests.embedding.fixtures import embedding_options, expected_vectors, too_long, words
from tests.integration.pg_server import PgServer, pg_server_fixture, pg_table_fixture
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import AuthError, ConfigError, WriteFailed, connect
from vectordb.connector.embedding.stage import PIECE_ROWS

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

__all__ = ["pg_server_fixture", "pg_table_fixture"]  # fixtures, used by name

SMALL_MODEL = "test-embed-64"


embed_options = embedding_options


def stored_vectors(milvus: LiteServer, collection: str) -> dict[str, tuple[np.ndarray, dict[str, Any]]]:
    client = milvus.client
    client.load_collection(collection)
    fields = client.describe_collection(collection)["fields"]
    key = next(f["name"] for f in fields if f.get("is_primary"))
    vector = next(f["name"] for f in fields if int(f["type"]) == 101)
    rows = client.query(collection, filter="", output_fields=["*"], limit=16_384)
    return {
        str(row[key]): (
            np.asarray(row[vector], dtype=np.float32),
            {k: v for k, v in row.items() if k not in (key, vector)},
        )
        for row in rows
    }


def test_text_rows_land_in_milvus_lite_with_exactly_the_models_vectors(
    embeddings_server: EmbeddingsServer, milvus_lite: LiteServer, collection_name: str
) -> None:
    n = 3000
    texts = [words(i) for i in range(n)]
    bad = {0, 1, 1023, 1024, 2047, 2999} | set(range(1500, 1540, 3))  # piece edges, first and last
    for i in bad:
        texts[i] = too_long(i) if i % 2 else ""  # over the context (refused with the request), or empty
    table = pa.table({"id": [f"doc{i}" for i in range(n)], "text": texts, "rank": list(range(n))})
    options = embed_options(embeddings_server, embed_batch_size=50, embed_max_concurrency=8)
    with connect(
        milvus_lite.uri, collection=collection_name, create=True, on_error="report", **options
    ) as client:
        report = client.upsert(table)
    assert (report.written, report.failed) == (n - len(bad), len(bad))
    assert set(report.failed_ids) == {f"doc{i}" for i in bad}
    for failure in report.failures:
        if failure.error_type == "InvalidInput":  # failed before sending: servers refuse an empty input
            assert {int(i[3:]) % 2 for i in failure.ids} == {0}
            assert (
                failure.error
                == "text not embedded: column 'text' holds an empty string, which embedding servers refuse"
            )
            continue
        assert failure.error_type == "Rejected" and failure.error.startswith("text not embedded: POST ")
        assert "maximum context length is 512 tokens" in failure.error

    stored = stored_vectors(milvus_lite, collection_name)
    good = [i for i in range(n) if i not in bad]
    assert set(stored) == {f"doc{i}" for i in good}
    expected = expected_vectors([texts[i] for i in good], model=SMALL_MODEL)
    for k, i in enumerate(good):
        vector, metadata = stored[f"doc{i}"]
        np.testing.assert_array_equal(vector, expected[k])
        assert metadata == {"text": texts[i], "rank": i}  # the text is kept as metadata, like any column


def test_text_rows_land_in_pgvector_with_exactly_the_models_vectors(
    embeddings_server: EmbeddingsServer, pg_server: PgServer, pg_table: str
) -> None:
    n = 500
    texts = [words(i) for i in range(n)]
    bad = {0, 250, 499}
    for i in bad:
        texts[i] = too_long(i)
    rows = [{"id": f"doc{i}", "text": t} for i, t in enumerate(texts)]
    with connect(
        pg_server.uri(pg_table), create=True, on_error="report", **embed_options(embeddings_server)
    ) as client:
        report = client.upsert(rows)
    assert sorted(report.failed_ids) == sorted(f"doc{i}" for i in bad) and report.written == n - len(bad)
    with pg_server.connect() as conn:
        stored = dict(conn.execute(f'SELECT id::text, embedding::real[] FROM "{pg_table}"').fetchall())
    good = [i for i in range(n) if i not in bad]
    assert set(stored) == {f"doc{i}" for i in good}
    expected = expected_vectors([texts[i] for i in good], model=SMALL_MODEL)
    for k, i in enumerate(good):
        np.testing.assert_array_equal(np.asarray(stored[f"doc{i}"], dtype=np.float32), expected[k])


def test_a_target_of_another_dimension_than_the_models_is_one_clear_error_not_a_failure_per_row(
    embeddings_server: EmbeddingsServer, milvus_lite: LiteServer, collection_name: str
) -> None:
    with connect(milvus_lite.uri, collection=collection_name, create=True) as client:
        client.upsert([{"id": "seed", "values": np.ones(16, np.float32)}])  # a 16-d collection
    rows = [{"id": f"t{i}", "text": words(i)} for i in range(50)]
    with (
        connect(
            milvus_lite.uri, collection=collection_name, on_error="report", **embed_options(embeddings_server)
        ) as client,
        pytest.raises(
            ConfigError, match=f"option embed_model: '{SMALL_MODEL}' answers 64-dimensional"
        ) as info,
    ):
        client.upsert(rows)
    assert "16" in str(info.value)
    assert set(stored_vectors(milvus_lite, collection_name)) == {"seed"}


def test_rows_with_vectors_keep_them_and_rows_with_neither_fail_naming_the_text_column(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    own = np.arange(64, dtype=np.float32) / 64
    rows: list[dict[str, Any]] = [
        {"id": "text-only", "text": "a text to embed"},
        {"id": "vector-only", "values": own},
        {"id": "both", "text": "never sent: the row has its vector", "values": own + 1},
        {"id": "neither", "genre": "x"},
        {"id": "empty-vector", "text": "an empty vector counts as none", "values": []},
        {"id": "not-text", "text": 42},
        {"id": "too-long", "text": too_long(7), "sparse_values": {"indices": [1], "values": [0.5]}},
        {"id": "neither-after", "genre": "y"},  # after rows the stage took out: its position is still its own
    ]
    with connect(pinecone.uri, on_error="report", **embed_options(embeddings_server)) as client:
        report = client.upsert(rows)
        letters = client.dead_letters(rows, report)
    reasons = {i: (f.error_type, f.error) for f in report.failures for i in f.ids}
    assert set(reasons) == {"neither", "not-text", "too-long", "neither-after"}
    at = {i: p for f in report.failures for i, p in zip(f.ids, f.positions, strict=True)}
    assert at == {"neither": 3, "not-text": 5, "too-long": 6, "neither-after": 7}
    assert {d["id"]: d["text"] for d in letters if "text" in d} == {"not-text": 42, "too-long": too_long(7)}
    assert report.embedded == 2 and report.embed_requests >= 2  # the refused text was isolated
    assert f"2 embedded in {report.embed_requests} requests" in report.summary()
    assert reasons["neither"] == ("Invalid", "no text in column 'text' and no vector")
    assert reasons["not-text"] == ("InvalidInput", "text not embedded: column 'text' holds int, not a string")
    assert reasons["too-long"][0] == "Rejected" and "maximum context length" in reasons["too-long"][1]
    arrived = pinecone.arrived()
    assert arrived.ids() == {"text-only", "vector-only", "both", "empty-vector"}  # too-long: not sparse-only
    np.testing.assert_array_equal(arrived.vector("vector-only").values, own)
    np.testing.assert_array_equal(arrived.vector("both").values, own + 1)
    for row_id, text in (
        ("text-only", "a text to embed"),
        ("empty-vector", "an empty vector counts as none"),
    ):
        np.testing.assert_array_equal(
            arrived.vector(row_id).values, expected_vectors([text], model=SMALL_MODEL)[0]
        )
    assert embeddings_server.stats.inputs >= 3 and "never sent" not in str(embeddings_server.stats.log)
    assert rows[0] == {
        "id": "text-only",
        "text": "a text to embed",
    }  # the caller's dicts are left as they were


def test_embedding_overlaps_upserting_and_reads_ahead_only_so_far(pinecone: ServerHandle) -> None:
    n = 10 * PIECE_ROWS
    texts = [words(i, 4) for i in range(n)]
    table = pa.table({"id": [f"r{i}" for i in range(n)], "text": texts})
    with EmbeddingsServer(delay_s=0.002) as embedder:
        started = time.monotonic()  # the Pinecone server's clock starts at reset, an instant later
        pinecone.reset()
        pinecone.script(delay_s=0.05)  # a database slower than the model: embedding must wait for it
        options = embed_options(embedder, embed_batch_size=16, embed_max_concurrency=2)
        with connect(pinecone.uri, batch_size=500, max_concurrency=1, **options) as client:
            report = client.upsert(table)
            assert client.embedding is not None
            piece = client.embedding.piece_rows
        embedded_at = [(t, count) for t, count, status in embedder.stats.log if status == 200]
    assert report.written == n
    upserts = pinecone.arrived().accepted
    assert piece % 500 == 0 and {r.vector_count for r in upserts[:-1]} == {500}  # whole requests per piece
    first_upsert = started + upserts[0].started_s
    assert first_upsert < embedded_at[-1][0] - 0.2  # rows went in while later texts were still being embedded
    window = 4 * 2 * 16  # the embedding client's requests in flight or waiting to be handed over
    bound = 2 * piece + window  # the piece being written, the next one, the requests' window
    upserted = 0
    for request in upserts:
        at = started + request.started_s
        embedded = sum(count for t, count in embedded_at if t <= at)
        assert embedded - upserted <= bound, (embedded, upserted)
        upserted += request.vector_count
    stored = pinecone.arrived()
    np.testing.assert_array_equal(
        np.stack([stored.vector(f"r{i}").values for i in range(0, n, 101)]),
        expected_vectors(texts[::101], model=SMALL_MODEL),
    )


def test_a_bad_embedding_key_stops_the_write_with_no_key_in_its_text(pinecone: ServerHandle) -> None:
    key = "sk-proj-wrong-embedding-key-987654321"
    with EmbeddingsServer(echo_key=True) as embedder:
        options = embed_options(embedder, embed_api_key=key)
        with connect(pinecone.uri, **options) as client:
            shown = [repr(client.options), str(client.options), repr(client.embedding)]
            with pytest.raises(AuthError) as info:
                client.upsert(pa.table({"id": ["a", "b"], "text": ["one", "two"]}))
    assert "Incorrect API key provided: ***" in str(info.value)
    assert all(key not in text for text in [str(info.value), repr(info.value), *shown])
    assert "embed_api_key=***" in shown[0]
    assert pinecone.arrived().requests == []


def test_on_error_fail_raises_with_the_refused_rows_after_writing_the_rest(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    table = pa.table({"id": ["a", "b", "c"], "text": ["fine", too_long(1), "also fine"]})
    with (
        connect(pinecone.uri, **embed_options(embeddings_server)) as client,
        pytest.raises(WriteFailed) as info,
    ):
        client.upsert(table)
    assert info.value.report.failed_ids == ["b"] and info.value.report.written == 2
    assert pinecone.arrived().ids() == {"a", "c"}


def test_the_key_can_come_from_an_environment_variable_read_at_connect(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = embed_options(embeddings_server, embed_api_key=None, embed_api_key_env="TEST_EMBED_KEY")
    with pytest.raises(ConfigError, match="option embed_api_key_env: environment variable 'TEST_EMBED_KEY'"):
        connect(pinecone.uri, **options)
    monkeypatch.setenv("TEST_EMBED_KEY", DEFAULT_KEY)
    with connect(pinecone.uri, **options) as client:
        assert client.upsert([{"id": "x", "text": "hello"}]).written == 1


def test_embed_dimensions_is_the_writes_dimension(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    options = embed_options(embeddings_server, embed_model=DEFAULT_MODEL, embed_dimensions=24)
    with connect(pinecone.uri, **options) as client:
        assert client.options.dimension == 24
        client.upsert([{"id": "x", "text": "hello"}])
    np.testing.assert_array_equal(pinecone.arrived().vector("x").values, expected_vectors(["hello"], 24)[0])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"text_column": "text"}, "option text_column needs option embed_url"),
        ({"embed_batch_size": 10}, "option embed_batch_size needs option embed_url"),
        # the driver's probe sets it; given alone, it was an IndexError naming no option
        ({"embed_model_answered": "m"}, "option embed_model_answered needs option embed_url"),
        (
            {"embed_url": "http://127.0.0.1:9", "text_column": "t"},
            "option embed_url needs option embed_model",
        ),
        (
            {"embed_url": "http://127.0.0.1:9", "embed_model": "m"},
            "option embed_url needs option text_column",
        ),
        (
            {"embed_url": "127.0.0.1:9", "embed_model": "m", "text_column": "t"},
            "option embed_url: '127.0.0.1:9' is not",
        ),
        (
            {"embed_url": "http://h", "embed_model": "m", "text_column": "t", "embed_batch_size": "0"},
            "option embed_batch_size: '0' is not an integer from 1 to 2048",
        ),
        (  # OpenAI's embeddings API takes at most 2,048 inputs: more was refused request after request
            {"embed_url": "http://h", "embed_model": "m", "text_column": "t", "embed_batch_size": "5000"},
            "option embed_batch_size: '5000' is not an integer from 1 to 2048",
        ),
        (
            {"embed_url": "http://h", "embed_model": "m", "text_column": "t", "embed_max_concurrency": "x"},
            "option embed_max_concurrency: 'x' is not an integer from 1 to 1024",
        ),
        (
            {"embed_url": "http://h", "embed_model": "m", "text_column": "values"},
            "option text_column: 'values' is also option vector_column",
        ),
        (
            {
                "embed_url": "http://h",
                "embed_model": "m",
                "text_column": "t",
                "embed_dimensions": 8,
                "dimension": 9,
            },
            r"options embed_dimensions \(8\) and dimension \(9\) differ",
        ),
        (
            {
                "embed_url": "http://h",
                "embed_model": "m",
                "text_column": "t",
                "embed_api_key": "sk-x",
                "embed_api_key_env": "K",
            },
            "options embed_api_key and embed_api_key_env exclude each other",
        ),
    ],
)
def test_bad_embedding_options_are_config_errors_naming_the_option(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        connect("pinecone://127.0.0.1:1", **options)
    assert "sk-x" not in str(info.value)


def test_input_without_the_text_column_or_with_numbers_in_it_is_a_config_error(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    with connect(pinecone.uri, **embed_options(embeddings_server)) as client:
        with pytest.raises(
            ConfigError, match=r"option text_column: no column 'text' in the input \(columns: id, body\)"
        ):
            client.upsert(pa.table({"id": ["a"], "body": ["hello"]}))
        with pytest.raises(
            ConfigError, match="option text_column: column 'text' has type int64; expected strings"
        ):
            client.upsert(pa.table({"id": ["a"], "text": [1]}))
    assert pinecone.arrived().requests == []


def test_columns_as_the_beam_sink_hands_them_are_embedded_piece_by_piece(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle
) -> None:
    from vectordb.connector.rows import Columns

    n = 2 * PIECE_ROWS + 300  # three pieces
    own = np.random.default_rng(5).standard_normal((n, 64)).astype(np.float32)
    has_own = np.arange(n) % 5 == 0
    texts = [words(i, 5) for i in range(n)]
    refused = {7, PIECE_ROWS + 2, n - 1}  # rows without a vector of their own
    for i in refused:
        texts[i] = too_long(i)
    metadata: list[dict[str, Any] | None] = [{"text": t, "n": i} for i, t in enumerate(texts)]
    metadata[12] = {"text": 12.5, "n": 12}  # not a string: fails alone
    lengths = np.where(has_own, 64, 0)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    cols = Columns(
        n=n,
        ids=[f"c{i}" for i in range(n)],
        flat=own[has_own].reshape(-1),
        offsets=offsets,
        null_vector=~has_own,
        sparse=None,
        metadata=metadata,
        namespaces=None,
    )
    with connect(pinecone.uri, on_error="report", **embed_options(embeddings_server)) as client:
        report = client.upsert(cols)
    failed = {i: f.error_type for f in report.failures for i in f.ids}
    assert failed == {f"c{i}": "Rejected" for i in refused} | {"c12": "InvalidInput"}
    assert all(i == f"c{p}" for f in report.failures for i, p in zip(f.ids, f.positions, strict=True))
    arrived = pinecone.arrived()
    assert arrived.ids() == {f"c{i}" for i in range(n)} - {f"c{i}" for i in refused | {12}}
    embedded = [i for i in range(n) if not has_own[i] and i not in refused and i != 12]
    expected = expected_vectors([texts[i] for i in embedded], model=SMALL_MODEL)
    for k, i in enumerate(embedded):
        np.testing.assert_array_equal(arrived.vector(f"c{i}").values, expected[k])
    for i in np.flatnonzero(has_own).tolist():
        np.testing.assert_array_equal(arrived.vector(f"c{i}").values, own[i])  # kept, never embedded
        assert arrived.vector(f"c{i}").metadata == {"text": texts[i], "n": i}


def test_a_write_stopped_by_the_database_stops_its_embedding_stream_even_while_its_error_is_held(
    embeddings_server: EmbeddingsServer,
) -> None:
    """The error a caller keeps (a notebook's last exception, a Beam bundle's failed future) holds the
    write's frames; the embedding stream must not live on with them, or the next write (a bundle's
    retry) finds it still open."""
    import threading

    import pinecone_upsert_pb2 as pb

    from vectordb.connector.engine import Engine
    from vectordb.connector.transports.base import WireReply, WireRequest
    from vectordb.connector.transports.mock import MockTransport

    calls = []

    def revoked_once(request: WireRequest) -> WireReply:
        calls.append(request)
        if len(calls) == 1:
            raise AuthError("401 key revoked")
        count = len(pb.UpsertRequest.FromString(request.body).vectors)
        return WireReply(pb.UpsertResponse(upserted_count=count).SerializeToString())

    client = connect(
        "pinecone+grpc://127.0.0.1:1", verify=False, batch_size=10, **embed_options(embeddings_server)
    )
    client._engine = Engine(client.backend, MockTransport(revoked_once), client.options)
    rows = [{"id": f"r{i}", "text": words(i)} for i in range(3000)]
    with client:
        with pytest.raises(AuthError) as held:
            client.write(rows)
        assert held.value.report is not None
        feeders = [t for t in threading.enumerate() if t.name == "vectordb-embed-feed"]
        assert not feeders
        report = client.write(rows[:50])  # the bundle's retry
        assert report.ok and report.written == report.embedded == 50
