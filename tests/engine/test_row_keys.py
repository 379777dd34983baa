"""The same row twice in one write ends as its last occurrence says, where "the same row" is the
database's: one id in two namespaces of a database that keeps one row per id, a UUID's two
spellings, an integer and its text, no namespace and ``""``. Scripted servers apply each request to a
model of the database's keys; the end state must be the input applied in order."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
import pinecone_upsert_pb2 as pb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vectordb.connector import connect
from vectordb.connector.engine import Engine
from vectordb.connector.ids import as_uuid, point_id
from vectordb.connector.rows import RowRules
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

UUID = "550e8400-e29b-41d4-a716-446655440000"
QDRANT_SCHEMA = {"result": {"config": {"params": {"vectors": {"size": 2, "distance": "Cosine"}}}}}
QDRANT_OK = b'{"result":{"status":"completed"},"status":"ok"}'


class Model:
    """A database's rows by its own key: ``upsert``/``delete`` as the scripted server applies them,
    and the same two applied to the input in order for what the end state must be."""

    def __init__(self, kind: str) -> None:
        self.kind, self.rows = kind, {}

    def key(self, row_id: Any, namespace: str | None) -> Any:
        if self.kind == "chroma":  # one row per id in the collection
            return str(row_id)
        if self.kind == "qdrant":  # one point per id; the namespace is a payload value
            return point_id(row_id)
        return (namespace or "", str(row_id))  # pinecone: per namespace, ids as text

    def upsert(self, row_id: Any, namespace: str | None, value: float) -> None:
        self.rows[self.key(row_id, namespace)] = (namespace or None, value)

    def delete(self, row_id: Any, namespace: str | None) -> None:
        key = self.key(row_id, namespace)
        # Qdrant deletes a point by id in the row's namespace (a point another namespace wrote stays; ""
        # and none are the default namespace, whose points have none)
        if self.kind != "qdrant" or self.rows.get(key, (None,))[0] == (namespace or None):
            self.rows.pop(key, None)

    def applied_in_order(self, rows: list[dict[str, Any]]) -> dict[Any, Any]:
        expected = Model(self.kind)
        for row in rows:
            ns = row.get("ns")
            if row.get("op") == "delete":
                expected.delete(row["id"], ns)
            else:
                expected.upsert(row["id"], ns, row["values"][0])
        return expected.rows


def handler_for(model: Model, delay: Callable[[], float]) -> Callable[[WireRequest], WireReply]:
    lock = threading.Lock()

    def handle(request: WireRequest) -> WireReply:
        time.sleep(delay())  # requests in flight finish in any order
        if model.kind == "pinecone":
            if request.method == "/VectorService/Delete":
                deleted = pb.DeleteRequest.FromString(request.body)
                with lock:
                    for i in deleted.ids:
                        model.delete(i, deleted.namespace)
                return WireReply(pb.DeleteResponse().SerializeToString())
            upserted = pb.UpsertRequest.FromString(request.body)
            with lock:
                for vec in upserted.vectors:
                    model.upsert(vec.id, upserted.namespace, round(vec.values[0], 3))
            return WireReply(pb.UpsertResponse(upserted_count=len(upserted.vectors)).SerializeToString())
        if request.method.startswith("GET"):
            return WireReply(orjson.dumps(QDRANT_SCHEMA))
        body = orjson.loads(request.body)
        with lock:
            if model.kind == "chroma" and request.method.endswith("/delete"):
                for i in body["ids"]:
                    model.delete(i, None)
            elif model.kind == "chroma":
                metadatas = body.get("metadatas") or [None] * len(body["ids"])
                for i, md, vec in zip(body["ids"], metadatas, body["embeddings"], strict=True):
                    model.upsert(i, (md or {}).get("namespace"), round(vec[0], 3))
            elif "/points/delete" in request.method:
                if "points" in body:
                    ids, ns = body["points"], None
                else:
                    must = body["filter"]["must"]
                    ids, ns = must[0]["has_id"], "" if "is_empty" in must[1] else must[1]["match"]["value"]
                for pid in ids:
                    model.delete(pid, ns)
            else:
                batch = body["batch"]
                payloads = batch.get("payloads") or [None] * len(batch["ids"])
                for pid, payload, vec in zip(batch["ids"], payloads, batch["vectors"], strict=True):
                    model.upsert(pid, (payload or {}).get("namespace"), round(vec[0], 3))
        return WireReply(b"{}" if model.kind == "chroma" else QDRANT_OK)

    return handle


URIS = {
    "pinecone": ("pinecone+grpc://127.0.0.1:1", {"verify": False}),
    "chroma": (
        "chroma://127.0.0.1:8000/docs",
        {"collection_id": "c1", "vector_encoding": "json", "verify": False},
    ),
    "qdrant": ("qdrant://127.0.0.1:6333/docs", {}),
}


def write_through(
    kind: str, rows: list[dict[str, Any]], delay: Callable[[], float] = lambda: 0.0, **options: Any
) -> tuple[Model, Any]:
    model = Model(kind)
    uri, extra = URIS[kind]
    client = connect(uri, op_column="op", namespace_column="ns", **{**extra, **options})
    client._engine = Engine(
        client.backend, MockTransport(handler_for(model, delay)), client.options, sleep=lambda s: None
    )
    with client:
        report = client.write(rows)
    return model, report


def up(row_id: Any, value: float, ns: str | None = None) -> dict[str, Any]:
    return {"id": row_id, "values": [value, 0.5], "ns": ns}


def delete(row_id: Any, ns: str | None = None) -> dict[str, Any]:
    return {"id": row_id, "op": "delete", "ns": ns}


@pytest.mark.parametrize(
    ("kind", "rows"),
    [
        # one id in two namespaces of a collection that keeps one row per id: the later row wins
        ("chroma", [up("c", 0.1, "n1"), delete("a", "n2"), up("a", 0.2, "n1")]),
        ("chroma", [up("a", 0.1, "n1"), up("a", 0.2, "n2")]),
        # a UUID's two spellings are one point
        ("qdrant", [delete(UUID), up(UUID.upper(), 0.3)]),
        ("qdrant", [up(UUID.replace("-", ""), 0.1), delete(UUID), up(UUID, 0.2), delete(UUID.upper())]),
        # one point per id whatever the namespace (namespace_mode=payload)
        ("qdrant", [up("c", 0.1, "n1"), up("a", 0.2, "n2"), up("a", 0.3, "n1")]),
        # no namespace and "" are both the default namespace
        ("pinecone", [up("c", 0.1), delete("a", ""), up("a", 0.2)]),
        # an integer id and its text are one id on the wire
        ("pinecone", [delete("7"), up(7, 0.4)]),
        ("pinecone", [up(7, 0.4), up("7", 0.5), up("x", 0.6)]),
    ],
)
@pytest.mark.parametrize("max_concurrency", [1, 4])
def test_one_row_of_the_database_twice_in_a_write_ends_as_its_last_occurrence(
    kind: str, rows: list[dict[str, Any]], max_concurrency: int
) -> None:
    first = threading.Event()

    def delay() -> float:  # the first request slow: a later one in flight with it would land first
        return 0.0 if first.is_set() or first.set() else 0.1

    model, report = write_through(kind, rows, delay, max_concurrency=max_concurrency)
    assert report.ok, report
    assert model.rows == model.applied_in_order(rows)


def test_rows_of_one_id_in_namespaces_that_are_two_rows_still_go_out_together() -> None:
    """Pinecone's namespaces are separate: the same ids in 8 of them are not made to wait for each other."""
    peak, in_flight, lock = [0], [0], threading.Lock()
    model = Model("pinecone")
    apply = handler_for(model, lambda: 0.0)

    def counting(request: WireRequest) -> WireReply:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        try:
            return apply(request)
        finally:
            with lock:
                in_flight[0] -= 1

    client = connect("pinecone+grpc://127.0.0.1:1", verify=False, namespace_column="ns", max_concurrency=8)
    client._engine = Engine(client.backend, MockTransport(counting), client.options)
    rows = [up(f"id{i}", 0.1, f"tenant{t}") for t in range(8) for i in range(10)]
    with client:
        assert client.write(rows).written == 80
    # ids held across namespaces would send one request at a time; a busy machine may start the eighth late
    assert peak[0] >= 4, peak
    assert model.rows == model.applied_in_order(rows)


