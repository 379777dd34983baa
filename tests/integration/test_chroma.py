"""The Chroma backend against a real ``chroma run`` server: the contract suite, then what is Chroma's own.

Rows are read back with chromadb's own ``HttpClient``, by id (ANN search on random vectors
need not return a stored vector itself). Chroma is slow to ingest here: a few dozen rows each.
"""

from __future__ import annotations

import datetime
import decimal
import http.server
import threading
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pytest

from tests.contract.suite import BackendContract, StoredRow, Target, make_table
from vectordb.connector import ConfigError, NotFound, connect
from vectordb.connector.report import WriteReport
from vectordb.connector.transports.base import forget_shared

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer


DIM = 8
STORABLE = (
    "Chroma stores str, int, float, bool, or a non-empty list of strings, of bools or of numbers "
    "(dates, times, decimals and UUIDs as their text)"
)


def read_all(client: Any, name: str) -> dict[str, StoredRow]:
    got = client.get_collection(name).get(include=["embeddings", "metadatas"])
    return {
        row_id: StoredRow(np.asarray(vector, dtype=np.float32), dict(metadata or {}))
        for row_id, vector, metadata in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True)
    }


def write(uri: str, data: Any, **options: Any) -> WriteReport:
    with connect(uri, **options) as client:
        return client.write(data)


def rows(n: int, *, prefix: str = "g", seed: int = 0, **metadata: Any) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [
        {"id": f"{prefix}{i}", "values": rng.standard_normal(DIM, dtype=np.float32), "rank": i, **metadata}
        for i in range(n)
    ]


def reasons_by_id(report: WriteReport) -> dict[str, str]:
    return {row_id: f"{f.error_type}: {f.error}" for f in report.failures for row_id in f.ids}


class TestChromaContract(BackendContract):
    """The shared suite, once with base64 vectors (the server's preferred form) and once with JSON arrays."""

    dim = DIM
    deletes_by_namespace = False  # a Chroma id is the collection's whatever its namespace (a metadata key)

    @pytest.fixture(params=["base64", "json"])
    def target(
        self,
        request: pytest.FixtureRequest,
        chroma_server: ChromaServer,
        chroma_client: Any,
        chroma_collection: str,
    ) -> Target:
        chroma_client.create_collection(chroma_collection)
        return Target(
            uri=chroma_server.uri(chroma_collection),
            read_back=lambda: read_all(chroma_client, chroma_collection),
            options={"vector_encoding": request.param},
        )


