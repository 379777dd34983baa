"""The gRPC size estimate of a row's metadata is never below its encoded bytes: Qdrant's payload map (integers
as int64, 13 bytes for a negative one in a list) and Pinecone's ``google.protobuf.Struct`` (every number an
8-byte double). It counted twice the JSON, which a list of small numbers exceeds by up to 4.3 times; then 13
bytes for each ``,`` ``:`` ``[`` ``{`` inside strings too, 6 times the size of a JSON document kept as a string."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from vectordb.connector import protowire as pw
from vectordb.connector.backends.qdrant import QdrantBackend, QdrantOptions, _payload_fields, encode_grpc
from vectordb.connector.backends.sizing import PROTO_VALUE_BYTES, proto_metadata_bytes
from vectordb.connector.rows import RowBatch

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from([",", ":", "[{", '"', "\\", "\x01", "é"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=40,
)
metadata = st.dictionaries(st.text(max_size=10), values, max_size=6)
# strings of JSON's marks, quotes and escapes, some long (a length of 2 or 3 bytes in each frame)
marks_text = st.text(alphabet=',:[{}]"\\ \x01é', max_size=40) | st.builds(
    lambda unit, n: unit * n, st.sampled_from([",", '\\"', "[{", '":"', "é,"]), st.integers(0, 40_000)
)
string_values = st.recursive(
    marks_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(marks_text, inner, max_size=3),
    max_leaves=12,
)
string_metadata = st.dictionaries(marks_text, string_values, max_size=4)


def _worst_case_rows() -> list[dict[str, Any]]:
    return [
        {"f": [-1] * 1000},
        {"f": [0] * 1000},
        {"f": [0.5] * 1000},
        {"f": [[-1]] * 300},
        {str(i): -1 for i in range(300)},
        {"a": {"b": {"c": {"d": [-(1 << 63), True, None, 1e300]}}}},
        {"": -1},
    ]


@settings(max_examples=200, deadline=None)
@given(md=metadata)
def test_the_estimate_covers_qdrants_payload_and_a_protobuf_struct(md: dict[str, Any]) -> None:
    estimate = proto_metadata_bytes(md)
    assert estimate >= len(_payload_fields(md))
    assert estimate >= len(pw.encode_struct(md))


@settings(max_examples=200, deadline=None)
@given(md=string_metadata)
def test_the_estimate_covers_strings_of_marks_quotes_and_escapes(md: dict[str, Any]) -> None:
    estimate = proto_metadata_bytes(md)
    assert estimate >= len(_payload_fields(md))
    assert estimate >= len(pw.encode_struct(md))


def test_a_json_document_kept_as_a_string_costs_its_json() -> None:
    """The review's row: 180 KB of JSON as one string was estimated at 1.15 MB (its marks counted as
    values) and refused under max_batch_bytes=1 MiB; its payload is 180 KB. A string costs its JSON (an
    escaped quote 2 bytes for 1: large, never small) and the framing of the few values around it. A quote
    or a backslash written escaped ends no string: the marks after it are still text."""
    document = orjson.dumps([{"x": [1, 2, 3], "y": 0}] * 9000).decode()
    commas = "," * 50_000
    for md in (
        {"doc": document},
        {"doc": document, "k": [document, {document: document}]},
        {"doc": "," * 3_000_000},  # lengths of 4 bytes
        {"doc": '"' + commas, "d": "\\" + commas, "e": '\\"' + commas, "f": "\\\\" + commas},
        {"a": "\\", "b": commas},  # a string that ends in a backslash: \\" and then its closing quote
    ):
        real = max(len(_payload_fields(md)), len(pw.encode_struct(md)))
        assert real <= proto_metadata_bytes(md) <= len(orjson.dumps(md)) + 8 * PROTO_VALUE_BYTES, list(md)


def test_the_worst_rows_seen_are_covered_and_not_by_much() -> None:
    for md in _worst_case_rows():
        qdrant, pinecone = len(_payload_fields(md)), len(pw.encode_struct(md))
        estimate = proto_metadata_bytes(md)
        assert max(qdrant, pinecone) <= estimate <= 3 * max(qdrant, pinecone) + 64, md
    empty = {"f": [{}] * 300, "g": [[]] * 300}  # counted as values: large (7 times), never small
    assert proto_metadata_bytes(empty) >= max(len(_payload_fields(empty)), len(pw.encode_struct(empty)))


def test_long_text_costs_little_more_than_its_json() -> None:
    md = {"text": "lorem ipsum dolor sit amet " * 200}
    assert proto_metadata_bytes(md) < 1.01 * len(_payload_fields(md)) + 64


def test_qdrants_grpc_row_estimate_covers_each_encoded_row() -> None:
    options = QdrantOptions(uri="qdrant+grpc://h:6334/c")
    backend = QdrantBackend(options)
    for md in _worst_case_rows():
        batch = RowBatch(ids=[7], vectors=np.ones((1, 3), np.float32), metadata=[md])
        assert int(backend.row_bytes(batch)[0]) >= len(encode_grpc(batch, "c", options)), md
