"""Weaviate's named vectors and multi-vectors by hand against weaviate-client's generated classes: one
``BatchObject.vectors`` entry per name, dense names first; a multi-vector's bytes are its vectors' length as
a little-endian uint16 and then the floats of its block of ``MultiVectors.values`` (weaviate-client's own
``_Pack.multi``, and the server's ``byteops.Fp32SliceOfSlicesFromBytes``); rows sliced or taken out of a batch
encode the same as rows made alone; sizes count every name."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from google.protobuf import struct_pb2

from vectordb.connector.backends.weaviate import WeaviateBackend, WeaviateOptions, encode_batch
from vectordb.connector.client import resolve_options
from vectordb.connector.errors import ConfigError
from vectordb.connector.ids import as_uuid
from vectordb.connector.rows import MultiVectors, RowBatch

weaviate_proto = pytest.importorskip("weaviate.proto.v1")
batch_pb2, base_pb2 = weaviate_proto.batch_pb2, weaviate_proto.base_pb2
shared = pytest.importorskip("weaviate.collections.grpc.shared")

URI = "weaviate://127.0.0.1:8080/Docs"


def _multi(counts: list[int], dim: int, seed: int) -> MultiVectors:
    values = np.random.default_rng(seed).standard_normal((sum(counts), dim), dtype=np.float32)
    return MultiVectors(values, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


def _batch(namespace: str | None = None) -> RowBatch:
    rng = np.random.default_rng(7)
    n = 5
    return RowBatch(
        ids=[f"doc-{i}" for i in range(n)],
        vectors=None,
        metadata=[{"rank": i} if i % 2 else {} for i in range(n)],
        namespace=namespace,
        named_vectors={
            "title": rng.standard_normal((n, 4), dtype=np.float32),
            "body": rng.standard_normal((n, 3), dtype=np.float32),
        },
        multi_vectors={"colbert": _multi([1, 3, 2, 5, 1], 2, seed=8), "pages": _multi([2, 1, 1, 1, 4], 6, 9)},
    )


def _official(batch: RowBatch, consistency: int | None = None) -> bytes:
    """What weaviate-client would send for these rows: its ``_Pack`` of each vector from Python lists."""
    objects = []
    for i, raw in enumerate(batch.ids):
        vectors = [
            base_pb2.Vectors(
                name=name,
                vector_bytes=shared._Pack.single(m[i].tolist()),
                type=base_pb2.Vectors.VECTOR_TYPE_SINGLE_FP32,
            )
            for name, m in batch.named_vectors.items()
        ]
        vectors += [
            base_pb2.Vectors(
                name=name,
                vector_bytes=shared._Pack.multi(m.row(i).tolist()),
                type=base_pb2.Vectors.VECTOR_TYPE_MULTI_FP32,
            )
            for name, m in batch.multi_vectors.items()
        ]
        meta = {**(batch.metadata[i] if batch.metadata else {}), "original_id": raw}
        scalars = struct_pb2.Struct()
        scalars.update(meta)
        props = batch_pb2.BatchObject.Properties(non_ref_properties=scalars)
        objects.append(
            batch_pb2.BatchObject(
                uuid=as_uuid(raw),
                properties=props,
                collection="Docs",
                tenant=batch.namespace or "",
                vectors=vectors,
            )
        )
    request = batch_pb2.BatchObjectsRequest(objects=objects, consistency_level=consistency)
    return request.SerializeToString(deterministic=True)


def _ours(batch: RowBatch, consistency: str | None = None) -> bytes:
    uuids = [as_uuid(i) for i in batch.ids]
    metadata = batch.metadata or [{}] * len(batch)
    props = [{**m, "original_id": raw} for m, raw in zip(metadata, batch.ids, strict=True)]
    return encode_batch(batch, uuids, props, collection="Docs", vector_name=None, consistency=consistency)


@pytest.mark.parametrize("namespace", [None, "tenant-1"])
def test_our_bytes_are_the_official_messages(namespace: str | None) -> None:
    batch = _batch(namespace)
    assert _ours(batch) == _official(batch)
    assert _ours(batch, "quorum") == _official(batch, consistency=2)


def test_a_multi_vector_is_its_length_as_uint16_then_the_buffers_own_floats() -> None:
    batch = _batch()
    request = batch_pb2.BatchObjectsRequest.FromString(_ours(batch))
    colbert = batch.multi_vectors["colbert"]
    for i, obj in enumerate(request.objects):
        by_name = {v.name: v for v in obj.vectors}
        assert [v.name for v in obj.vectors] == ["title", "body", "colbert", "pages"]
        sent = by_name["colbert"]
        assert sent.type == base_pb2.Vectors.VECTOR_TYPE_MULTI_FP32
        assert sent.vector_bytes[:2] == struct.pack("<H", 2)
        assert sent.vector_bytes[2:] == colbert.row(i).astype("<f4").tobytes()
        assert shared._Unpack.multi(sent.vector_bytes) == colbert.row(i).tolist()
        assert by_name["title"].vector_bytes == batch.named_vectors["title"][i].tobytes()
        assert not obj.vector_bytes and not obj.vector


def test_slices_and_selections_encode_as_the_same_rows_alone() -> None:
    """A slice keeps the buffer (offsets[0] > 0) and a selection gathers a copy: same bytes either way."""
    batch = _batch()
    part = batch.slice(2, 5)
    assert part.multi_vectors["colbert"].offsets[0] == 4
    assert _ours(part) == _official(part)
    taken = batch.take([4, 0, 3])
    assert _ours(taken) == _official(taken)
    request = batch_pb2.BatchObjectsRequest.FromString(_ours(part))
    assert [o.uuid for o in request.objects] == [as_uuid(f"doc-{i}") for i in (2, 3, 4)]


def test_a_multi_vector_of_more_than_65535_floats_cannot_be_framed() -> None:
    batch = RowBatch(
        ids=["a"],
        vectors=None,
        multi_vectors={"big": MultiVectors(np.zeros((1, 65_536), np.float32), np.array([0, 1]))},
    )
    with pytest.raises(ValueError, match="1 to 65,535 floats, not 65536"):
        _ours(batch)


def _backend(**raw: str) -> WeaviateBackend:
    options = resolve_options({"uri": URI, **raw})
    assert isinstance(options, WeaviateOptions)
    return WeaviateBackend(options)


def test_row_bytes_count_every_name_and_bound_the_encoded_rows() -> None:
    backend = _backend(vector_columns="title:t,body:b", multi_vector_columns="colbert:c,pages:p")
    batch = _batch()
    sizes = backend.row_bytes(batch)
    for i in range(len(batch)):
        alone = len(_ours(batch.slice(i, i + 1)))
        assert alone <= sizes[i] <= alone + 400, (i, alone, sizes[i])
    # every vector of every multi-vector is counted: without them each row is smaller by their floats
    alone = RowBatch(ids=batch.ids, vectors=None, metadata=batch.metadata, named_vectors=batch.named_vectors)
    floats = sum(m.counts() * m.dim * 4 for m in batch.multi_vectors.values())
    assert (sizes - backend.row_bytes(alone) >= floats).all()


def test_options_for_named_vectors() -> None:
    assert WeaviateBackend.named_vectors == WeaviateBackend.multi_vectors == "yes"
    with pytest.raises(ConfigError, match="option vector_name: names the single vector"):
        _backend(vector_columns="title:t", vector_name="body")
    with pytest.raises(
        ConfigError, match=r"option multi_vector_columns: Weaviate takes vector names .*'col-bert'"
    ):
        _backend(multi_vector_columns="col-bert:c")
    with pytest.raises(ConfigError, match=r"option vector_columns: .*'9title'"):
        _backend(vector_columns="9title:t")
    _backend(vector_columns="_title:t", multi_vector_columns="Colbert_2:c")
