"""A task staging rows for an import holds a bounded amount of them, whatever it stages and into however many
namespaces (DESIGN 3: memory bounded whatever the partition size). The stager gathers rows into row groups; it
held up to 65,536 rows per namespace before writing any (~400 MB each at 1536-d), now at most
``PENDING_BYTES`` across namespaces. Measured as the bytes of the tables it holds after each input batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import connect
from vectordb.connector.backends.pinecone_import import ImportStager, import_folder

DIM, BATCH, BATCHES, NAMESPACES = 1536, 1000, 24, 4  # 24,000 rows: 141 MB of vectors
CAP = 64 * 2**20


def batches() -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(0)
    for n in range(BATCHES):
        matrix = rng.standard_normal((BATCH, DIM), dtype=np.float32)
        yield pa.record_batch(
            {
                "id": [f"r{n * BATCH + i}" for i in range(BATCH)],
                "values": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), DIM),
                "tenant": [f"t{n % NAMESPACES}"] * BATCH,
            }
        )


def test_a_task_holds_at_most_the_cap_across_namespaces_and_stages_every_row(tmp_path: Path) -> None:
    batch_bytes = BATCH * DIM * 4
    held = []
    with (
        PineconeImportServer(store_opener()) as server,
        connect(
            server.uri,
            namespace_column="tenant",
            write_mode="import",
            import_uri=str(tmp_path),
            dimension=DIM,
            verify=False,
            on_error="report",
        ) as client,
    ):
        with ImportStager(client, import_folder(client.options), "job-mem") as stager:
            written = 0
            for batch in batches():
                written += stager.write(batch).written
                held.append(sum(t.nbytes for pieces in stager._pending.values() for t in pieces))
        assert written == BATCH * BATCHES
    assert max(held) <= CAP + batch_bytes, f"held {max(held) / 2**20:.0f} MB"
    files = sorted(tmp_path.rglob("*.parquet"))
    assert [f.parent.name for f in files] == [f"t{n}" for n in range(NAMESPACES)]
    ids = [i for f in files for i in pq.read_table(f, columns=["id"])["id"].to_pylist()]
    assert sorted(ids) == sorted(f"r{i}" for i in range(BATCH * BATCHES))
