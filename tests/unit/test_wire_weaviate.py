"""Weaviate's gRPC messages by hand against weaviate-client's generated classes: our ``BatchObjectsRequest``
bytes equal the official message's deterministic serialisation, vectors are the matrix's own float32
bytes, and reply errors land on the rows they name, or, naming none of ours, on no row silently."""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from typing import Any

import numpy as np
import pytest
from google.protobuf import struct_pb2

from vectordb.connector.backends.weaviate import WeaviateBackend, WeaviateOptions, encode_batch, kind_of
from vectordb.connector.ids import ORIGINAL_ID_KEY, as_uuid
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import WireReply, WireRequest

weaviate_proto = pytest.importorskip("weaviate.proto.v1")
batch_pb2, base_pb2 = weaviate_proto.batch_pb2, weaviate_proto.base_pb2

GIVEN = "5e85dbc1-191f-4ec4-9f59-dc30e8685b42"
STAMP = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)


def _batch(namespace: str | None = "tenant-1") -> RowBatch:
    matrix = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    return RowBatch(
        ids=["doc-1", GIVEN, "7", GIVEN.upper()],
        vectors=matrix,
        metadata=[
            {"title": "a", "rank": 3, "score": 0.5, "flag": True, "day": dt.date(2024, 1, 2), "at": STAMP},
            {"tags": ["x", "y"], "counts": [1, -2, 2**40], "weights": [0.25, 1.5], "checks": [True, False]},
            {"empty": [], "days": [dt.date(2024, 1, 3)], "nested": {"k": 1, "when": dt.date(2024, 1, 4)}},
            {},
        ],
        namespace=namespace,
    )


def _official_properties(props: dict[str, Any]) -> Any:
    """What weaviate-client sends for these properties (its ``__translate_properties_from_python_to_grpc``),
    with our date rule and keys in name order."""
    scalars: dict[str, Any] = {}
    kw: dict[str, list[Any]] = {
        "number_array_properties": [],
        "int_array_properties": [],
        "text_array_properties": [],
        "boolean_array_properties": [],
        "empty_list_props": [],
    }
    for key in sorted(props):
        value = props[key]
        if value == []:
            kw["empty_list_props"].append(key)
        elif isinstance(value, list) and isinstance(value[0], bool):
            kw["boolean_array_properties"].append(
                base_pb2.BooleanArrayProperties(prop_name=key, values=value)
            )
        elif isinstance(value, list) and isinstance(value[0], int):
            kw["int_array_properties"].append(base_pb2.IntArrayProperties(prop_name=key, values=value))
        elif isinstance(value, list) and isinstance(value[0], float):
            raw = struct.pack(f"<{len(value)}d", *value)
            kw["number_array_properties"].append(
                base_pb2.NumberArrayProperties(prop_name=key, values_bytes=raw)
            )
        elif isinstance(value, list) and isinstance(value[0], str):
            kw["text_array_properties"].append(base_pb2.TextArrayProperties(prop_name=key, values=value))
        elif isinstance(value, list) and isinstance(value[0], dt.date):
            days = [f"{d.isoformat()}T00:00:00Z" for d in value]
            kw["text_array_properties"].append(base_pb2.TextArrayProperties(prop_name=key, values=days))
        elif isinstance(value, dt.datetime):
            scalars[key] = value.isoformat()
        elif isinstance(value, dt.date):
            scalars[key] = f"{value.isoformat()}T00:00:00Z"
        elif isinstance(value, dict):
            scalars[key] = {
                k: f"{v.isoformat()}T00:00:00Z" if isinstance(v, dt.date) else v for k, v in value.items()
            }
        else:
            scalars[key] = value
    fields = struct_pb2.Struct()
    fields.update(scalars)
    return batch_pb2.BatchObject.Properties(non_ref_properties=fields if scalars else None, **kw)


@pytest.mark.parametrize("vector_name", [None, "body"])
@pytest.mark.parametrize("consistency", [None, "quorum"])
def test_our_bytes_are_the_official_messages(vector_name: str | None, consistency: str | None) -> None:
    batch = _batch()
    uuids = [as_uuid(i) for i in batch.ids]
    props: list[dict[str, Any]] = []
    for raw, meta in zip(batch.ids, batch.metadata or [], strict=True):
        props.append({**meta, ORIGINAL_ID_KEY: raw} if as_uuid(raw) != raw else dict(meta))
    ours = encode_batch(
        batch, uuids, props, collection="Docs", vector_name=vector_name, consistency=consistency
    )
    objects = []
    for i, uid in enumerate(uuids):
        vector = batch.vectors[i].tobytes()  # type: ignore[index]
        objects.append(
            batch_pb2.BatchObject(
                uuid=uid,
                collection="Docs",
                tenant="tenant-1",
                properties=_official_properties(props[i]) if props[i] else None,
                vector_bytes=vector if vector_name is None else None,
                vectors=[base_pb2.Vectors(name=vector_name, vector_bytes=vector, type=1)]
                if vector_name
                else None,
            )
        )
    levels = {None: None, "quorum": base_pb2.ConsistencyLevel.CONSISTENCY_LEVEL_QUORUM}
    want = batch_pb2.BatchObjectsRequest(objects=objects, consistency_level=levels[consistency])
    assert ours == want.SerializeToString(deterministic=True)
    parsed = batch_pb2.BatchObjectsRequest.FromString(ours)
    assert parsed.objects[0].uuid == str(
        uuid.uuid5(uuid.UUID("5e85dbc1-191f-4ec4-9f59-dc30e8685b42"), "doc-1")
    )
    assert parsed.objects[1].uuid == GIVEN and parsed.objects[3].uuid == GIVEN  # a UUID id as it is
    # the vector is the matrix row's own float32 bytes
    got = parsed.objects[2].vectors[0].vector_bytes if vector_name else parsed.objects[2].vector_bytes
    assert got == batch.vectors[2].tobytes()  # type: ignore[index]


