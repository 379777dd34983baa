"""Text through Spark into Milvus Lite: the embedding options, probed on the driver, embedded in the tasks.

The embeddings server runs in a thread of this process on 127.0.0.1; Spark's Python workers reach it
like any endpoint. Every stored vector is compared exactly with the one the server derives from the
row's text; the rows whose text it refused are exactly the dead letters, with its reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

from tests.embedding.fixtures import embeddings_server, expected_vectors, too_long, words
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer

from .conftest import job_ids

if TYPE_CHECKING:
    from tests.integration.milvus_server import LiteServer

__all__ = ["embeddings_server"]

# the key through --embed-api-key-env (the command refuses --option embed_api_key=KEY: a key in a command line
# shows in ps), its variable set at import, before any JVM starts: the data source's driver code runs in a
# Python worker the JVM started, which sees only the variables set before it
os.environ.setdefault("VDB_TEST_EMBED_KEY", DEFAULT_KEY)

MODEL = "test-embed-64"


def text_table(n: int, bad: set[int]) -> pa.Table:
    texts = [too_long(i) if i in bad else words(i) for i in range(n)]
    return pa.table({"id": [f"t{i}" for i in range(n)], "text": texts, "n": list(range(n))})


def writer(
    spark: Any,
    table: pa.Table,
    server: EmbeddingsServer,
    uri: str,
    collection: str,
    partitions: int = 1,
    **extra: str,
) -> Any:
    options = {
        "uri": uri,
        "collection": collection,
        "text_column": "text",
        "embed_url": server.url,
        "embed_model": MODEL,
        "embed_api_key": DEFAULT_KEY,
        "embed_batch_size": "32",
        "embed_max_concurrency": "4",
    } | extra
    frame = spark.createDataFrame(table)
    # the validation tests take one partition: with adaptive execution a repartition's shuffle runs
    # as a job before the data source's writer is asked, and they check that no job ran
    frame = frame.repartition(partitions) if partitions > 1 else frame
    return frame.write.format("vectordb").options(**options).mode("append")


def test_text_is_embedded_in_the_tasks_and_refused_texts_are_the_dead_letters(
    spark: Any,
    embeddings_server: EmbeddingsServer,
    milvus_lite: LiteServer,
    collection_name: str,
    tmp_path: Path,
) -> None:
    n, bad = 1500, {0, 333, 1024, 1499}
    table = text_table(n, bad)
    dead = tmp_path / "dead"
    writer(
        spark, table, embeddings_server, milvus_lite.uri, collection_name,
        partitions=2, create="true", on_error="dead_letter", dead_letter_path=str(dead),
    ).save()  # fmt: skip
    assert embeddings_server.stats.log[0][1] == 1  # the driver's probe: one input, before any task

    letters = {r["id"]: r.asDict() for r in spark.read.parquet(str(dead)).collect()}
    assert set(letters) == {f"t{i}" for i in bad}
    for i in bad:
        letter = letters[f"t{i}"]
        assert letter["error"].startswith("Rejected: text not embedded: POST ")
        assert "maximum context length is 512 tokens" in letter["error"]
        assert (letter["text"], letter["n"]) == (table.column("text")[i].as_py(), i)

    client = milvus_lite.client
    client.load_collection(collection_name)
    good = [i for i in range(n) if i not in bad]
    rows = client.get(collection_name, ids=[f"t{i}" for i in range(n)], output_fields=["*"])
    got = {row["id"]: row for row in rows}
    assert set(got) == {f"t{i}" for i in good}
    texts = table.column("text").to_pylist()
    expected = expected_vectors([texts[i] for i in good], model=MODEL)
    for k, i in enumerate(good):
        np.testing.assert_array_equal(np.asarray(got[f"t{i}"]["vector"], dtype=np.float32), expected[k])
        assert got[f"t{i}"]["text"] == texts[i]


def test_a_bad_embedding_key_fails_on_the_driver_before_any_job(
    spark: Any, milvus_lite: LiteServer, collection_name: str
) -> None:
    key = "sk-proj-wrong-key-for-spark-0123456789"
    with EmbeddingsServer(echo_key=True) as server:
        write = writer(
            spark, text_table(20, set()), server, milvus_lite.uri, collection_name, embed_api_key=key
        )
        before = job_ids(spark)
        # the error names the option at fault, then the endpoint's words (the echoed key blanked)
        pattern = r"option embed_api_key: POST \S+: HTTP 401: Incorrect API key provided: \*\*\*"
        with pytest.raises(Exception, match=pattern) as info:
            write.save()
        assert server.stats.requests == 1  # the probe, and nothing after it
    assert key not in str(info.value)
    assert job_ids(spark) == before
    assert not milvus_lite.client.has_collection(collection_name)


def test_an_unknown_model_fails_on_the_driver_before_any_job(
    spark: Any, embeddings_server: EmbeddingsServer, milvus_lite: LiteServer, collection_name: str
) -> None:
    write = writer(
        spark,
        text_table(20, set()),
        embeddings_server,
        milvus_lite.uri,
        collection_name,
        embed_model="no-such-model",
    )
    before = job_ids(spark)
    with pytest.raises(
        Exception, match=r"option embed_model \(or embed_url\): .*The model `no-such-model` does not exist"
    ):
        write.save()
    assert job_ids(spark) == before


def test_a_collection_of_another_dimension_than_the_models_fails_on_the_driver(
    spark: Any, embeddings_server: EmbeddingsServer, milvus_lite: LiteServer, collection_name: str
) -> None:
    milvus_lite.client.create_collection(collection_name, dimension=32, id_type="string", max_length=64)
    write = writer(spark, text_table(20, set()), embeddings_server, milvus_lite.uri, collection_name)
    stated = writer(
        spark, text_table(20, set()), embeddings_server, milvus_lite.uri, collection_name, dimension="48"
    )
    before = job_ids(spark)
    with pytest.raises(
        Exception, match=r"option embed_model: 'test-embed-64' answers 64-dimensional vectors.*has dim 32"
    ):
        write.save()
    with pytest.raises(
        Exception, match=r"option embed_model: 'test-embed-64' answers 64-dimensional vectors, not 48"
    ):
        stated.save()
    assert job_ids(spark) == before
    # embed_dimensions asks the model for the collection's dimension: then it fits
    writer(
        spark, text_table(20, set()), embeddings_server, milvus_lite.uri, collection_name,
        embed_model="test-embed-768", embed_dimensions="32",
    ).save()  # fmt: skip
    assert milvus_lite.client.get_collection_stats(collection_name)["row_count"] == 20


def test_a_missing_or_mistyped_text_column_fails_on_the_driver_naming_the_option(
    spark: Any, embeddings_server: EmbeddingsServer, milvus_lite: LiteServer, collection_name: str
) -> None:
    no_text = writer(
        spark, pa.table({"id": ["a"], "body": ["x"]}), embeddings_server, milvus_lite.uri, collection_name
    )
    numbers = writer(
        spark, pa.table({"id": ["a"], "text": [1]}), embeddings_server, milvus_lite.uri, collection_name
    )
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"option text_column: no column 'text' in the input"):
        no_text.save()
    with pytest.raises(Exception, match="option text_column: column 'text' has type int64; expected strings"):
        numbers.save()
    assert job_ids(spark) == before and embeddings_server.stats.requests == 0


# -- the main job -------------------------------------------------------------------------------


def test_ingest_job_embeds_jsonl_and_parquet_text_into_milvus_lite(
    spark: Any,
    embeddings_server: EmbeddingsServer,
    milvus_lite: LiteServer,
    collection_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import orjson
    import pyarrow.parquet as pq

    from vectordb.spark.load import main

    first = text_table(400, {5, 390})
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in first.to_pylist()))
    second = pa.table({"id": [f"p{i}" for i in range(200)], "text": [words(1000 + i) for i in range(200)]})
    pq.write_table(second, tmp_path / "more.parquet")
    common = ["--uri", milvus_lite.uri, "--collection", collection_name, "--text-column", "text"]
    # the key's variable, set at import (VDB_TEST_EMBED_KEY): the data source's driver code runs in a Python
    # worker the JVM started before this test could set it
    common += ["--embed-url", embeddings_server.url, "--embed-model", MODEL]
    common += ["--embed-api-key-env", "VDB_TEST_EMBED_KEY"]

    assert main(["--input", str(jsonl), "--on-error", "report", *common]) == 1  # two texts refused
    out = capsys.readouterr().out
    assert "written:  398 of 400 rows (2 failed)" in out and "maximum context length is 512 tokens" in out
    assert main(["--input", str(tmp_path / "more.parquet"), *common]) == 0
    assert "written:  200 of 200 rows (0 failed)" in capsys.readouterr().out

    client = milvus_lite.client
    client.load_collection(collection_name)
    texts = {row["id"]: row["text"] for row in [*first.to_pylist(), *second.to_pylist()]}
    refused = {"t5", "t390"}
    rows = client.get(collection_name, ids=list(texts), output_fields=["*"])
    got = {row["id"]: np.asarray(row["vector"], dtype=np.float32) for row in rows}
    assert set(got) == set(texts) - refused
    ids = sorted(got)
    np.testing.assert_array_equal(
        np.stack([got[i] for i in ids]), expected_vectors([texts[i] for i in ids], model=MODEL)
    )


def test_ingest_job_wants_the_embedding_arguments_together(tmp_path: Path) -> None:
    from vectordb.spark.load import main

    with pytest.raises(SystemExit) as info:
        main(["--input", str(tmp_path), "--text-column", "text", "--embed-model", MODEL])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["--sample", "10", "--text-column", "t", "--embed-url", "http://h", "--embed-model", MODEL])
