"""An import's files and dead letters given one folder: they must not mix.

Both stage per task attempt under the folder; a dead letter published as an import's file (or the other
way round) loses rows or imports letters. So each purpose stages in its own folder, and a write whose
dead_letter_path is import_uri, or holds it, or lies in it, is refused on the driver naming both options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.bulk.test_pinecone_import import assert_imported_exactly, client_for, rows, stage_parts
from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import ConfigError
from vectordb.connector.backends.pinecone_import import finish_import, import_folder
from vectordb.connector.staging import Folder, staged_name


def test_dead_letters_staged_in_the_import_folder_publish_only_themselves(tmp_path: Path) -> None:
    """As Spark's commit does: the job's dead letters are published first, then its import."""
    root = tmp_path / "shared"
    with (
        PineconeImportServer(store_opener()) as server,
        client_for(server, str(root), namespace="docs", on_error="report") as client,
    ):
        staged = stage_parts(
            client, import_folder(client.options), "job-s", {0: rows(10), 1: rows(7, start=10)}
        )
        letters = Folder.parse(str(root), "dead_letter_path")
        for partition in (0, 1):  # as spark/task.py stages a task's dead letters
            with letters.open_output(staged_name("job-s", partition, 0)) as out:
                out.write(b"letter")
        published = letters.publish("job-s", [(0, 0), (1, 0)], lambda _, p: f"job-s-part-{p:05d}.parquet")
        assert list(published) == [""]  # the import's files are not among them
        assert sorted(published[""]) == [
            f"{root}/job-s-part-00000.parquet",
            f"{root}/job-s-part-00001.parquet",
        ]
        assert all(Path(p).read_bytes() == b"letter" for p in published[""])
        report = finish_import(client, staged, [(0, 0), (1, 0)], "job-s")
        assert (report.written, report.failed) == (17, 0), report
        assert_imported_exactly(server, pa.concat_tables([rows(10), rows(7, start=10)]), "docs")


@pytest.mark.parametrize(
    "where", ["the same folder", "inside the import folder", "holding the import folder"]
)
def test_a_dead_letter_path_overlapping_import_uri_is_refused_naming_both(tmp_path: Path, where: str) -> None:
    imports = tmp_path / "imports"
    dead = {
        "the same folder": f"file://{imports}/",
        "inside the import folder": str(imports / "dead"),
        "holding the import folder": str(tmp_path),
    }[where]
    with PineconeImportServer(store_opener()) as server:
        with (
            client_for(
                server, str(imports), namespace="docs", on_error="dead_letter", dead_letter_path=dead
            ) as c,
            pytest.raises(ConfigError) as info,
        ):
            c.bulk.check(c)  # type: ignore[union-attr]
        message = str(info.value)
        assert message.startswith("options import_uri and dead_letter_path: "), message
        assert "same folder or one holds the other" in message
        with client_for(  # beside each other: accepted
            server,
            str(imports),
            namespace="docs",
            on_error="dead_letter",
            dead_letter_path=str(tmp_path / "dead"),
        ) as client:
            client.bulk.check(client)  # type: ignore[union-attr]


def test_spark_refuses_a_dead_letter_path_equal_to_import_uri_before_any_task(
    spark: Any, tmp_path: Path
) -> None:
    """The reviewer's job: 38 good rows and 2 refused ones, one folder for both. Before, the letters' publish
    moved the import's staged files as letters and the import failed blaming shared storage (0 imported)."""
    folder = tmp_path / "both"
    data = rows(40)
    df = spark.createDataFrame(data.drop_columns(["sparse"]).to_pandas()).repartition(2)
    with PineconeImportServer(store_opener()) as server:
        writer = df.write.format("vectordb").mode("append")
        raw = {
            "uri": server.uri,
            "api_key": "k",
            "namespace": "docs",
            "write_mode": "import",
            "import_uri": str(folder),
            "import_poll_s": "0.05",
            "on_error": "dead_letter",
            "dead_letter_path": str(folder),
        }
        for key, value in raw.items():
            writer = writer.option(key, value)
        with pytest.raises(Exception, match="options import_uri and dead_letter_path: ") as info:
            writer.save()
        assert "same folder or one holds the other" in str(info.value)
        assert server.imports.all() == []
        assert not [p for p in folder.rglob("*") if p.is_file()]  # no task ran
