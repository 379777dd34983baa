"""README: a pandas DataFrame whose cells Arrow cannot type (2-d numpy arrays as multi-vectors) is read as
its rows as dicts, and ``client.dead_letters(data, report)`` returns its failed rows. The write read such a
frame as dicts, but the letters read it with ``pa.Table.from_pandas`` alone, which raised ``ArrowInvalid``
("Can only convert 1-dimensional array values"): the failures were reported and their rows could not be had.
Now both read the frame one way (``rows.chunks.pandas_table``): the letters are a list of dicts, each
row's cells as they came, and fixed and written again they store what a write of the fixed rows stores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect, rows_from_letters

OPTIONS: dict[str, Any] = {
    "vector_columns": {"title": "t"},
    "multi_vector_columns": {"colbert": "c"},
    "vector_dimensions": {"title": 4, "colbert": 3},
    "create": True,
    "on_error": "report",
}


def frame(bad: bool) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    blocks = [rng.standard_normal((k, 3)).astype(np.float32) for k in (1, 2, 3)]
    if bad:
        blocks[1][0, 0] = np.nan
    titles = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    return pd.DataFrame({"id": ["a", "b", "c"], "t": titles, "c": blocks, "n": [1, None, 3]})


def stored(server: QdrantServer, collection: str) -> dict[str, Any]:
    client = server.client()
    try:
        points, _ = client.scroll(collection, limit=100, with_payload=True, with_vectors=True)
        return {str(p.id): (p.payload, p.vector) for p in points}
    finally:
        client.close()


def test_letters_of_a_frame_arrow_cannot_type_are_its_rows_as_dicts(qdrant_server: QdrantServer) -> None:
    data = frame(bad=True)
    try:
        pa.Table.from_pandas(data, preserve_index=False)
        raise AssertionError("Arrow reads this frame: the test needs one it cannot")
    except pa.ArrowException:
        pass
    with connect(qdrant_server.grpc_uri("letters"), **OPTIONS) as client:
        report = client.write(data)
        assert (report.written, report.failed) == (2, 1)
        letters = client.dead_letters(data, report)
    assert isinstance(letters, list)
    (letter,) = letters
    assert (letter["id"], letter["error_type"], letter["n"]) == ("b", "Invalid", None)  # NaN: missing
    assert letter["error"] == "multi-vector 'colbert' (column 'c'): vector 0 has NaN or infinity at index 0"
    assert isinstance(letter["c"], np.ndarray) and letter["c"].shape == (2, 3)  # the cell as it came
    assert np.array_equal(letter["t"], data["t"][1])


def test_those_letters_fixed_and_written_again_store_what_the_fixed_rows_store(
    qdrant_server: QdrantServer,
) -> None:
    data, fixed_frame = frame(bad=True), frame(bad=False)
    with connect(qdrant_server.grpc_uri("direct"), **OPTIONS) as client:
        assert client.write(fixed_frame).failed == 0
    with connect(qdrant_server.grpc_uri("again"), **OPTIONS) as client:
        letters = client.dead_letters(data, client.write(data))
        fixed = [{**letter, "c": fixed_frame["c"][1]} for letter in letters]
        rows = rows_from_letters(fixed)
        assert [sorted(row) for row in rows] == [["c", "id", "n", "t"]]
        again = client.write(rows)
    assert (again.written, again.failed) == (1, 0)
    assert stored(qdrant_server, "again") == stored(qdrant_server, "direct")
