"""Every case of the catalogue through the client, against the Pinecone-protocol test server (gRPC, an
index of dimension 4): a bad row fails alone with its reason and the row beside it is written; what is
written is stored as the catalogue says; what is refused before sending sends nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import ConfigError, connect
from vectordb.connector.transports.base import forget_shared

from .cases import CASES, Case, V

GOOD = {"id": "good", "values": V}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_server("grpc") as handle:
        yield handle
        forget_shared()


@pytest.fixture
def index(server: ServerHandle) -> ServerHandle:
    server.reset()
    server.script(dimension=4)
    return server


def write(server: ServerHandle, rows: object, **options: object) -> object:
    with connect(server.uri, api_key="k", on_error="report", **options) as client:
        return client.upsert(rows)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.row and c.outcome == "fails alone"], ids=lambda c: c.name
)
def test_a_bad_row_fails_alone_with_its_reason(index: ServerHandle, case: Case) -> None:
    assert case.row is not None
    report = write(index, [case.row, GOOD], **case.row_options)
    assert (report.written, report.failed) == (1, 1), report
    (failure,) = report.failures
    expected_id = None if case.row.get("id") is None else str(case.row["id"])
    assert failure.ids == (expected_id,)
    assert case.says in failure.error and failure.error_type == "Invalid" and not failure.retryable
    assert index.arrived().ids() == {"good"}  # the bad row never reached the server


STORED = {
    "an integer id": ("42", None),
    "an integer id beyond 2^63": ("18446744073709551616", None),
    "a timestamp in metadata": ("bad", {"at": "2024-05-06T07:08:09"}),
    "a date in metadata": ("bad", {"day": "2024-05-06"}),
    "a decimal in metadata": ("bad", {"price": "10.25"}),
    "a null metadata value": ("bad", None),
    "a null inside a `metadata` object (or an Arrow struct, or JSON text)": ("bad", None),
    "a list of strings in metadata": ("bad", {"tags": ["a", "b"]}),
    "sparse indices out of order": ("bad", None),
    'a vector as JSON text ("[0.5, -0.25, 1.0, 2.0]")': ("bad", None),
}


@pytest.mark.parametrize("case", [c for c in CASES if c.row and c.outcome == "written"], ids=lambda c: c.name)
def test_what_is_written_is_stored_as_the_catalogue_says(index: ServerHandle, case: Case) -> None:
    report = write(index, [case.row, GOOD])
    assert report.ok and report.written == 2
    stored_id, metadata = STORED[case.name]
    assert index.arrived().vector(stored_id).metadata == metadata
    if case.name.startswith("a vector as JSON text"):
        np.testing.assert_array_equal(index.arrived().vector("bad").values, np.asarray(V, dtype=np.float32))


def test_sparse_indices_out_of_order_are_sorted_with_their_values(index: ServerHandle) -> None:
    report = write(
        index, [{"id": "a", "values": V, "sparse_values": {"indices": [3, 1], "values": [0.5, 0.25]}}]
    )
    assert report.ok
    stored = index.arrived().vector("a")
    assert stored.sparse_indices == [1, 3]
    assert np.frombuffer(stored.sparse_values_f32, dtype="<f4").tolist() == [0.25, 0.5]


def test_the_same_id_twice_ends_with_the_last_occurrence(index: ServerHandle) -> None:
    report = write(index, [{"id": "a", "values": V, "v": "first"}, {"id": "a", "values": V, "v": "last"}])
    assert report.ok and index.arrived().vector("a").metadata == {"v": "last"}


def test_an_empty_input_sends_nothing(index: ServerHandle) -> None:
    report = write(index, [])
    assert report.ok and report.written == 0 and report.requests == 0


def test_no_id_column_and_columns_of_the_wrong_type_are_refused_before_sending(index: ServerHandle) -> None:
    with pytest.raises(ConfigError, match="option id_column"):
        write(index, pa.table({"key": ["a"], "values": [V]}))
    with pytest.raises(ConfigError, match="option vector_column"):
        write(index, pa.table({"id": ["a"], "values": [12]}))
    with pytest.raises(ConfigError, match="option op_column: column 'op' has type int64; expected strings"):
        write(index, pa.table({"id": ["a"], "values": [V], "op": [1]}), op_column="op")
    assert index.arrived().requests == []


@pytest.mark.parametrize("case", [c for c in CASES if c.options], ids=lambda c: c.name)
def test_bad_options_are_refused_before_sending(index: ServerHandle, case: Case) -> None:
    with pytest.raises(ConfigError, match=case.says):
        write(index, [GOOD], verify=True, **case.options)
    assert index.arrived().requests == []


def test_vector_text_that_is_not_a_json_list_fails_alone(index: ServerHandle) -> None:
    """A vector column of text (as CSV holds vectors) is read as JSON lists of numbers, row by row."""
    (case,) = [c for c in CASES if c.name.startswith("a vector column of text")]
    report = write(index, pa.table({"id": ["bad", "good"], "values": ["1;2;3", json.dumps(V)]}))
    assert (report.written, report.failed) == (1, 1), report
    (failure,) = report.failures
    assert failure.ids == ("bad",) and failure.error == case.says and failure.error_type == "Invalid"
    assert index.arrived().ids() == {"good"}
    np.testing.assert_array_equal(index.arrived().vector("good").values, np.asarray(V, dtype=np.float32))


def test_arrow_text_that_is_not_utf8_fails_alone(index: ServerHandle) -> None:
    """A cell of an Arrow string column holding bytes that are no UTF-8 fails its row, naming the column."""
    (case,) = [c for c in CASES if c.name.startswith("Arrow text that is not UTF-8")]
    titles = pa.array([b"caf\xe9", b"cafe"], pa.binary()).cast(pa.string(), safe=False)  # no check
    report = write(index, pa.table({"id": ["bad", "good"], "values": [V, V], "title": titles}))
    assert (report.written, report.failed) == (1, 1), report
    (failure,) = report.failures
    assert failure.ids == ("bad",) and failure.error == case.says and failure.error_type == "Invalid"
    assert index.arrived().ids() == {"good"}


def test_every_case_is_tested() -> None:
    by_option = {c.name for c in CASES if c.options}
    special = {
        "the same id twice in one write",
        "an empty input",
        "no `id` column",
        "a vector column of numbers, not lists (Arrow)",
        "a vector column of text that is not a JSON list (Arrow, CSV: `1;2;3`)",
        "an op column that holds no strings (Arrow)",
        next(c.name for c in CASES if c.name.startswith("Arrow text that is not UTF-8")),
    }
    rows = {c.name for c in CASES if c.row}
    assert {c.name for c in CASES} == by_option | special | rows
    assert {c.name for c in CASES if c.row and c.outcome == "written"} == set(STORED)
    assert len(CASES) >= 30
