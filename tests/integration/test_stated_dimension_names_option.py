"""A stated dimension the target lacks, without an embedding stage: the ``DimensionMismatch`` names the
option that stated it, from the client's early check and from a planned (Spark, Beam) write. It said
"collection c has dim 4, data has 8" when no row had been sent: the user who stated 8 could not place it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from vectordb.connector import connect
from vectordb.connector.client import resolve_options
from vectordb.connector.errors import DimensionMismatch
from vectordb.connector.planner import DriverPlan


@pytest.fixture
def uri(tmp_path: Path) -> str:
    uri = f"milvus+lite://{tmp_path}/a.db"
    with connect(uri, collection="c", create=True) as client:
        assert client.write([{"id": "a", "values": [0.5] * 4}]).ok
    return uri


def test_the_client_names_option_dimension(uri: str) -> None:
    with (
        connect(uri, collection="c", dimension=8) as client,
        pytest.raises(DimensionMismatch, match=r"^option dimension \(8\): .*dim 4") as info,
    ):
        client.write(pa.table({"id": ["b"], "values": [[0.5] * 8]}))
    assert info.value.target_dimension == 4


def test_a_planned_write_names_option_dimension(uri: str) -> None:
    with (
        DriverPlan(resolve_options({"uri": uri, "collection": "c", "dimension": "8"})) as plan,
        pytest.raises(DimensionMismatch, match=r"^option dimension \(8\): .*dim 4"),
    ):
        plan.ask_target()


def test_a_learnt_dimension_is_no_option(uri: str) -> None:
    """Rows of another length than the target's, no dimension stated: they fail one by one, no option named."""
    with connect(uri, collection="c", on_error="report") as client:
        report = client.write([{"id": "b", "values": [0.5] * 8}])
    assert report.failed == 1 and "option" not in report.failures[0].error, report