IDS = st.sampled_from(["a", "b", 7, "7", UUID, UUID.upper(), UUID.replace("-", "")])
NAMESPACES = st.sampled_from([None, "", "n1", "n2"])
ROWS = st.lists(
    st.tuples(IDS, NAMESPACES, st.booleans(), st.integers(1, 999)).map(
        lambda t: delete(t[0], t[1]) if t[2] else up(t[0], t[3] / 1000, t[1])
    ),
    min_size=1,
    max_size=24,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["pinecone", "chroma", "qdrant"]),
    rows=ROWS,
    batch_size=st.integers(1, 5),
    max_concurrency=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_any_mix_of_spellings_namespaces_and_ops_ends_as_the_input_in_order(
    kind: str, rows: list[dict[str, Any]], batch_size: int, max_concurrency: int, seed: int
) -> None:
    if kind == "chroma":  # Chroma ids are text; a namespace is a metadata value, "" one too
        rows = [{**row, "id": str(row["id"])} for row in rows]
    jitter = random.Random(seed)
    lock = threading.Lock()

    def delay() -> float:
        with lock:
            return jitter.choice([0.0, 0.0, 0.002, 0.005])

    model, report = write_through(kind, rows, delay, batch_size=batch_size, max_concurrency=max_concurrency)
    assert report.ok, report
    assert model.rows == model.applied_in_order(rows)


