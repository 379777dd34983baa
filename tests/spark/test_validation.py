"""Every mistake the driver can see fails in ``writer()``, before Spark starts a job, naming what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.servers.fixtures import ServerHandle, start_server_process
from vectordb.connector.errors import ConfigError
from vectordb.spark.plan import plan_write

from .conftest import free_port, job_ids, vectors_table


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    table = vectors_table(20, 4).append_column("label", pa.array([i % 2 for i in range(20)]))
    return spark.createDataFrame(table)


# Through Spark: the error is raised by writer() on the driver and no job starts. Each case costs a
# Python worker launch, so only a few go through Spark; the rest call plan_write() directly below.
SPARK_CASES = {
    "unknown option": ({"bach_size": "10", "api_key": "s3cr3t-k3y"}, "unknown option 'bach_size'"),
    "missing vector column": ({"vector_column": "embedding"}, "option vector_column: no column 'embedding'"),
    "namespace column not a string": (
        {"namespace_column": "label"},
        "option namespace_column: column 'label'",
    ),
    # pinecone+grpc:// forgotten: an error, never a local Milvus Lite database named after the host
    "a host without its scheme": ({"uri": "my-index-abc.svc.pinecone.io"}, "is not SCHEME://host"),
}

PLAN_CASES = {
    **SPARK_CASES,
    "bad value": ({"max_concurrency": "0"}, "option max_concurrency"),
    # a string column is vectors as JSON text (1ff1feb); a number is no vector
    "vector column of the wrong type": ({"vector_column": "n"}, "option vector_column: column 'n'"),
    "bad on_error": ({"on_error": "ignore"}, "option on_error"),
    "dead letters without a path": ({"on_error": "dead_letter"}, "needs option dead_letter_path"),
    "missing id column": ({"id_column": "doc_id"}, "option id_column: no column 'doc_id'"),
    "id column of the wrong type": ({"id_column": "values"}, "option id_column: column 'values'"),
    "missing metadata column": ({"metadata_columns": "title,author"}, "no column 'author'"),
    "sparse column of the wrong type": ({"sparse_column": "title"}, "option sparse_column"),
    "budget without budget_tasks": ({"max_rows_per_second": "100"}, "option budget_tasks"),
    "bad budget_tasks": ({"max_rows_per_second": "100", "budget_tasks": "0"}, "option budget_tasks"),
    "bad allow_overwrite": ({"allow_overwrite": "maybe"}, "option allow_overwrite"),
    "batch above the database's limit": ({"batch_size": "5000"}, "option batch_size"),
    "unknown scheme": ({"uri": "qdrnt://127.0.0.1:1"}, "unknown database scheme 'qdrnt'"),
    "uri and a different save path": ({"path": "pinecone://127.0.0.1:2"}, "both name the target"),
}


@pytest.mark.parametrize("case", list(SPARK_CASES))
def test_bad_options_fail_before_any_job(
    spark: Any, frame: Any, grpc_server: ServerHandle, case: str
) -> None:
    options, fragment = SPARK_CASES[case]
    writer = frame.write.format("vectordb").mode("append").option("uri", grpc_server.uri)
    for key, value in options.items():
        writer = writer.option(key, value)
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"PYTHON_DATA_SOURCE_ERROR") as caught:
        writer.save()
    assert "ConfigError" in str(caught.value) and fragment in str(caught.value)
    assert "s3cr3t-k3y" not in str(caught.value)
    assert job_ids(spark) == before
    assert grpc_server.arrived().requests == []


@pytest.mark.parametrize("case", list(PLAN_CASES))
def test_plan_write_names_the_option(frame: Any, grpc_server: ServerHandle, case: str) -> None:
    options, fragment = PLAN_CASES[case]
    with pytest.raises(ConfigError) as caught:
        plan_write({"uri": grpc_server.uri, **options}, frame.schema, overwrite=False)
    assert fragment in str(caught.value)


def test_plan_write_divides_the_budget_and_resolves_paths(
    frame: Any, grpc_server: ServerHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    plan = plan_write(
        {
            "path": grpc_server.uri,
            "max_rows_per_second": "900",
            "budget_tasks": "3",
            "report_path": "rel/dir",
        },
        frame.schema,
        overwrite=False,
    )
    assert plan.options.max_rows_per_second == 300
    assert plan.options.uri == grpc_server.uri
    assert plan.reports is not None and plan.reports.uri == str(tmp_path / "rel" / "dir")
    assert (tmp_path / "rel" / "dir").is_dir()


def test_api_key_env_is_read_once_on_the_driver_for_every_task(
    frame: Any, grpc_server: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VDB_TEST_KEY", raising=False)
    raw = {"uri": grpc_server.uri, "api_key_env": "VDB_TEST_KEY"}
    with pytest.raises(ConfigError, match="option api_key_env: environment variable 'VDB_TEST_KEY'"):
        plan_write(raw, frame.schema, overwrite=False)
    monkeypatch.setenv("VDB_TEST_KEY", "key-read-on-the-driver")
    plan = plan_write(raw, frame.schema, overwrite=False)
    assert plan.options.api_key == "key-read-on-the-driver"  # executors need not have the variable
    assert "key-read-on-the-driver" not in repr(plan)


def test_the_driver_hands_tasks_the_index_dimension_it_learnt(frame: Any, grpc_server: ServerHandle) -> None:
    grpc_server.script(dimension=4)
    plan = plan_write({"uri": grpc_server.uri}, frame.schema, overwrite=False)
    assert (plan.options.dimension, getattr(plan.options, "verify", None)) == (4, False)
    # a sparse index, which reports none: test_pinecone_index_checks.py (a server started as one)


def test_missing_uri_fails_before_any_job(spark: Any, frame: Any) -> None:
    before = job_ids(spark)
    with pytest.raises(Exception, match="option uri is required"):
        frame.write.format("vectordb").mode("append").save()
    assert job_ids(spark) == before


def test_default_save_mode_is_refused_by_spark(spark: Any, frame: Any, grpc_server: ServerHandle) -> None:
    """Spark itself refuses ``errorifexists`` for Python data sources; README says mode("append")."""
    before = job_ids(spark)
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        frame.write.format("vectordb").option("uri", grpc_server.uri).save()
    assert job_ids(spark) == before


def test_overwrite_is_refused_before_any_job(spark: Any, frame: Any, grpc_server: ServerHandle) -> None:
    before = job_ids(spark)
    with pytest.raises(Exception, match="set allow_overwrite=true"):
        frame.write.format("vectordb").option("uri", grpc_server.uri).mode("overwrite").save()
    assert job_ids(spark) == before
    assert grpc_server.arrived().requests == []


def test_streaming_overwrite_is_refused_and_deletes_nothing(frame: Any, grpc_server: ServerHandle) -> None:
    from vectordb.connector import connect

    with connect(grpc_server.uri) as client:
        assert client.upsert(vectors_table(5, 4)).ok
    with pytest.raises(ConfigError, match='outputMode\\("complete"\\) is not supported for streaming'):
        plan_write({"uri": grpc_server.uri, "allow_overwrite": "true"}, frame.schema, True, streaming=True)
    assert len(grpc_server.arrived().ids()) == 5


def test_unwritable_dead_letter_path_is_a_config_error(
    frame: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    options = {"uri": grpc_server.uri, "on_error": "dead_letter", "dead_letter_path": str(blocker / "dead")}
    with pytest.raises(ConfigError, match="option dead_letter_path: cannot write"):
        plan_write(options, frame.schema, overwrite=False)


def test_unreachable_target_fails_before_any_job(spark: Any, frame: Any) -> None:
    closed = f"pinecone://127.0.0.1:{free_port()}"
    before = job_ids(spark)
    with pytest.raises(Exception, match="cannot connect") as caught:
        frame.write.format("vectordb").option("uri", closed).mode("append").save()
    assert "ConnectError" in str(caught.value)
    assert job_ids(spark) == before


def test_a_wrong_key_fails_before_any_job(spark: Any, frame: Any, grpc_server: ServerHandle) -> None:
    grpc_server.script(api_key="the-right-key")
    before = job_ids(spark)
    with pytest.raises(Exception, match="AuthError") as caught:
        frame.write.format("vectordb").option("uri", grpc_server.uri).option("api_key", "a-wrong-key").mode(
            "append"
        ).save()
    assert "a-wrong-key" not in str(caught.value) and "the-right-key" not in str(caught.value)
    assert job_ids(spark) == before
    assert not any(r.outcome == "ok" for r in grpc_server.arrived().requests)


def test_a_key_refused_in_the_tasks_fails_the_job(spark: Any, frame: Any) -> None:
    """With the driver's check off (verify=false), the tasks meet the refusal: the job fails with it.

    Its own server: a task attempt Spark is still cancelling after the job failed may send once more.
    """
    with start_server_process("grpc") as server:
        server.script(api_key="the-right-key")
        with pytest.raises(Exception, match="Invalid API Key"):
            frame.write.format("vectordb").option("uri", server.uri).option("api_key", "a-wrong-key").option(
                "verify", "false"
            ).mode("append").save()
        assert server.arrived().count("ok") == 0


def test_a_column_name_twice_is_a_config_error_naming_it(frame: Any, grpc_server: ServerHandle) -> None:
    from pyspark.sql.types import StructType

    schema = StructType([*frame.schema.fields, frame.schema["title"]])  # as a join of two frames gives it
    with pytest.raises(ConfigError, match="column name\\(s\\) appear more than once: 'title'"):
        plan_write({"uri": grpc_server.uri}, schema, overwrite=False)
