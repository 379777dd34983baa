"""``VectorBatchCoder`` carries a batch's elements as they came (``VectorBatch.records``), in every form
of batch: its dead letters are built from them. Without them a runner that encodes batches between
reading and writing (Dataflow, Flink, the multi-process DirectRunner) gave letters in the client's
dict form (``values``, ``metadata``) instead of the element's own keys."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.beam import VectorBatch, VectorBatchCoder
from vectordb.beam.batch import assemble
from vectordb.beam.elements import ElementReader, Refusal
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import ColumnSpec

from .test_coders_exact import READER

NAMED = ElementReader(vector_columns=(("title", "title_vec"),))


def _rows_and_records(reader: ElementReader, elements: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    rows = [reader.read(element) for element in elements]
    assert not any(isinstance(row, Refusal) for row in rows), rows
    return rows, list(elements)


PLAIN = [{"id": "a", "values": [0.1, 0.2], "k": "x"}, {"id": "b", "values": [0.3, 0.4]}]
ODD = [{"id": "a", "values": [0.1, 0.2], "when": np.datetime64("2024-01-02")}]  # not plain: ids etc. pickled
NAMED_ELEMENTS = [{"id": "n", "title_vec": [0.5, 0.25], "k": "y"}]


@pytest.mark.parametrize(
    ("reader", "elements", "pickled"),
    [
        (READER, PLAIN, False),
        (READER, PLAIN, True),  # as the unbounded path keeps them: each element pickled by the reader
        (READER, ODD, False),
        (NAMED, NAMED_ELEMENTS, False),
    ],
    ids=["plain", "plain-pickled", "exact", "named"],
)
def test_a_batchs_records_survive_the_coder(
    reader: ElementReader, elements: list[dict[str, Any]], pickled: bool
) -> None:
    rows, records = _rows_and_records(reader, elements)
    if pickled:
        records = [pickle.dumps(r, protocol=5) for r in records]
    batch = assemble(rows, records)
    back = VectorBatchCoder().decode(VectorBatchCoder().encode(batch))
    assert back.records is not None
    assert [pickle.loads(r) if type(r) is bytes else r for r in back.records] == elements
    assert [type(r) for r in back.records] == [type(r) for r in records]


def test_an_arrow_batchs_records_survive_and_none_stays_none() -> None:
    arrow = pa.record_batch({"id": ["a"], "values": [[0.1, 0.2]]})
    batch = VectorBatch.of_arrow(arrow)
    assert VectorBatchCoder().decode(VectorBatchCoder().encode(batch)).records is None
    batch.records = [{"id": "a", "values": [0.1, 0.2]}]
    assert VectorBatchCoder().decode(VectorBatchCoder().encode(batch)).records == batch.records


def test_the_letters_of_a_decoded_batch_are_the_elements() -> None:
    """The letter of an encoded batch holds the element's own keys and floats (0.1, not 0.1 widened
    from float32 into the client's ``values``)."""
    rows, records = _rows_and_records(READER, PLAIN)
    back = VectorBatchCoder().decode(VectorBatchCoder().encode(assemble(rows, records)))
    report = WriteReport(failed=1, failures=[BatchFailure(ids=("b",), error="no", error_type="Rejected")])
    letters = back.dead_letters(report, ColumnSpec())
    assert len(letters) == 1
    assert letters[0]["values"] == [0.3, 0.4] and "metadata" not in letters[0]