def test_row_keys_are_the_ids_themselves_when_nothing_maps() -> None:
    ids = ["a", "b", UUID.upper()]
    assert RowRules().row_keys(ids) is ids  # no copy on the hot path
    assert RowRules(uuid_ids=True).row_keys(ids) == [as_uuid("a"), as_uuid("b"), UUID]  # as stored
    # a key depends on its id alone: 7 is "7" in a batch of integers as in a mixed one
    assert RowRules().row_keys([1, 7]) == ["1", "7"]
    assert RowRules().row_keys([7, "7", None]) == ["7", "7", None]
    assert RowRules(namespaced=False).scope("n1") is None
    assert RowRules().scope(None) == RowRules().scope("") == ""


def test_where_text_may_be_read_as_an_integer_its_spellings_are_one_key() -> None:
    """PostgreSQL's bigint and Milvus's INT64 read "07", " 7" and "+7" as row 7: a delete of one spelling
    and an upsert of another are one row, which must go in input order, not side by side."""
    rules = RowRules(numeric_ids=True, integer_text=True)
    assert rules.row_keys(["07", " 7", "+7", "7\t", 7, "-0", "0", "٣"]) == ["7"] * 5 + ["0", "0", "3"]
    assert rules.row_keys(["x7", "1__0", "doc-1", "7a"]) == ["x7", "1__0", "doc-1", "7a"]
    ids = ["doc-1", UUID]
    assert rules.row_keys(ids) is ids  # nothing maps: no copy
    pg = RowRules(
        numeric_ids=True, integer_text=True, id_fold="any"
    )  # before the catalog is read: a uuid column reads a UUID in any case as one
    assert pg.row_keys([UUID.upper(), UUID.replace("-", ""), "00"]) == [UUID, UUID, "0"]
    assert pg.row_keys(ids) is ids
    assert RowRules(numeric_ids=True).row_keys(["07", "7"]) == ["07", "7"]  # Qdrant: text is never a number


@st.composite
def integer_spellings(draw: st.DrawFn) -> tuple[int, list[str]]:
    n = draw(st.integers(-(2**63), 2**63 - 1))
    pad = draw(st.integers(len(str(abs(n))), 25))
    space = st.sampled_from(["", " ", "\t", "  "])
    spellings = [str(n), f"{n:+d}", f"{'-' if n < 0 else ''}{abs(n):0{pad}d}"]
    spellings.append(draw(space) + draw(st.sampled_from(spellings)) + draw(space))
    return n, spellings


@given(st.lists(integer_spellings(), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_every_spelling_of_an_integer_is_its_key_whatever_the_ids_beside_it(
    numbers: list[tuple[int, list[str]]], order: random.Random
) -> None:
    ids: list[Any] = [s for n, spelt in numbers for s in [n, *spelt]]
    order.shuffle(ids)
    keys = RowRules(integer_text=True).row_keys(ids)
    assert keys == [str(int(i)) for i in ids]
