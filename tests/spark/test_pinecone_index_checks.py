"""A write the Pinecone index cannot take fails on the driver, before any job, naming option ``dimension``.

The test servers stand for an index from their start (``index=``), as a Pinecone index is fixed when it
is created: a dense one reports its dimension, a sparse one none (0), and both their ``vectorType``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers import pinecone_rules as rules
from tests.servers.fixtures import ServerHandle, start_server_process
from vectordb.connector.errors import ConfigError
from vectordb.spark.plan import plan_write

from .conftest import job_ids, vectors_table


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    """Ten rows of 4-d dense vectors."""
    return spark.createDataFrame(vectors_table(10, 4))


@pytest.fixture(scope="module", params=["grpc", "rest"])
def dense_index(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server_process(request.param, index=rules.dense(8)) as handle:
        yield handle


@pytest.fixture(scope="module", params=["grpc", "rest"])
def sparse_index(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server_process(request.param, index=rules.SPARSE) as handle:
        yield handle


def test_a_dense_index_of_another_dimension_fails_before_any_job(
    spark: Any, frame: Any, dense_index: ServerHandle
) -> None:
    before = job_ids(spark)
    with pytest.raises(Exception, match="PYTHON_DATA_SOURCE_ERROR") as caught:
        frame.write.format("vectordb").option("uri", dense_index.uri).option("dimension", "4").mode(
            "append"
        ).save()
    assert "ConfigError" in str(caught.value) or "DimensionMismatch" in str(caught.value)
    assert "has dimension 8, the data has 4" in str(caught.value)
    assert job_ids(spark) == before
    assert dense_index.arrived().requests == []


def test_the_plan_refuses_a_dense_index_of_another_dimension(frame: Any, dense_index: ServerHandle) -> None:
    with pytest.raises(ConfigError, match=r"dimension mismatch: index .* has dimension 8, the data has 4"):
        plan_write({"uri": dense_index.uri, "dimension": "4"}, frame.schema, overwrite=False)
    plan = plan_write({"uri": dense_index.uri}, frame.schema, overwrite=False)
    assert plan.options.dimension == 8  # the index's, handed to the tasks: each refuses a 4-d row alone


def test_a_sparse_index_hands_the_tasks_no_dimension(frame: Any, sparse_index: ServerHandle) -> None:
    plan = plan_write({"uri": sparse_index.uri}, frame.schema, overwrite=False)
    assert (plan.options.dimension, getattr(plan.options, "verify", None)) == (None, True)


def test_dense_vectors_for_a_sparse_index_fail_before_any_job_naming_dimension(
    spark: Any, frame: Any, sparse_index: ServerHandle
) -> None:
    """The server reports ``vectorType`` "sparse", as Pinecone does: option dimension (dense vectors) is
    refused on the driver, not row by row in the tasks."""
    before = job_ids(spark)
    with pytest.raises(ConfigError, match=r"option dimension: .* is a sparse index"):
        plan_write({"uri": sparse_index.uri, "dimension": "4"}, frame.schema, overwrite=False)
    assert job_ids(spark) == before
    assert sparse_index.arrived().requests == []
