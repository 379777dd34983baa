"""The adapter's pure parts, without a Spark session: options, ML vectors, commit messages, dead letters."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vectordb.connector.client import resolve_options
from vectordb.connector.errors import ConfigError, WriteFailed
from vectordb.connector.options import BackendOptions
from vectordb.connector.report import BatchFailure, WriteReport
from vectordb.connector.rows import ColumnSpec
from vectordb.connector.staging import Folder
from vectordb.spark.commit import abort_job, commit_job
from vectordb.spark.datasource import VectorDataSource
from vectordb.spark.ml_vectors import dense_ml_vector, ml_columns
from vectordb.spark.options import SparkOptions, parse_spark_options, split_options
from vectordb.spark.plan import WritePlan
from vectordb.spark.task import MAX_IDS_PER_TASK, DeadLetterFile, TaskReport, _trim_ids

# -- the documented option list -----------------------------------------------------------------


def test_docstring_lists_every_option_once() -> None:
    doc = VectorDataSource.__doc__ or ""
    connector_part, spark_part = doc.split("Spark options:", 1)
    connector = re.findall(r"^\s*- ``(\w+)``:", connector_part, flags=re.M)
    spark = re.findall(r"^\s*- ``(\w+)``:", spark_part, flags=re.M)
    assert sorted(connector) == sorted(BackendOptions.__struct_fields__)
    assert sorted(spark) == sorted(SparkOptions.__struct_fields__)
    assert all(f"- ``{name}``:" in doc and "Default:" in doc for name in connector + spark)
    for block in re.split(r"\n\s*- ``", doc)[1:]:
        assert "Default:" in block and "Example:" in block, block


# -- options -------------------------------------------------------------------------------------


def test_split_options_takes_save_path_as_uri_and_keeps_spark_keys_apart() -> None:
    connector, adapter = split_options(
        {"path": "pinecone://h", "budget_tasks": "4", "checkpointLocation": "/c", "namespace": "n"}
    )
    assert connector == {"uri": "pinecone://h", "namespace": "n"}
    assert adapter == {"budget_tasks": "4"}


def test_split_options_makes_the_embedded_path_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert split_options({"uri": "./v.db"})[0]["uri"] == f"milvus+lite://{tmp_path}/v.db"
    assert split_options({"uri": "milvus+lite://v.db"})[0]["uri"] == f"milvus+lite://{tmp_path}/v.db"
    assert split_options({"uri": "milvus://h:1/c"})[0]["uri"] == "milvus://h:1/c"


def test_conflicting_uri_and_path() -> None:
    with pytest.raises(ConfigError, match="both name the target"):
        split_options({"path": "pinecone://a", "uri": "pinecone://b"})


def test_conflicting_uri_and_path_are_quoted_without_their_passwords() -> None:
    with pytest.raises(ConfigError, match="both name the target") as info:
        split_options({"path": "./v.db?password=PwPATH", "uri": "postgresql://app:PwURI@db:5432/vectors"})
    assert "PwPATH" not in str(info.value) and "PwURI" not in str(info.value)
    assert "postgresql://app:***@db:5432/vectors" in str(info.value)


def test_spark_options_parse_and_name_the_option() -> None:
    assert parse_spark_options({"allow_overwrite": "TRUE", "budget_tasks": "3"}) == SparkOptions(
        allow_overwrite=True, budget_tasks=3
    )
    with pytest.raises(ConfigError, match="option budget_tasks"):
        parse_spark_options({"budget_tasks": "many"})


# -- Spark ML vectors ----------------------------------------------------------------------------

ML_VECTOR = pa.struct(
    [
        ("type", pa.int8()),
        ("size", pa.int32()),
        ("indices", pa.list_(pa.int32())),
        ("values", pa.list_(pa.float64())),
    ]
)


def ml_batch() -> pa.RecordBatch:
    rows = [
        {"type": 1, "size": None, "indices": None, "values": [1.0, 2.0, 3.0]},
        {"type": 0, "size": 3, "indices": [0, 2], "values": [5.0, -1.5]},
        None,
        {"type": 0, "size": 3, "indices": [], "values": []},
        {"type": 1, "size": None, "indices": None, "values": [0.25, 0.5, 0.75]},
    ]
    return pa.RecordBatch.from_pydict(
        {"id": ["a", "b", "c", "d", "e"], "values": pa.array(rows, type=ML_VECTOR)}
    )


def test_sparse_ml_vectors_are_made_dense() -> None:
    out, refused = dense_ml_vector(ml_batch(), "values")
    assert not refused
    assert out.column("values").to_pylist() == [
        [1.0, 2.0, 3.0],
        [5.0, 0.0, -1.5],
        None,
        [0.0, 0.0, 0.0],
        [0.25, 0.5, 0.75],
    ]
    assert out.column("values").type == pa.list_(pa.float64())  # as a batch of dense rows only: one schema


def test_sliced_ml_vectors_are_made_dense() -> None:
    out, _ = dense_ml_vector(ml_batch().slice(1, 3), "values")
    assert out.column("values").to_pylist() == [[5.0, 0.0, -1.5], None, [0.0, 0.0, 0.0]]


def test_dense_only_ml_vectors_become_their_values_and_plain_lists_pass_unchanged() -> None:
    dense = ml_batch().filter(pa.array([True, False, False, False, True]))
    out, _ = dense_ml_vector(dense, "values")
    assert out.column("values").to_pylist() == [[1.0, 2.0, 3.0], [0.25, 0.5, 0.75]]
    assert out.column("values").type == pa.list_(pa.float64())  # the ML values as they are, not copied
    with_null = ml_batch().filter(pa.array([True, False, True, False, True]))  # a null ML vector stays null
    assert dense_ml_vector(with_null, "values")[0].column("values").to_pylist()[1] is None
    plain = pa.RecordBatch.from_pydict({"id": ["a"], "values": [[1.0]]})
    assert dense_ml_vector(plain, "values") == (plain, {})


def sparse(
    size: int | None, indices: list[int | None] | None, values: list[float] | None
) -> dict[str, object]:
    return {"type": 0, "size": size, "indices": indices, "values": values}


DENSE = {"type": 1, "size": None, "indices": None, "values": [1.0, 2.0, 3.0]}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (sparse(3, [3], [9.0]), "sparse ML vector index 3 is outside 0..2"),  # wrote the next row's slot
        (sparse(3, [-1], [9.0]), "sparse ML vector index -1 is outside 0..2"),  # the previous row's
        (sparse(3, [7], [9.0]), "sparse ML vector index 7 is outside 0..2"),  # past the buffer: IndexError
        (sparse(3, [1, 1], [5.0, 6.0]), "sparse ML vector indices are not strictly increasing"),
        (sparse(3, [2, 0], [5.0, 6.0]), "sparse ML vector indices are not strictly increasing"),
        (sparse(3, [0, 1], [5.0]), "sparse ML vector has 2 indices but 1 values"),
        (sparse(3, [0], [5.0, 6.0]), "sparse ML vector has 1 indices but 2 values"),
        (sparse(3, [None], [5.0]), "sparse ML vector holds a null index"),
        (sparse(None, [0], [5.0]), "sparse ML vector size None is outside 0..65536"),
        (
            {"type": None, "size": None, "indices": None, "values": [1.0]},
            "ML vector type None is neither 0 (sparse) nor 1 (dense)",
        ),
        (sparse(3, None, [5.0]), "sparse ML vector without indices or values"),
        (sparse(3, [0], None), "sparse ML vector without indices or values"),
        (
            {"type": 2, "size": None, "indices": None, "values": [1.0]},
            "ML vector type 2 is neither 0 (sparse) nor 1 (dense)",
        ),
    ],
)
@pytest.mark.parametrize("at", [0, 1, 2])
def test_a_malformed_sparse_ml_vector_fails_alone_and_no_other_row_changes(
    row: dict[str, object], reason: str, at: int
) -> None:
    # read from a file with a user schema, a VectorUDT row is checked by no one: scattered by its
    # indices, it wrote into another row's vector or past the buffer (the task died)
    rows: list[dict[str, object] | None] = [DENSE, sparse(3, [0, 2], [5.0, -1.5]), DENSE]
    rows[at] = row
    batch = pa.RecordBatch.from_pydict({"id": ["a", "b", "c"], "values": pa.array(rows, type=ML_VECTOR)})
    out, refused = dense_ml_vector(batch, "values")
    assert refused == {at: f"column 'values': {reason}"}
    expected: list[list[float] | None] = [[1.0, 2.0, 3.0], [5.0, 0.0, -1.5], [1.0, 2.0, 3.0]]
    expected[at] = None
    assert out.column("values").to_pylist() == expected


def test_a_sparse_ml_vector_longer_than_the_dimension_is_refused_before_it_is_made() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "id": ["a", "b"],
            "values": pa.array([sparse(2**31 - 1, [0], [1.0]), sparse(3, [], [])], type=ML_VECTOR),
        }
    )
    out, refused = dense_ml_vector(batch, "values", dimension=3)
    assert refused == {0: "column 'values': sparse ML vector size 2147483647 is outside 0..3"}
    assert out.column("values").to_pylist() == [None, [0.0, 0.0, 0.0]]


def test_a_delete_rows_malformed_ml_vector_is_not_read_and_fails_nothing() -> None:
    options = resolve_options({"uri": "pinecone://127.0.0.1:1", "op_column": "op"})
    vectors = pa.array([sparse(3, [3], [9.0]), sparse(3, [3], [9.0])], type=ML_VECTOR)
    batch = pa.RecordBatch.from_pydict({"id": ["a", "b"], "values": vectors, "op": ["delete", "upsert"]})
    ((out, refused),) = ml_columns([batch], options)
    assert refused == {1: "column 'values': sparse ML vector index 3 is outside 0..2"}
    assert out.column("values").to_pylist() == [None, None]


# -- commit messages and dead letters --------------------------------------------------------------


def failure(ids: tuple[str, ...], error: str = "rejected", positions: tuple[int, ...] = ()) -> BatchFailure:
    return BatchFailure(ids=ids, positions=positions, error=error, error_type="Rejected", attempts=1)


def test_trim_ids_keeps_counts_and_trims_positions_alike() -> None:
    report = WriteReport(written=0, failed=MAX_IDS_PER_TASK + 6)
    many = tuple(range(MAX_IDS_PER_TASK))
    report.failures = [
        failure(tuple(map(str, many)), positions=many),
        failure(("x",) * 5, positions=(1, 2, 3, 4, 5)),
        BatchFailure(ids=(), error="skipped", unnamed=1),
    ]
    assert _trim_ids(report) == 5
    assert len(report.failed_ids) == MAX_IDS_PER_TASK and report.failed == MAX_IDS_PER_TASK + 6
    assert report.failures[0].positions == many
    assert [f.unnamed for f in report.failures] == [0, 5, 1]  # the rows past the limit stay counted
    assert sum(f.rows for f in report.failures) == report.failed


def test_past_the_id_limit_every_reason_stays_with_its_rows() -> None:
    """Rows failed one by one (isolated) past the limit: each reason is kept once, with its count,
    so the reasons add up to ``failed`` and the summary names every one."""
    n = MAX_IDS_PER_TASK + 3
    report = WriteReport(failed=n + 2)
    report.failures = [
        BatchFailure(ids=(f"r{i}",), positions=(i,), error="null vector", error_type="Invalid")
        for i in range(n)
    ]
    report.failures += [
        BatchFailure(ids=(f"nan{i}",), positions=(n + i,), error="NaN", error_type="Invalid")
        for i in range(2)
    ]
    assert _trim_ids(report) == 5
    assert len(report.failures) == MAX_IDS_PER_TASK + 2 and len(report.failed_ids) == MAX_IDS_PER_TASK
    assert dict(report.reasons()) == {"Invalid: null vector": n, "Invalid: NaN": 2}


def test_dead_letter_file_columns(tmp_path: Path) -> None:
    batch = pa.RecordBatch.from_pydict(
        {"id": ["a", "b", None], "values": [[1.0], [2.0], [3.0]], "error": ["x", "y", "z"], "k": [1, 2, 3]}
    )
    location = Folder.parse(str(tmp_path), "dead_letter_path")
    missing = BatchFailure(ids=(None,), positions=(2,), error="missing id", error_type="Invalid")
    with DeadLetterFile(location, "_temporary-job/part.parquet", ColumnSpec()) as dead:
        dead.add(batch, WriteReport(failed=2, failures=[failure(("b",), positions=(1,)), missing]))
    assert dead.staged == "_temporary-job/part.parquet" and dead.rows == 2
    table = pq.read_table(tmp_path / dead.staged)
    assert table.column_names == ["id", "error", "retryable", "attempts", "values", "row_error", "k"]
    assert table.to_pylist()[1] == {
        "id": None,  # null, as the row had it: not an empty string
        "error": "Invalid: missing id",
        "retryable": False,
        "attempts": 0,
        "values": [3.0],
        "row_error": "z",
        "k": 3,
    }


def test_dead_letter_file_takes_a_null_struct_whose_fields_spark_declares_not_null(tmp_path: Path) -> None:
    # named_struct('x', 1) is struct<x: int not null>; a failed row holding a null one (a CASE without its
    # ELSE) must be a letter, in a struct, a list, a map and a fixed-size list alike: not a task that dies
    inner = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    columns = {
        "st": pa.array([{"x": 1}, None], type=inner),
        "ls": pa.array([[{"x": 1}], [None]], type=pa.list_(pa.field("e", inner, nullable=False))),
        "mp": pa.array(
            [[("k", {"x": 1})], [("k", None)]], type=pa.map_(pa.string(), pa.field("v", inner, False))
        ),
        "fx": pa.array([[1.0], [None]], type=pa.list_(pa.field("f", pa.float32(), nullable=False), 1)),
    }
    schema = pa.schema(
        [pa.field("id", pa.string(), nullable=False)]
        + [pa.field(name, array.type, nullable=False) for name, array in columns.items()]
    )
    batch = pa.RecordBatch.from_arrays([pa.array(["a", "b"]), *columns.values()], schema=schema)
    location = Folder.parse(str(tmp_path), "dead_letter_path")
    with DeadLetterFile(location, "part.parquet", ColumnSpec()) as dead:
        dead.add(batch, WriteReport(failed=1, failures=[failure(("b",), positions=(1,))]))
    letter = pq.read_table(tmp_path / "part.parquet").to_pylist()[0]
    assert letter["id"] == "b" and letter["st"] is None and letter["ls"] == [None]
    assert letter["mp"] == [("k", None)] and letter["fx"] == [None]


# -- commit and abort ----------------------------------------------------------------------------


def plan_for(tmp_path: Path, **options: str) -> WritePlan:
    given = resolve_options({"uri": "pinecone://127.0.0.1:1", **options})
    return WritePlan(
        options=given,
        given_options=given,
        spark=SparkOptions(),
        token="t0",
        target="pinecone://127.0.0.1:1",
        dead_letters=Folder.parse(str(tmp_path), "dead_letter_path").check_writable(),
        reports=None,
    )


def test_abort_says_what_stays_and_drops_staged_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plan = plan_for(tmp_path, on_error="dead_letter", dead_letter_path=str(tmp_path))
    assert plan.dead_letters is not None
    with plan.dead_letters.open_output("_temporary-job-t0/part-00000-attempt-3.parquet") as out:
        out.write(b"staged")
    failed = WriteReport(written=700, failed=1)
    failed.failures = [failure(("x",))]
    finished = TaskReport(report=failed, partition=0)
    with caplog.at_level(logging.INFO, logger="vectordb.spark"):
        abort_job(plan, [finished, None], "job-t0")
    assert "1 tasks had finished and wrote 700 rows, which stay written" in caplog.text
    assert (
        "Those tasks also failed 1 rows (first ids: x): 1x " in caplog.text
    )  # their letters go with the job
    assert os.listdir(tmp_path) == []


def test_commit_applies_on_error_after_publishing(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, on_error="fail")
    failed = WriteReport(written=9, failed=1)
    failed.failures = [failure(("x",))]
    with pytest.raises(WriteFailed, match=r"1 of 10 rows failed \(first ids: x\)"):
        commit_job(plan, [TaskReport(report=failed)], "job-t0")
    ok = commit_job(
        plan, [TaskReport(report=WriteReport(written=5)), TaskReport(report=WriteReport(written=6))], "j"
    )
    assert (ok.written, ok.failed) == (11, 0)


def test_spark_40_stream_rows_become_arrow_batches() -> None:
    from pyspark.sql import Row
    from pyspark.sql.types import ArrayType, FloatType, StringType, StructField, StructType

    from vectordb.spark.datasource import _rows_to_arrow

    schema = StructType([StructField("id", StringType()), StructField("values", ArrayType(FloatType()))])
    rows = (Row(id=str(i), values=[float(i), 0.5]) for i in range(25_000))
    batches = list(_rows_to_arrow(rows, schema))
    assert [b.num_rows for b in batches] == [10_000, 10_000, 5_000]
    assert batches[2].column("values").type == pa.list_(pa.float32())
    assert batches[2].to_pylist()[0] == {"id": "20000", "values": [20000.0, 0.5]}


# -- which Python the workers start ------------------------------------------------------------------


def test_a_local_session_warns_when_its_workers_would_start_another_python(tmp_path: Path) -> None:
    import os
    import sys

    from vectordb.spark import workers_python_mismatch

    other = tmp_path / "bin" / "python3"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    message = workers_python_mismatch("local[2]", None, str(other))
    assert message and str(other) in message and "PYSPARK_PYTHON" in message
    assert workers_python_mismatch("local[*]", str(other), None)  # the Spark setting says it too
    assert workers_python_mismatch("local[2]", sys.executable, str(other)) is None  # the setting wins
    sibling = os.path.join(os.path.dirname(sys.executable), "python3")
    assert workers_python_mismatch("local[2]", None, sibling) is None  # python3 beside python: the same
    assert workers_python_mismatch("spark://10.0.0.1:7077", None, str(other)) is None  # a cluster's own


def test_register_says_nothing_when_the_workers_run_this_python(
    spark: object, caplog: pytest.LogCaptureFixture
) -> None:
    from vectordb.spark import register

    with caplog.at_level(logging.WARNING, logger="vectordb.spark"):
        register(spark)  # type: ignore[arg-type]  # the test session sets PYSPARK_PYTHON to this interpreter
    assert not [r for r in caplog.records if "Python workers" in r.getMessage()]


def test_a_micro_batch_committed_again_replaces_its_dead_letters(tmp_path: Path) -> None:
    """Run again (Spark replays a micro-batch whose commit it did not record), a micro-batch's letters
    are the replay's: an earlier run's files, which may name rows the replay wrote, go."""
    plan = plan_for(tmp_path, on_error="dead_letter", dead_letter_path=str(tmp_path))
    for name in (
        "batch-000007-part-00000.parquet",
        "batch-000007-part-00003.parquet",
        "batch-000008-part-00000.parquet",
    ):
        (tmp_path / name).write_bytes(b"an earlier run's")
    report = commit_job(
        plan, [TaskReport(report=WriteReport(written=10), partition=0)], "batch-000007", again=True
    )
    assert report.ok and sorted(os.listdir(tmp_path)) == ["batch-000008-part-00000.parquet"]


def test_spark_4_0s_stream_rows_carry_ml_vectors_as_their_struct() -> None:
    """Spark 4.0 hands a stream writer ``Row``s: an ML vector in one is a ``DenseVector`` or
    ``SparseVector``, which Arrow could not take for ``VectorUDT``'s struct (the task failed)."""
    from pyspark.ml.linalg import DenseVector, SparseVector, VectorUDT
    from pyspark.sql import Row
    from pyspark.sql.types import StringType, StructField, StructType

    from vectordb.spark.datasource import _rows_to_arrow

    schema = StructType([StructField("id", StringType()), StructField("values", VectorUDT())])
    rows = [Row(id="a", values=DenseVector([1.0, 2.0])), Row(id="b", values=SparseVector(2, [1], [5.0]))]
    rows.append(Row(id="c", values=None))
    (batch,) = _rows_to_arrow(iter(rows), schema)
    dense, _ = dense_ml_vector(batch, "values")
    assert dense.column("values").to_pylist() == [[1.0, 2.0], [0.0, 5.0], None]
