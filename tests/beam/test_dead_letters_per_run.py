"""Each run of ``WriteToVectorDB(on_error="dead_letter")`` writes its own files in ``dead_letter_path``.

The sink wrote ``dead-letters-SSSSS-of-NNNNN.jsonl`` every run: a clean re-run replaced an earlier run's
letters with an empty file, and an earlier run's shards that a run with another shard count did not
overwrite stayed among its letters. Now each run's files are ``dead-letters-<run>-SSSSS-of-NNNNN.jsonl``,
``<run>`` made when the pipeline is built (``WriteToVectorDB.dead_letter_prefix``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.beam import WriteToVectorDB
from vectordb.connector.transports.base import forget_shared

SHARD = re.compile(r"-\d{5}-of-\d{5}\.jsonl$")


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server("rest") as running:
        yield running
        forget_shared()


def _run(server: ServerHandle, folder: Path, elements: list[dict[str, Any]]) -> WriteToVectorDB:
    sink = WriteToVectorDB(server.uri, dimension=3, on_error="dead_letter", dead_letter_path=str(folder))
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = pipeline | beam.Create(elements) | sink
    pipeline.run().wait_until_finish()
    return sink


def _letters_by_run(folder: Path) -> dict[str, list[str]]:
    """The ids of the letters in ``folder``, by file name without its shard numbers."""
    runs: dict[str, list[str]] = {}
    for path in sorted(folder.iterdir()):
        ids = [json.loads(line)["id"] for line in path.read_text().splitlines()]
        runs.setdefault(SHARD.sub("", path.name), []).extend(ids)
    return {run: sorted(ids) for run, ids in runs.items()}


def test_each_run_keeps_its_own_letters(server: ServerHandle, tmp_path: Path) -> None:
    folder = tmp_path / "dead"
    bad = [{"id": "bad1", "values": [1.0, 2.0]}, {"id": "bad2", "values": "x"}]
    first = _run(server, folder, [{"id": "good1", "values": [1.0, 2.0, 3.0]}, *bad])
    second = _run(server, folder, [{"id": "good2", "values": [1.0, 2.0, 3.0]}])  # no letters
    third = _run(server, folder, [{"id": "bad3", "values": [1.0]}])
    runs = _letters_by_run(folder)
    # a clean re-run erased nothing, and each run's files hold its letters alone
    assert sorted(runs.values()) == [[], ["bad1", "bad2"], ["bad3"]]
    prefixes = [sink.dead_letter_prefix for sink in (first, second, third)]
    assert runs == {prefixes[0]: ["bad1", "bad2"], prefixes[1]: [], prefixes[2]: ["bad3"]}
    assert all(prefix.startswith("dead-letters-") for prefix in prefixes)
