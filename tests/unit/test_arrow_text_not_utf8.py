"""Arrow text that is not valid UTF-8 (what Spark's JSON and CSV readers hand over for a Latin-1 byte)
fails its row, naming the column, in every column the Arrow reader reads as text: metadata (flat, nested,
JSON), the id, id_from, namespace, op and vector text columns. It raised ``UnicodeDecodeError`` out of
the whole write before."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle
from tests.spark.conftest import grpc_process, grpc_server
from vectordb.connector import connect
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow

__all__ = ["grpc_process", "grpc_server"]  # fixtures, used by name

VECTOR = [1.0, 2.0, 3.0, 4.0]


def raw_text(values: list[bytes | None], large: bool = False) -> pa.Array:
    """A string column holding ``values``' bytes as they are, as a producer that does not check them makes."""
    binary = pa.large_binary() if large else pa.binary()
    return pa.array(values, binary).view(pa.large_string() if large else pa.string())


def not_utf8(column: str) -> str:
    return f"column {column!r}: text is not valid UTF-8"


def reasons(prepared: Any) -> dict[str, str]:
    return {i: f.error for f in prepared.failures for i in f.ids}


def written(prepared: Any) -> list[str]:
    return [i for batch in prepared.batches for i in batch.ids]


def three_rows(**columns: Any) -> pa.Table:
    base = {"id": ["a", "b", "c"], "values": [VECTOR] * 3}
    return pa.table({**base, **columns})


TITLES = [b"doc 0", b"caf\xe9", None]


@pytest.mark.parametrize(
    ("batch", "column"),
    [
        (three_rows(title=raw_text(TITLES)), "title"),
        (three_rows(title=raw_text(TITLES, large=True)), "title"),
        (three_rows(title=raw_text(TITLES).dictionary_encode()), "title"),
        (three_rows(title=pa.chunked_array([raw_text(TITLES[:1]), raw_text(TITLES[1:])])), "title"),
        (three_rows(place=pa.StructArray.from_arrays([raw_text(TITLES)], ["city"])), "place"),
        (
            three_rows(
                tags=pa.ListArray.from_arrays(
                    pa.array([0, 1, 3, 3], pa.int32()), raw_text([b"x", *TITLES[:2]])
                )
            ),
            "tags",
        ),
        (
            three_rows(
                attrs=pa.MapArray.from_arrays(
                    pa.array([0, 1, 2, 3], pa.int32()), raw_text([b"k", b"k\xe9", b"k"]), pa.array(["v"] * 3)
                )
            ),
            "attrs",
        ),
        (three_rows(metadata=raw_text([b'{"t": "a"}', b'{"t": "caf\xe9"}', b"{}"])), "metadata"),
    ],
    ids=["string", "large_string", "dictionary", "chunked", "struct", "list", "map_key", "json"],
)
def test_metadata_text_not_utf8_fails_its_row_naming_the_column(batch: pa.Table, column: str) -> None:
    prepared = prepare_arrow(batch, ColumnSpec(), RowRules(), DimensionState())
    assert reasons(prepared) == {"b": not_utf8(column)}
    assert written(prepared) == ["a", "c"]


def test_an_id_not_utf8_fails_its_row_named_with_its_bad_bytes_escaped() -> None:
    batch = pa.record_batch({"id": raw_text([b"a", b"caf\xe9", b"c"]), "values": [VECTOR] * 3})
    prepared = prepare_arrow(batch, ColumnSpec(), RowRules(), DimensionState())
    assert reasons(prepared) == {"caf\\xe9": not_utf8("id")}
    assert written(prepared) == ["a", "c"]


def test_an_id_from_column_not_utf8_fails_its_row() -> None:
    batch = pa.record_batch({"k": raw_text([b"a", b"caf\xe9", b"c"]), "n": [1, 2, 3], "values": [VECTOR] * 3})
    prepared = prepare_arrow(batch, ColumnSpec(id_from=("k", "n")), RowRules(), DimensionState())
    assert [f.error for f in prepared.failures] == [not_utf8("k")]
    assert len(written(prepared)) == 2


