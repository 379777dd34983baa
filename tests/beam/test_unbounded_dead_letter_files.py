"""``on_error="dead_letter"`` with ``batching="unbounded"`` over bounded input (``vectordb-beam --batching
unbounded --dead_letters DIR``, which the README recommends for exact summaries): the letters are
bounded, so their files are written. The sink refused the pair, as if the input were a stream."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB


def test_unbounded_batching_of_bounded_input_writes_its_dead_letter_files(
    grpc_server: ServerHandle, tmp_path: Path
) -> None:
    grpc_server.script(reject_ids=frozenset({"rej"}))
    folder = tmp_path / "dl"
    elements = [{"id": f"g{i}", "values": [1.0, 2.0, 3.0]} for i in range(5)]
    elements += [{"id": "bad", "values": "not a vector"}, {"id": "rej", "values": [1.0, 2.0, 3.0]}]
    pipeline = beam.Pipeline()  # the DirectRunner
    sink = WriteToVectorDB(
        grpc_server.uri,
        api_key="k",
        dimension=3,
        batching="unbounded",
        on_error="dead_letter",
        dead_letter_path=str(folder),
    )
    _ = pipeline | beam.Create(elements) | sink
    outcome = pipeline.run()
    outcome.wait_until_finish()
    files = sorted(folder.glob(f"{sink.dead_letter_prefix}*.jsonl"))
    letters = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    assert sorted(letter["id"] for letter in letters) == ["bad", "rej"]
    assert {letter["error_type"] for letter in letters} >= {"Invalid"}
    assert sorted(grpc_server.arrived().ids()) == [f"g{i}" for i in range(5)]
    assert all(path.name.startswith(f"{sink.dead_letter_prefix}-") for path in files)
