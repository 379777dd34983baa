"""The capacity model's arithmetic (jobs/capacity.py): the bound it names is the smaller one, caps apply."""

from __future__ import annotations

import pytest

from jobs.capacity import CLIENT_US_PER_ROW, SPARK_US_PER_ROW_768, client_us_per_row, plan


def test_a_long_round_trip_bounds_a_task_by_concurrency_times_batch() -> None:
    result = plan(1e6, 768, "pinecone+grpc", round_trip_ms=80, executors=1, cores=1, concurrency=4, batch=500)
    assert result.per_task_rows_s == pytest.approx(4 * 500 / 0.08)
    assert result.bound_by == result.task_bound_by == "the round trip"
    assert result.hours == pytest.approx(1e6 / (4 * 500 / 0.08) / 3600)


def test_a_short_round_trip_bounds_a_task_by_one_core() -> None:
    result = plan(1e6, 768, "pinecone+grpc", round_trip_ms=1, executors=1, cores=1, concurrency=16)
    cpu = CLIENT_US_PER_ROW["pinecone+grpc"][768] + SPARK_US_PER_ROW_768
    assert result.cpu_us_per_row == pytest.approx(cpu)
    assert result.per_task_rows_s == pytest.approx(1e6 / cpu)
    assert result.bound_by == "one core's CPU"


def test_more_tasks_than_cores_are_capped_by_the_cores_and_the_server_caps_the_job() -> None:
    crowded = plan(1e6, 768, "milvus", 1, executors=2, cores=4, tasks_per_core=4, cpu_us_per_row=100)
    assert crowded.job_rows_s == pytest.approx(8 * 1e6 / 100)
    assert crowded.bound_by.startswith("the executors' cores")
    capped = plan(1e6, 768, "milvus", 80, executors=10, cores=8, server_rows_per_s=5000)
    assert capped.job_rows_s == 5000 and capped.bound_by.startswith("the database")
    assert capped.task_bound_by == "the round trip"  # what one task would do, the database aside


def test_cpu_per_row_is_interpolated_between_measured_dimensions() -> None:
    table = CLIENT_US_PER_ROW["postgresql"]
    assert client_us_per_row("postgresql", 768) == table[768]
    middle = client_us_per_row("postgresql", 1152)
    assert middle == pytest.approx((table[768] + table[1536]) / 2)
    assert client_us_per_row("postgresql", 3072) == pytest.approx(table[1536] * 2)
    with pytest.raises(SystemExit, match="--database"):
        client_us_per_row("nosuchdb", 768)


def test_the_batch_is_the_backends_own_default() -> None:
    from vectordb.connector.backends.registry import backend_class

    for database in CLIENT_US_PER_ROW:
        expected = backend_class(database.partition("+")[0]).limits.default_rows
        result = plan(1e6, 768, database, round_trip_ms=1000, executors=1, cores=1, concurrency=1)
        assert result.per_task_rows_s == pytest.approx(expected), database


def test_the_readme_shows_the_measured_constants() -> None:
    """The README's CPU-per-row table and the model's constants are the same numbers, in the same order."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("| target | 384-d | 768-d | 1536-d |") :].split("\n\n", 1)[0]
    shown = [tuple(float(x) for x in re.findall(r"\| ([\d.]+)", line)) for line in table.splitlines()[2:]]
    assert shown == [(t[384], t[768], t[1536]) for t in CLIENT_US_PER_ROW.values()]


def test_several_vectors_a_row_cost_their_floats_and_a_multi_vector_its_measured_cost_a_float() -> None:
    from jobs.capacity import MULTI_NS_PER_FLOAT, row_cpu_us

    two_named = row_cpu_us("qdrant+grpc", 768, vectors=2)
    assert two_named == pytest.approx(client_us_per_row("qdrant+grpc", 1536) + 2 * SPARK_US_PER_ROW_768)
    colbert = row_cpu_us("weaviate", 0, vectors=0, multi_vector=(100, 128))
    floats = 100 * 128
    expected = CLIENT_US_PER_ROW["weaviate"][384] + floats * MULTI_NS_PER_FLOAT["weaviate"] / 1000
    assert colbert == pytest.approx(expected + SPARK_US_PER_ROW_768 * floats / 768)
    result = plan(1e6, 0, "weaviate", 1, executors=1, cores=1, vectors=0, multi_vector=(100, 128))
    assert result.cpu_us_per_row == pytest.approx(colbert) and result.bound_by == "one core's CPU"
    with pytest.raises(SystemExit, match="--multi-vector: pinecone stores no multi-vectors"):
        row_cpu_us("pinecone", 768, multi_vector=(10, 128))