def test_create_true_makes_the_collection_with_the_metric(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    report = write(
        chroma_server.uri(chroma_collection), make_table(12, DIM, seed=7), create=True, metric="dotproduct"
    )
    assert report.ok and report.written == 12, report
    collection = chroma_client.get_collection(chroma_collection)
    assert collection.count() == 12
    assert collection.configuration_json["hnsw"]["space"] == "ip"


def test_missing_collection_without_create_is_a_config_error(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    with pytest.raises(ConfigError, match=rf"collection '{chroma_collection}'.*set create=true"):
        write(chroma_server.uri(chroma_collection), make_table(3, DIM, seed=8))
    assert chroma_collection not in [c.name for c in chroma_client.list_collections()]


def test_dimension_of_the_collection_is_checked_before_sending(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    chroma_client.create_collection(chroma_collection).upsert(ids=["four"], embeddings=[[0.25] * 4])
    report = write(chroma_server.uri(chroma_collection), make_table(3, DIM, seed=9))  # rows of another length
    assert (report.written, report.failed, report.requests) == (0, 3, 0)
    assert {f.error for f in report.failures} == {"vector has 8 dimensions; expected 4"}
    with pytest.raises(ConfigError, match="holds 4-dimensional vectors; this write has 8"):
        write(chroma_server.uri(chroma_collection), make_table(3, DIM, seed=9), dimension=DIM)  # stated
    assert chroma_client.get_collection(chroma_collection).count() == 1


def test_metadata_chroma_cannot_store_fails_alone(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    chroma_client.create_collection(chroma_collection)
    data = rows(6, tags=["a", "b"], score=0.5)
    bad = {
        "nested": {"meta": {"a": 1}},
        "empty_list": {"tags": []},
        "mixed_list": {"tags": ["a", 1]},
        "mixed_numbers": {"xs": [1, 2.5]},  # stored as [1.0, 2.5]: the integer changed
        "nan": {"score": float("nan")},
        "huge_int": {"big": 2**70},
        "hash_key": {"#k": 1},
        # a non-string chroma:document makes the local server's compactor panic: it must never be sent
        "reserved": {"chroma:document": 5},
    }
    data += [{"id": row_id, "values": np.ones(DIM, dtype=np.float32), **md} for row_id, md in bad.items()]
    report = write(chroma_server.uri(chroma_collection), data)
    assert report.written == 6 and report.failed == len(bad), report
    why = reasons_by_id(report)
    assert set(why) == set(bad)
    assert all(reason.startswith("Invalid: ") for reason in why.values())
    assert "'meta' is a dict" in why["nested"]
    assert "empty list" in why["empty_list"]
    assert "mixing integers and strings" in why["mixed_list"]
    assert "mixing floats and integers" in why["mixed_numbers"]
    assert "NaN" in why["nan"]
    assert "exceeds 64-bit range" in why["huge_int"]  # refused by the shared row check, before chroma's own
    assert "'#k' starts with '#'" in why["hash_key"]
    assert "'chroma:document' starts with 'chroma:'" in why["reserved"]
    stored = read_all(chroma_client, chroma_collection)
    assert set(stored) == {f"g{i}" for i in range(6)}
    assert stored["g2"].metadata == {"rank": 2, "tags": ["a", "b"], "score": 0.5}
    assert write(
        chroma_server.uri(chroma_collection), rows(2, prefix="after")
    ).ok  # the server still takes writes


def test_dates_times_decimals_and_uuids_are_stored_as_text(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    """As the other databases store them (they failed every row: a table with a timestamp column could
    not be written to Chroma at all)."""
    chroma_client.create_collection(chroma_collection)
    table = pa.table(
        {
            "id": ["dated"],
            "values": [[0.5] * DIM],
            "ts": pa.array([datetime.datetime(2024, 5, 6, 7, 8, 9)], pa.timestamp("us")),
            "tstz": pa.array(
                [datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)], pa.timestamp("us", "UTC")
            ),
            "day": pa.array([datetime.date(2024, 5, 6)], pa.date32()),
            "tod": pa.array([datetime.time(7, 8, 9)], pa.time64("us")),
            "dec": pa.array([decimal.Decimal("10.25")], pa.decimal128(10, 2)),
            "took": pa.array([datetime.timedelta(seconds=90)], pa.duration("s")),
        }
    )
    report = write(chroma_server.uri(chroma_collection), table)
    assert report.ok and report.written == 1, report
    # only these keys: the local server shows list values of a dropped collection on new rows (its own
    # client's rows too), so a key stored by an earlier test may appear beside them
    stored = read_all(chroma_client, chroma_collection)["dated"].metadata
    assert {key: stored.get(key) for key in table.column_names[2:]} == {
        "ts": "2024-05-06T07:08:09",
        "tstz": "2024-05-06T07:08:09+00:00",
        "day": "2024-05-06",
        "tod": "07:08:09",
        "dec": "10.25",
        "took": "PT1M30S",
    }
    row = {"id": "u", "values": np.ones(DIM, np.float32), "ref": uuid.UUID(int=7)}
    assert write(chroma_server.uri(chroma_collection), [row]).ok
    assert read_all(chroma_client, chroma_collection)["u"].metadata.get("ref") == str(uuid.UUID(int=7))


@pytest.mark.parametrize("encoding", ["base64", "json"])
def test_a_batch_of_only_refused_rows_writes_nothing(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str, encoding: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    data = rows(3, nested={"a": 1})
    report = write(chroma_server.uri(chroma_collection), data, vector_encoding=encoding)
    assert report.written == 0 and report.failed == 3, report
    assert set(reasons_by_id(report).values()) == {"Invalid: metadata 'nested' is a dict; " + STORABLE}
    assert chroma_client.get_collection(chroma_collection).count() == 0


def test_rows_the_server_rejects_are_reported_with_its_reason(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    chroma_client.create_collection(chroma_collection)
    with connect(chroma_server.uri(chroma_collection)) as client:
        # As a Spark driver does: checked while the collection is empty, so there is no dimension to compare.
        client.backend.check_target(client.engine.transport, None)
        # Then another writer fixes the collection's dimension at 4 before this client's 8-d rows arrive.
        chroma_client.get_collection(chroma_collection).upsert(ids=["other"], embeddings=[[0.5] * 4])
        report = client.write(rows(5))
    assert report.written == 0 and report.failed == 5, report
    why = reasons_by_id(report)
    for i in range(5):
        assert why[f"g{i}"].startswith("Rejected: ")
        assert "expecting embedding with dimension of 4, got 8" in why[f"g{i}"]
    assert report.requests > 1  # the engine bisected the rejected request before blaming every row
    assert set(read_all(chroma_client, chroma_collection)) == {"other"}


def test_namespace_is_stored_under_namespace_key(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    chroma_client.create_collection(chroma_collection)
    data = rows(4)
    data[3]["part"] = "elsewhere"
    report = write(chroma_server.uri(chroma_collection), data, namespace="docs", namespace_key="part")
    assert report.written == 3
    assert "metadata 'part' is 'elsewhere' but the row's namespace is 'docs'" in reasons_by_id(report)["g3"]
    per_row = [{**row, "ns": "a" if i % 2 else "b"} for i, row in enumerate(rows(4, prefix="p"))]
    assert write(chroma_server.uri(chroma_collection), per_row, namespace_column="ns").ok
    stored = read_all(chroma_client, chroma_collection)
    assert {k: v.metadata.get("part") for k, v in stored.items() if k.startswith("g")} == dict.fromkeys(
        ["g0", "g1", "g2"], "docs"
    )
    assert [stored[f"p{i}"].metadata.get("namespace") for i in range(4)] == ["b", "a", "b", "a"]
    where = chroma_client.get_collection(chroma_collection).get(where={"namespace": "a"})
    assert sorted(where["ids"]) == ["p1", "p3"]


def test_document_column_becomes_the_document(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    chroma_client.create_collection(chroma_collection)
    data = [{**row, "text": f"text {i}"} for i, row in enumerate(rows(3))]
    data[2]["text"] = 42
    report = write(chroma_server.uri(chroma_collection), data, document_column="text")
    assert report.written == 2
    assert "document column 'text' holds a int" in reasons_by_id(report)["g2"]
    got = chroma_client.get_collection(chroma_collection).get(
        ids=["g0", "g1"], include=["documents", "metadatas"]
    )
    assert dict(zip(got["ids"], got["documents"], strict=True)) == {"g0": "text 0", "g1": "text 1"}
    assert all("text" not in m for m in got["metadatas"])


def test_batch_size_above_the_servers_maximum_is_a_config_error(
    chroma_server: ChromaServer,
    chroma_client: Any,
    chroma_collection: str,
) -> None:
    chroma_client.create_collection(chroma_collection)
    server_max = chroma_client.get_max_batch_size()
    assert (
        server_max == 5461
    )  # the local server's pre-flight figure, which the backend declares as its ceiling
    with pytest.raises(ConfigError, match=f"option batch_size: chroma takes at most {server_max} rows"):
        write(chroma_server.uri(chroma_collection), rows(2), batch_size=server_max + 1)


# --------------------------------------------------------------------------------------------------
# clearing (Client.clear, Spark's overwrite): rows go, the collection stays


def test_clear_keeps_the_collection_and_the_same_client_writes_again(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    uri = chroma_server.uri(chroma_collection)
    assert write(uri, make_table(6, DIM, seed=20), create=True, metric="dotproduct").ok
    before = chroma_client.get_collection(chroma_collection)
    with connect(uri) as client:
        said = client.clear()
        assert said == f"every row of chroma collection '{chroma_collection}': 6 rows deleted"
        assert client.write(rows(2, prefix="again")).ok  # the cached collection id is still the collection's
    report = write(uri, [{"id": "x", "values": [0.5] * 4}])  # the emptied collection kept its dimension
    assert report.failed_ids == ["x"] and report.failures[0].error == "vector has 4 dimensions; expected 8"
    after = chroma_client.get_collection(chroma_collection)
    assert after.id == before.id
    assert after.configuration_json["hnsw"]["space"] == "ip"
    assert sorted(read_all(chroma_client, chroma_collection)) == ["again0", "again1"]


def test_clear_of_an_empty_collection_and_clearing_twice_are_fine(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    with connect(uri) as client:
        assert client.clear().endswith(": 0 rows deleted")
        assert client.clear("a").endswith(": 0 rows deleted")
    assert write(uri, rows(3)).ok
    with connect(uri) as client:
        assert client.clear().endswith(": 3 rows deleted")
        assert client.clear().endswith(": 0 rows deleted")
    assert chroma_client.get_collection(chroma_collection).count() == 0


def test_clear_pages_through_every_row_with_or_without_metadata(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    collection = chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    assert write(uri, rows(13, prefix="a"), namespace="a").ok
    assert write(uri, rows(3, prefix="b"), namespace="b").ok
    collection.upsert(ids=[f"bare{i}" for i in range(9)], embeddings=[[0.5] * DIM] * 9)  # no metadata at all
    # Given the collection id and encoding, the backend reads no pre-flight: its page is batch_size rows.
    pinned = {"collection_id": str(collection.id), "vector_encoding": "json", "batch_size": 4}
    with connect(uri, **pinned) as client:
        assert client.clear("a").endswith(": 13 rows deleted")  # pages of 4, 4, 4, 1
    assert sorted(read_all(chroma_client, chroma_collection)) == sorted(
        [f"b{i}" for i in range(3)] + [f"bare{i}" for i in range(9)]
    )
    with connect(uri, **pinned) as client:
        assert client.clear().endswith(": 12 rows deleted")  # every namespace, and rows with none
    assert collection.count() == 0


def test_clear_of_the_default_namespace_also_takes_rows_written_without_one(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    """README: "" is the default namespace, and PostgreSQL's clear("") also takes its rows with no
    namespace; Chroma's took only the rows whose namespace_key is "", leaving the others."""
    collection = chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    assert write(uri, rows(5, prefix="e"), namespace="").ok
    assert write(uri, rows(6, prefix="m")).ok  # metadata, but no namespace_key
    assert write(uri, rows(3, prefix="b"), namespace="b").ok
    collection.upsert(ids=[f"bare{i}" for i in range(9)], embeddings=[[0.5] * DIM] * 9)  # no metadata at all
    pinned = {"collection_id": str(collection.id), "vector_encoding": "json", "batch_size": 4}
    with connect(uri, **pinned) as client:  # pages of 4: the listing and the deletes take several
        said = client.clear("")
    assert said.endswith(": 20 rows deleted"), said
    assert sorted(read_all(chroma_client, chroma_collection)) == ["b0", "b1", "b2"]


def test_clear_of_a_namespace_uses_namespace_key(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    uri = chroma_server.uri(chroma_collection)
    assert write(uri, rows(3, prefix="p"), namespace="a", namespace_key="part").ok
    assert write(uri, rows(2, prefix="n"), namespace="a").ok  # "a" under the default key: another field
    with connect(uri, namespace_key="part") as client:
        said = client.clear("a")
    assert (
        said == f"namespace 'a' (metadata 'part') of chroma collection '{chroma_collection}': 3 rows deleted"
    )
    assert sorted(read_all(chroma_client, chroma_collection)) == ["n0", "n1"]


def test_clear_of_a_missing_collection_is_a_config_error(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    with (
        connect(chroma_server.uri(chroma_collection)) as client,
        pytest.raises(ConfigError, match=rf"collection '{chroma_collection}'.*does not exist"),
    ):
        client.clear()
    assert chroma_collection not in [c.name for c in chroma_client.list_collections()]


def test_clear_of_a_collection_dropped_since_the_lookup_names_it(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    chroma_client.create_collection(chroma_collection)
    with connect(chroma_server.uri(chroma_collection)) as client:
        client.backend.check_target(client.engine.transport, None)
        chroma_client.delete_collection(chroma_collection)
        with pytest.raises(
            NotFound, match=rf"cannot clear every row of chroma collection '{chroma_collection}'"
        ):
            client.clear()


# --------------------------------------------------------------------------------------------------
# credentials: the local server has no authentication, so a recording HTTP server checks the headers


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]]
    bodies: list[bytes]

    def _answer(self, body: dict[str, Any]) -> None:
        self.seen.append((f"{self.command} {self.path}", {k.lower(): v for k, v in self.headers.items()}))
        length = int(self.headers.get("content-length") or 0)
        self.bodies.append(self.rfile.read(length))
        payload = orjson.dumps(body)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        if self.path.endswith("/pre-flight-checks"):
            self._answer({"max_batch_size": 1000, "supports_base64_encoding": True})
        else:
            self._answer(
                {"id": "4c1b7f0e-0000-4000-8000-000000000001", "name": "recorded", "dimension": None}
            )

    def do_POST(self) -> None:
        self._answer({})

    def log_message(self, *args: Any) -> None:
        """Quiet: the test reads ``seen`` instead."""


Recorder = tuple[str, list[tuple[str, dict[str, str]]], list[bytes]]  # uri, (request, headers), bodies


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    seen: list[tuple[str, dict[str, str]]] = []
    bodies: list[bytes] = []
    handler = type("Handler", (_Recorder,), {"seen": seen, "bodies": bodies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"chroma://127.0.0.1:{server.server_address[1]}/recorded", seen, bodies
    forget_shared()  # the connector's pooled connection to this server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.mark.parametrize(
    ("auth_header", "header", "value"),
    [("x-chroma-token", "x-chroma-token", "s3cret"), ("authorization", "authorization", "Bearer s3cret")],
)
def test_api_key_goes_in_the_chosen_header(
    recorder: Recorder, auth_header: str, header: str, value: str
) -> None:
    uri, seen, _ = recorder
    report = write(uri, rows(2), api_key="s3cret", auth_header=auth_header, tenant="t01", database="d01")
    assert report.ok, report
    assert [request for request, _ in seen] == [
        "GET /api/v2/pre-flight-checks",
        "GET /api/v2/tenants/t01/databases/d01/collections/recorded",
        "POST /api/v2/tenants/t01/databases/d01/collections/4c1b7f0e-0000-4000-8000-000000000001/upsert",
    ]
    assert all(headers.get(header) == value for _, headers in seen)


def test_resolved_options_let_a_task_ask_the_server_nothing(recorder: Recorder) -> None:
    uri, seen, _ = recorder
    with connect(uri) as driver:  # a Spark driver checks the target once...
        driver.backend.check_target(driver.engine.transport, None)
        pinned = driver.backend.resolved_options()
    assert pinned == {
        "collection_id": "4c1b7f0e-0000-4000-8000-000000000001",
        "vector_encoding": "base64",
        "verify": False,
    }
    seen.clear()
    assert write(uri, rows(2), **pinned).ok  # ...and a task given its answers only upserts
    assert [request for request, _ in seen] == [
        "POST /api/v2/tenants/default_tenant/databases/default_database/collections/"
        "4c1b7f0e-0000-4000-8000-000000000001/upsert"
    ]


def test_clear_sends_what_chromadbs_own_client_sends(recorder: Recorder) -> None:
    """The clear requests' paths and bodies, with chromadb's ``FastAPI._delete`` / ``_get`` as oracle."""
    from uuid import UUID

    from chromadb.api.fastapi import FastAPI

    uri, seen, bodies = recorder
    collection_id = "4c1b7f0e-0000-4000-8000-000000000001"
    with connect(
        uri, collection_id=collection_id, vector_encoding="json", verify=False, batch_size=50
    ) as client:
        client.clear("a")  # the recorder deletes nothing, so each clear is one request
        client.clear()

    class Official:
        def __init__(self) -> None:
            self.calls: list[tuple[str, Any]] = []

        def _make_request(self, method: str, path: str, json: Any = None, **_: Any) -> Any:
            self.calls.append((f"{method.upper()} /api/v2{path}", json))
            return {"ids": []}

    official, cid = Official(), UUID(collection_id)  # stands in for the FastAPI instance: it only sends
    FastAPI._delete(official, cid, where={"namespace": {"$eq": "a"}}, limit=50)  # type: ignore[arg-type]
    FastAPI._get(official, cid, limit=50, include=[])  # type: ignore[arg-type]
    expected = [
        (request, {k: v for k, v in body.items() if v is not None}) for request, body in official.calls
    ]
    assert [
        (request, orjson.loads(body)) for (request, _), body in zip(seen, bodies, strict=True)
    ] == expected


def test_create_in_a_missing_database_is_a_config_error(
    chroma_server: ChromaServer, chroma_collection: str
) -> None:
    with pytest.raises(
        ConfigError, match=r"cannot create chroma collection .*Database \[nodb\] does not exist"
    ):
        write(chroma_server.uri(chroma_collection), rows(2), create=True, database="nodb")


@pytest.mark.parametrize(
    ("uri", "options", "message"),
    [
        ("chroma://127.0.0.1:8000", {}, "chroma needs a collection"),
        ("chroma://127.0.0.1:8000/ab", {}, "'ab' is not a chroma collection name"),
        ("chroma://127.0.0.1:8000/a..b", {}, "is not a chroma collection name"),
        (
            "chroma://127.0.0.1:8000/docs",
            {"collection": "other"},
            "disagrees with the URI's collection 'docs'",
        ),
        ("chroma+grpc://127.0.0.1:8000/docs", {}, "chroma has no transport 'grpc'"),
        ("chroma+https://127.0.0.1/docs", {"tls": False}, "contradicts the scheme chroma\\+https"),
        ("chroma://127.0.0.1:8000/docs", {"namespace_key": "#ns"}, "option namespace_key: .* reserves"),
        ("chroma://127.0.0.1:8000/docs", {"sparse_column": "sparse"}, "dense vectors only"),
        ("chroma://127.0.0.1:8000/docs", {"vector_encoding": "msgpack"}, "option vector_encoding"),
    ],
)
def test_bad_options_fail_before_anything_is_sent(uri: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        connect(uri, **options)


def test_refuse_splits_a_batch_into_storable_rows_and_reasons() -> None:
    from vectordb.connector.rows import RowBatch

    with connect("chroma://127.0.0.1:8000/docs", namespace="n") as client:
        backend = client.backend
    vectors = np.arange(4 * DIM, dtype=np.float32).reshape(4, DIM)
    metadata = [{"a": 1}, {"a": [1, "x"]}, {"namespace": "m"}, {"a": True}]
    batch = RowBatch(ids=["k0", "k1", "k2", "k3"], vectors=vectors, metadata=metadata, namespace="n")
    kept, failures = backend.refuse(batch)
    assert kept is not None and kept.ids == ["k0", "k3"] and kept.namespace == "n"
    np.testing.assert_array_equal(kept.vectors, vectors[[0, 3]])
    assert [(f.ids, f.error_type) for f in failures] == [(("k1",), "Invalid"), (("k2",), "Invalid")]
    assert backend.refuse(kept) == (kept, [])
