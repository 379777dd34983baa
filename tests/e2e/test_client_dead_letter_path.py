"""The plain client's ``on_error="dead_letter"``: ``upsert`` and ``delete`` write the failed rows' letters to
``dead_letter_path`` as JSON Lines, one new file a write, before they return; the report names it. Against
the strict Pinecone-protocol REST server (its ``reject_ids`` script refuses rows server side)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from tests.servers import pinecone_rules
from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import ConfigError, ConnectorError, connect
from vectordb.connector.client import Client, LetteredReport, resolve_options
from vectordb.connector.dead_letters import rows_from_letters
from vectordb.connector.report import WriteReport
from vectordb.connector.transports.base import forget_shared

NAME = re.compile(r"dead-letters-\d{8}T\d{6}Z-[0-9a-f]{8}\.jsonl")


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server("rest", index=pinecone_rules.dense(4)) as handle:
        yield handle
        forget_shared()


def files(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.exists() else []


def read_letters(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rows() -> list[dict[str, object]]:
    return [
        {"id": "good", "values": [0.1, 0.2, 0.3, 0.4], "metadata": {"k": "g"}},
        {"id": "short", "values": [0.1, 0.2, 0.3]},  # refused by the client: another dimension
        {"id": "bad", "values": [0.5, 0.6, 0.7, 0.8], "metadata": {"k": "b"}},  # refused by the server
    ]


def test_upsert_writes_the_failed_rows_letters_and_they_write_again(
    server: ServerHandle, tmp_path: Path
) -> None:
    folder = tmp_path / "letters"
    server.script(reject_ids=frozenset({"bad"}))
    with connect(server.uri, on_error="dead_letter", dead_letter_path=str(folder)) as client:
        report = client.upsert(rows())
    assert (report.written, report.failed) == (1, 2), report
    [path] = files(folder)
    assert NAME.fullmatch(path.name), path.name
    assert isinstance(report, LetteredReport) and report.dead_letter_file == str(path)
    assert report.dead_letters == 2 and str(path) in repr(report) and str(path) in report.summary()
    letters = read_letters(path)
    assert sorted(letter["id"] for letter in letters) == ["bad", "short"]
    assert all(letter["error"] and letter["error_type"] for letter in letters)
    again = rows_from_letters(letters)
    assert sorted(again, key=lambda row: str(row["id"])) == [rows()[2], rows()[1]]
    for row in again:  # fixed: the short vector given its fourth value
        if row["id"] == "short":
            row["values"] = [0.1, 0.2, 0.3, 0.9]
    server.script()  # the server takes "bad" now
    with connect(server.uri) as client:
        assert client.upsert(again).written == 2
    assert server.arrived().ids() == {"good", "short", "bad"}
    assert server.arrived().vector("bad").metadata == {"k": "b"}


def test_each_write_has_its_own_file_and_one_that_all_landed_none(
    server: ServerHandle, tmp_path: Path
) -> None:
    folder = tmp_path / "letters"
    with connect(server.uri, on_error="dead_letter", dead_letter_path=str(folder)) as client:
        first = client.upsert(rows()[:2])
        [one] = files(folder)
        before = one.read_bytes()
        second = client.upsert(rows()[1:2])
        clean = client.upsert(rows()[:1])
    assert first.failed == second.failed == 1
    assert len(files(folder)) == 2 and one.read_bytes() == before
    assert {first.dead_letter_file, second.dead_letter_file} == {str(p) for p in files(folder)}
    assert clean.ok and type(clean) is WriteReport


def test_arrow_input_letters_keep_the_row_columns(server: ServerHandle, tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": ["a", "b"],
            "values": pa.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]], type=pa.list_(pa.float32())),
            "title": ["A", "B"],
            "error": ["the row's own", "its own too"],  # named like the reason: row_error in the letter
        }
    )
    folder = tmp_path / "letters"
    with connect(server.uri, on_error="dead_letter", dead_letter_path=str(folder)) as client:
        report = client.upsert(table)
    [letter] = read_letters(Path(report.dead_letter_file))
    assert letter["id"] == "b" and letter["row_error"] == "its own too" and letter["title"] == "B"
    assert rows_from_letters(letter) == {
        "id": "b",
        "values": [1.0, 2.0],
        "title": "B",
        "error": "its own too",
    }


def test_delete_writes_its_failed_ids_letters(server: ServerHandle, tmp_path: Path) -> None:
    folder = tmp_path / "letters"
    too_long = "x" * 600  # Pinecone takes ids of at most 512 bytes: refused before sending
    with connect(server.uri, on_error="dead_letter", dead_letter_path=str(folder)) as client:
        report = client.delete(["gone", too_long])
    assert (report.deleted, report.failed) == (1, 1), report
    [letter] = read_letters(Path(report.dead_letter_file))
    assert letter["id"] == too_long and letter["op"] == "delete", letter


def test_write_applies_no_policy_and_writes_no_letters(server: ServerHandle, tmp_path: Path) -> None:
    folder = tmp_path / "letters"
    with connect(server.uri, on_error="dead_letter", dead_letter_path=str(folder)) as client:
        report = client.write(rows()[:2])
    assert report.failed == 1 and files(folder) == []


def test_a_path_that_is_no_folder_fails_naming_the_option_before_any_row(
    server: ServerHandle, tmp_path: Path
) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    with pytest.raises(ConfigError, match="option dead_letter_path"):
        connect(server.uri, on_error="dead_letter", dead_letter_path=str(not_a_folder))
    # a Client made from options (as Spark and Beam make theirs) probes it at its first upsert, before sending
    options = resolve_options(
        {"uri": server.uri, "on_error": "dead_letter", "dead_letter_path": str(not_a_folder / "sub")}
    )
    with Client(options) as client, pytest.raises(ConfigError, match="option dead_letter_path"):
        client.upsert(rows()[:1])
    assert server.arrived().requests == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to any folder")
def test_a_folder_without_write_permission_fails_naming_the_option(
    server: ServerHandle, tmp_path: Path
) -> None:
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    with pytest.raises(ConfigError, match="option dead_letter_path"):
        connect(server.uri, on_error="dead_letter", dead_letter_path=str(folder))


def test_a_write_stopped_part_way_writes_the_letters_of_the_rows_failed_before(
    server: ServerHandle, tmp_path: Path
) -> None:
    folder = tmp_path / "letters"
    every = [{"id": f"r{i}", "values": [1.0, 2.0, 3.0, 4.0]} for i in range(60)]
    server.script(reject_ids=frozenset(str(row["id"]) for row in every), reject_named=False)
    with (
        connect(
            server.uri, on_error="dead_letter", dead_letter_path=str(folder), batch_size=5, max_concurrency=1
        ) as client,
        pytest.raises(ConnectorError) as stopped,
    ):  # refused alike one by one: a systemic stop
        client.upsert(every)
    report = stopped.value.report
    assert isinstance(report, LetteredReport) and report.stopped and report.failed > 0
    [path] = files(folder)
    assert report.dead_letter_file == str(path) and any(str(path) in note for note in stopped.value.__notes__)
    letters = read_letters(path)
    assert len(letters) == report.failed and rows_from_letters(letters) == every[: report.failed]


def test_milvus_lite_the_reviewers_case(tmp_path: Path) -> None:
    """The embedded default (a real Milvus Lite server): a row of another dimension fails alone, and its
    letter is in dead_letter_path; fixed, it is written."""
    pytest.importorskip("milvus_lite")
    from vectordb.connector.backends.milvus import lite

    data = str(tmp_path / "dl.db")
    folder = tmp_path / "letters"
    try:
        with connect(
            data, create=True, dimension=4, on_error="dead_letter", dead_letter_path=str(folder)
        ) as client:
            report = client.upsert(
                [{"id": "good", "values": [0.1, 0.2, 0.3, 0.4]}, {"id": "bad", "values": [0.1, 0.2, 0.3]}]
            )
            [path] = files(folder)
            [letter] = read_letters(path)
            assert letter["id"] == "bad" and report.failed == 1 and str(path) in repr(report)
            [row] = rows_from_letters([letter])
            row["values"] = [*row["values"], 0.4]
            assert client.upsert([row]).written == 1 and len(files(folder)) == 1
    finally:
        lite.stop(data)
