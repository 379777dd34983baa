"""The catalogue of bad input: one place for each case, what a user sends and what they get.

The README's "Bad input: what you get" table is ``render()`` of this list (a test keeps them equal);
tests/badinput runs every case through the client against the Pinecone-protocol test server (an index
of dimension 4), and the per-row ones again through Spark dead letters and Beam's ``.failed``.
"""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass, field
from typing import Any, Literal

V = [0.5, -0.25, 1.0, 2.0]

Outcome = Literal["fails alone", "refused before sending", "written"]


@dataclass(frozen=True)
class Case:
    name: str  # what the user sends, as the README says it
    row: dict[str, Any] | None  # one row (written beside a good one), or None for an option case
    outcome: Outcome
    says: str  # the reason (a fragment of it), or what is stored
    options: dict[str, Any] = field(default_factory=dict)
    spark: bool = False  # also one of the Spark DataFrame's rows
    row_options: dict[str, Any] = field(default_factory=dict)  # options of the write of a row case
    pinecone_only: bool = False  # a rule of Pinecone's, not every database's


def row(**fields: Any) -> dict[str, Any]:
    return {"id": "bad", "values": V, **fields}


CASES: list[Case] = [
    Case("a null vector", row(values=None), "fails alone", "null vector", spark=True),
    Case("an empty vector", row(values=[]), "fails alone", "null vector", spark=True),
    Case("a vector of another length", row(values=[0.5, 1.0, 2.0]), "fails alone",
         "vector has 3 dimensions; expected 4", spark=True),
    Case("NaN in a vector", row(values=[0.5, float("nan"), 1.0, 2.0]), "fails alone",
         "vector has NaN or infinity at index 1", spark=True),
    Case("infinity in a vector", row(values=[0.5, float("inf"), 1.0, 2.0]), "fails alone",
         "vector has NaN or infinity at index 1", spark=True),
    Case("a value beyond float32 (1e40)", row(values=[1e40, 1.0, 1.0, 1.0]), "fails alone",
         "vector has NaN or infinity at index 0"),
    Case("a vector of strings", row(values=["a", "b", "c", "d"]), "fails alone",
         "vector is not a sequence of numbers"),
    Case("a vector of nested lists ([[0.5, 1.0], [2.0, 3.0]])", row(values=[[0.5, 1.0], [2.0, 3.0]]),
         "fails alone", "vector is not a sequence of numbers"),
    Case('a vector of numbers as strings (["1", "2", "3", "4"])', row(values=["1", "2", "3", "4"]),
         "fails alone", "vector is not a sequence of numbers"),
    Case("a vector of booleans", row(values=[True, False, True, True]), "fails alone",
         "vector is not a sequence of numbers"),
    Case("a null element in a vector ([0.5, None, 1.0, 2.0])", row(values=[0.5, None, 1.0, 2.0]),
         "fails alone", "vector has a null element at index 1"),
    Case('a vector as JSON text ("[0.5, -0.25, 1.0, 2.0]")', row(values="[0.5, -0.25, 1.0, 2.0]"), "written",
         "the list it holds"),
    Case('a vector as text that is not a JSON list ("1;2;3")', row(values="1;2;3"), "fails alone",
         "column 'values': vector text is not a JSON list of numbers: '1;2;3'"),
    Case("a null id", {"id": None, "values": V}, "fails alone", "missing id", spark=True),
    Case("an empty id", {"id": "", "values": V}, "fails alone", "empty id", spark=True),
    Case("an id over the database's limit (600 characters; Pinecone: 512)", {"id": "x" * 600, "values": V},
         "fails alone", "id is 600 characters long; the limit is 512", spark=True),
    Case("a float id (1.5)", {"id": 1.5, "values": V}, "fails alone", "id 1.5 is neither a string nor an integer"),
    Case("a boolean id (True)", {"id": True, "values": V}, "fails alone",
         "id True is a boolean; ids are text or integers"),
    Case("an id that is not UTF-8 (a lone surrogate)", {"id": "bad\udcff", "values": V}, "fails alone",
         "id holds a lone surrogate"),
    Case("binary metadata", row(blob=b"\x00\xff"), "fails alone", "column 'blob': text is not valid UTF-8",
         spark=True),
    Case("metadata text that is not UTF-8 (a lone surrogate)", row(text="\udcff"), "fails alone",
         "not valid UTF-8"),
    Case("an integer beyond 2^64 in metadata", row(n=2**70), "fails alone", "exceeds 64-bit range"),
    Case("metadata over the database's limit (50 KB; Pinecone: 40 KB)", row(text="x" * 50_000), "fails alone",
         "the limit is 40960", spark=True),
    Case("a `metadata` column that is not JSON", row(metadata="{not json"), "fails alone",
         "metadata is not a JSON object"),
    Case("a `metadata` column holding a JSON list", row(metadata="[1, 2]"), "fails alone",
         "metadata is not a JSON object"),
    Case("a nested object in metadata (Pinecone)", row(place={"city": "Oslo"}), "fails alone",
         "no nested objects", spark=True, pinecone_only=True),
    Case("a list of numbers in metadata (Pinecone)", row(scores=[1, 2]), "fails alone",
         "lists hold strings only", spark=True, pinecone_only=True),
    Case("an integer beyond 2^53 in metadata (Pinecone: float64)", row(n=2**60), "fails alone",
         "beyond 2^53", spark=True, pinecone_only=True),
    Case("NaN or infinity in metadata, at any depth (JSON has none: it would be stored as null)",
         row(score=[0.5, float("inf")]), "fails alone", "is NaN or infinity, which JSON cannot hold"),
    Case("a sparse index below 0", row(sparse_values={"indices": [-1], "values": [0.5]}), "fails alone",
         "sparse index is negative"),
    Case("a sparse index twice", row(sparse_values={"indices": [1, 1], "values": [0.5, 0.2]}), "fails alone",
         "sparse indices are duplicated"),
    Case("a sparse index of 2^32 or more", row(sparse_values={"indices": [2**32], "values": [0.5]}),
         "fails alone", "sparse index is 2^32 or more"),
    Case("a fractional sparse index (1.5)", row(sparse_values={"indices": [1.5], "values": [0.5]}),
         "fails alone", "sparse indices must be integers"),
    Case("sparse indices and values of different lengths",
         row(sparse_values={"indices": [1, 2], "values": [0.5]}), "fails alone",
         "sparse vector has 2 indices but 1 values"),
    Case("a sparse vector and no dense vector, into a dense index (Pinecone)",
         row(values=None, sparse_values={"indices": [1], "values": [0.5]}), "fails alone",
         "no dense vector: the index is dense (dimension 4)", pinecone_only=True),
    Case("an all-zero dense vector (Pinecone)", row(values=[0.0, -0.0, 0.0, 0.0]), "fails alone",
         "vector is all zeros", pinecone_only=True),
    Case("a sparse vector of over 1,000 values (Pinecone)",
         row(sparse_values={"indices": list(range(1001)), "values": [0.5] * 1001}), "fails alone",
         "sparse vector has 1001 non-zero values; Pinecone takes at most 1000", pinecone_only=True),
    # over 100 characters: tests/beam/test_bad_input.py gives shorter ids its own, ASCII ones
    Case("an id with a non-ASCII character (Pinecone: ids are ASCII, no `\\0`)",
         {"id": "café-" + "x" * 100, "values": V}, "fails alone", "id holds a non-ASCII character",
         pinecone_only=True),
    Case("a namespace that is not a string", row(namespace=5), "fails alone", "namespace 5 is not a string"),
    Case("a namespace with a non-ASCII character, a `\\0` or over 512 characters (Pinecone)",
         row(namespace="café"), "fails alone", "namespace 'café' holds a non-ASCII character",
         pinecone_only=True),
    Case("a namespace that is not UTF-8 (a lone surrogate)", row(namespace="ns\udcff"), "fails alone",
         "namespace holds a lone surrogate"),
    Case("a delete row without an id (`op_column`)", {"id": None, "op": "delete"}, "fails alone", "missing id",
         row_options={"op_column": "op"}),
    Case("an op that names none (`op_column`)", row(op="merge"), "fails alone",
         "op 'merge' (column 'op') is not one of upsert, insert, update, update_postimage, delete",
         row_options={"op_column": "op"}),
    Case("an integer id", {"id": 42, "values": V}, "written", "id \"42\" (Pinecone ids are strings)"),
    Case("an integer id beyond 2^63", {"id": 2**64, "values": V}, "written", "id \"18446744073709551616\""),
    Case("a timestamp in metadata", row(at=datetime.datetime(2024, 5, 6, 7, 8, 9)), "written",
         "text \"2024-05-06T07:08:09\" (ISO 8601)", spark=True),
    Case("a date in metadata", row(day=datetime.date(2024, 5, 6)), "written", "text \"2024-05-06\"", spark=True),
    Case("a decimal in metadata", row(price=decimal.Decimal("10.25")), "written", "text \"10.25\" (exact)",
         spark=True),
    Case("a null metadata value", row(note=None), "written", "the key is left out"),
    Case("a null inside a `metadata` object (or an Arrow struct, or JSON text)", row(metadata={"note": None}),
         "written", "the key is left out"),
    Case("a list of strings in metadata", row(tags=["a", "b"]), "written", "the list"),
    Case("sparse indices out of order", row(sparse_values={"indices": [3, 1], "values": [0.5, 0.25]}),
         "written", "sorted by index, each value with its own"),
    Case("the same id twice in one write", None, "written", "the last occurrence"),
    Case("no `id` column", None, "refused before sending", "option id_column"),
    Case("a vector column of numbers, not lists (Arrow)", None, "refused before sending", "option vector_column"),
    Case("a vector column of text that is not a JSON list (Arrow, CSV: `1;2;3`)", None, "fails alone",
         "column 'values': vector text is not a JSON list of numbers: '1;2;3'"),
    Case("Arrow text that is not UTF-8 (a Latin-1 byte; Spark's JSON reader passes its line in "
         "`_corrupt_record`) in a metadata, id, namespace, op or text column", None, "fails alone",
         "column 'title': text is not valid UTF-8"),
    Case("an op column that holds no strings (Arrow)", None, "refused before sending",
         "option op_column: column 'op' has type int64; expected strings"),
    Case("an option the database does not know", None, "refused before sending", "unknown option 'nonsense'",
         options={"nonsense": "x"}),
    Case("batch_size over the database's limit (Pinecone: 1000)", None, "refused before sending",
         "takes at most 1000 rows per request", options={"batch_size": 5000}),
    Case("option namespace with a non-ASCII character, a `\\0` or over 512 characters (Pinecone)", None,
         "refused before sending", "option namespace: namespace 'café' holds a non-ASCII character",
         options={"namespace": "café"}, pinecone_only=True),
    Case("option dimension other than the index's", None, "refused before sending", "dimension mismatch",
         options={"dimension": 8}),
    Case("an empty input", None, "written", "nothing: the report says 0 rows, no request is sent"),
]  # fmt: skip


def render() -> str:
    lines = ["| input | what you get | the reason, or what is stored |", "|---|---|---|"]
    for case in CASES:
        lines.append(f"| {case.name} | {case.outcome} | {case.says} |")
    return "\n".join(lines)
