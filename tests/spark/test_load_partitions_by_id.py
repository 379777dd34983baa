"""``vectordb-load --partitions N`` split the rows round-robin, so an id's upsert and its later delete
(``op_column``) went to different tasks, which run in no order: 96 of 200 ids upserted then deleted were
left stored, and the job reported every row written. The split is by id now (the ``id_from`` columns, else
``--id-column``), so one task writes all of an id's rows, in the order it reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.servers.fixtures import ServerHandle
from vectordb.spark.load import main


def test_an_upsert_then_a_delete_of_each_id_leaves_nothing_with_partitions(
    spark: Any, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    source = tmp_path / "changes.jsonl"
    lines = [{"id": f"u{i}", "values": [1.0, 2.0, 3.0, 4.0], "op": "upsert"} for i in range(200)]
    lines += [{"id": f"u{i}", "values": None, "op": "delete"} for i in range(200)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = ["--input", str(source), "--uri", grpc_server.uri, "--partitions", "4", "--option", "op_column=op"]
    assert main(argv) == 0
    assert grpc_server.arrived().ids() == set()
