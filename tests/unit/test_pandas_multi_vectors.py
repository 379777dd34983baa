"""A pandas DataFrame whose cells Arrow cannot type (2-d numpy arrays as multi-vectors, the form dict rows
and Beam take) is read as its rows are as dicts: written, and a cell no reader takes fails its row naming
the column. ``pa.Table.from_pandas`` raised ArrowInvalid out of ``write`` before, stopping it whole
(Qdrant protocol test server, REST)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect

NAMED = {"vector_columns": {"title": "title_vec"}, "multi_vector_columns": {"colbert": "tokens"}}


@pytest.fixture(scope="module")
def qdrant() -> Iterator[QdrantServer]:
    with QdrantServer() as server:
        yield server


def test_a_dataframe_of_2d_array_cells_is_written(qdrant: QdrantServer) -> None:
    frame = pd.DataFrame(
        {
            "id": [1, 2],
            "title_vec": [np.array([0.1, 0.2], np.float32)] * 2,
            "tokens": [np.ones((2, 2), np.float32), np.full((3, 2), 0.5, np.float32)],
            "note": ["a", None],
            "score": [1.5, np.nan],
        }
    )
    with connect(qdrant.uri("rest", "pd_ok"), create=True, on_error="report", **NAMED) as client:
        report = client.write(frame)
    assert report.ok and report.written == 2, report
    points = {p.id: p for p in qdrant.client().scroll("pd_ok", with_vectors=True, limit=10)[0]}
    assert points[2].vector["colbert"] == [[0.5, 0.5]] * 3
    assert points[1].payload == {"note": "a", "score": 1.5} and points[2].payload == {}  # missing: left out


def test_a_cell_no_reader_takes_fails_its_row_naming_the_column(qdrant: QdrantServer) -> None:
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "title_vec": [np.array([0.1, 0.2], np.float32)] * 3,
            "tokens": [np.ones((2, 2), np.float32), np.array([["a", "b"]]), np.ones((1, 2), np.float32)],
        }
    )
    with connect(qdrant.uri("rest", "pd_bad"), create=True, on_error="report", **NAMED) as client:
        report = client.write(frame)
    assert report.written == 2 and [f.ids for f in report.failures] == [("2",)], report
    assert report.failures[0].error == (
        "multi-vector 'colbert' (column 'tokens') is not a sequence of vectors of numbers"
    )