def test_a_namespace_not_utf8_fails_its_row() -> None:
    batch = three_rows(ns=raw_text([b"n1", b"n\xe9", None]))
    prepared = prepare_arrow(batch, ColumnSpec(namespace_column="ns"), RowRules(), DimensionState())
    assert reasons(prepared) == {"b": not_utf8("ns")}
    assert sorted(written(prepared)) == ["a", "c"]


def test_an_op_not_utf8_fails_its_row_with_that_reason() -> None:
    batch = three_rows(op=raw_text([b"upsert", b"del\xe9te", b"delete"]))
    prepared = prepare_arrow(batch, ColumnSpec(op_column="op"), RowRules(), DimensionState())
    assert reasons(prepared) == {"b": not_utf8("op")}


@pytest.mark.parametrize("spec", [ColumnSpec(), ColumnSpec(vector_columns=(("image", "values"),))])
def test_vector_text_not_utf8_fails_its_row(spec: ColumnSpec) -> None:
    batch = pa.record_batch({"id": ["a", "b"], "values": raw_text([b"[1, 2]", b"[1, 2]\xe9"])})
    dim = DimensionState(named={"image": None}) if spec.named else DimensionState()
    prepared = prepare_arrow(batch, spec, RowRules(), dim)
    assert reasons(prepared) == {"b": not_utf8("values")}
    assert written(prepared) == ["a"]


def test_valid_text_is_returned_as_it_is() -> None:
    from vectordb.connector.rows.text import checked_text

    column = pa.array(["doc", "café", None])
    checked, refused = checked_text(column, "title")
    assert checked is column
    assert refused == {}


def test_rows_with_text_not_utf8_are_read_with_the_bad_text_as_its_bytes() -> None:
    """What dead letters as dicts (Beam's, a mixed input's) need: to_pylist raised for every row."""
    from vectordb.connector.rows.text import readable_pylist

    batch = pa.record_batch({"id": ["a", "b"], "title": raw_text([b"doc", b"caf\xe9"]), "n": [1, 2]})
    assert readable_pylist(batch) == [
        {"id": "a", "title": "doc", "n": 1},
        {"id": "b", "title": b"caf\xe9", "n": 2},
    ]
    assert readable_pylist(pa.table({"id": ["a"]})) == [{"id": "a"}]


def test_a_write_to_a_real_server_refuses_only_the_rows_at_fault(grpc_server: ServerHandle) -> None:
    """Plain Python, Arrow input, the Pinecone gRPC test server: one bad cell in each of six columns."""
    n = 8
    table = pa.table(
        {
            "id": raw_text([b"r0", b"r1", b"r2", b"r3", b"r4", b"r\xe95", b"r6", b"r7"]),
            "values": raw_text([b"[1, 2, 3, 4]"] * 3 + [b"[1, 2, 3, 4]\xff"] + [b"[1, 2, 3, 4]"] * 4),
            "title": raw_text([b"t", b"caf\xe9", *[b"t"] * 6]),
            "metadata": raw_text([b"{}", b"{}", b'{"k": "\xe9"}', *[b"{}"] * 5]),
            "ns": raw_text([b"n", b"n", b"n", b"n", b"n\xe9", b"n", b"n", b"n"]),
            "op": raw_text([b"upsert"] * 6 + [b"\xe9", b"upsert"]),
        }
    )
    uri = grpc_server.uri
    with connect(uri, dimension=4, namespace_column="ns", op_column="op", on_error="report") as client:
        report = client.write(table)
        letters = client.dead_letters(table, report)
    failed = {i: f.error for f in report.failures for i in f.ids}
    assert failed == {
        "r1": not_utf8("title"),
        "r2": not_utf8("metadata"),
        "r3": not_utf8("values"),
        "r4": not_utf8("ns"),
        "r\\xe95": not_utf8("id"),
        "r6": not_utf8("op"),
    }
    assert (report.written, report.failed) == (2, n - 2)
    assert {vid for (_, vid) in grpc_server.arrived().final} == {"r0", "r7"}
    assert letters.num_rows == 6  # the rows as given, bytes and all
    assert b"caf\xe9" in letters.column("title").cast(pa.binary()).to_pylist()