def test_no_tenant_no_properties_no_vector_fields_left_empty() -> None:
    batch = RowBatch(ids=[GIVEN], vectors=np.ones((1, 2), np.float32))
    ours = encode_batch(batch, [GIVEN], [{}], collection="Docs", vector_name=None, consistency=None)
    want = batch_pb2.BatchObjectsRequest(
        objects=[batch_pb2.BatchObject(uuid=GIVEN, collection="Docs", vector_bytes=batch.vectors.tobytes())]  # type: ignore[union-attr]
    )
    assert ours == want.SerializeToString(deterministic=True)


def test_kinds_follow_the_arrow_types() -> None:
    assert [kind_of(v) for v in (True, 3, np.int64(3), 0.5, "x", dt.date(2024, 1, 1), STAMP)] == [
        "boolean",
        "int",
        "int",
        "number",
        "text",
        "date",
        "date",
    ]
    assert [kind_of(v) for v in ([1], [1, 2.5], ["a"], [True], [STAMP], [], [[1]], {"a": 1})] == [
        "int[]",
        "number[]",
        "text[]",
        "boolean[]",
        "date[]",
        None,
        None,
        None,
    ]


# -- the reply --------------------------------------------------------------------------------------


def _outcome(errors: list[tuple[int | None, str]], n: int = 4) -> Any:
    backend = WeaviateBackend(WeaviateOptions(uri="weaviate://127.0.0.1/Docs"))
    batch = RowBatch(ids=[f"r{i}" for i in range(n)], vectors=np.ones((n, 2), np.float32))
    reply = batch_pb2.BatchObjectsReply(
        took=0.01,
        errors=[
            batch_pb2.BatchObjectsReply.BatchError(error=message, **({} if i is None else {"index": i}))
            for i, message in errors
        ],
    )
    request = backend.request_for(batch)
    assert isinstance(request, WireRequest)
    return backend.outcome_of(batch, request, WireReply(body=reply.SerializeToString()))


def test_reply_errors_fail_exactly_the_rows_they_name() -> None:
    outcome = _outcome([(3, "invalid integer property 'rank'"), (1, "boom"), (3, "second reason")])
    assert outcome.written == 2
    assert {f.ids: (f.error_type, f.error) for f in outcome.failures} == {
        ("r1",): ("Rejected", "boom"),
        ("r3",): ("Rejected", "invalid integer property 'rank'; second reason"),
    }


def test_an_error_without_an_index_is_row_0_as_protobuf_reads_it() -> None:
    outcome = _outcome([(None, "no index sent")])
    assert outcome.written == 3 and [(f.ids, f.error) for f in outcome.failures] == [
        (("r0",), "no index sent")
    ]


@pytest.mark.parametrize("index", [4, 99, -1])
def test_an_error_for_an_index_outside_the_request_is_pinned_on_no_row_and_counts_none_written(
    index: int,
) -> None:
    outcome = _outcome([(1, "named"), (index, "lost")])
    assert outcome.written == 0
    named, unattributed = outcome.failures
    assert named.ids == ("r1",) and named.error == "named"
    assert unattributed.ids == ("r0", "r2", "r3") and unattributed.error_type == "Unattributed"
    assert f"index {index}: lost" in unattributed.error and "outside this request of 4" in unattributed.error


def test_options_and_uri() -> None:
    backend = WeaviateBackend(
        WeaviateOptions(uri="weaviate://wv.example/docs", grpc_host="grpc-wv.example", grpc_port=443)
    )
    assert (backend.collection, backend.port, backend.tls, backend.grpc_tls) == ("Docs", 8080, True, True)
    assert backend.describe() == "weaviate://wv.example:8080/Docs (gRPC grpc-wv.example:443)"
    from vectordb.connector import ConfigError

    for bad in ("weaviate://h/", "weaviate://h/a/b", "weaviate://h/9lives", "weaviate+rest://h/Docs"):
        with pytest.raises(ConfigError, match="option uri"):
            WeaviateBackend(WeaviateOptions(uri=bad))
    with pytest.raises(ConfigError, match="option sparse_column"):
        WeaviateBackend(WeaviateOptions(uri="weaviate://h/Docs", sparse_column="sparse"))
