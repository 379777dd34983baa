"""The journal the restartable test servers keep: what a server started again holds.

The fault matrix kills the servers between whole entries; these cases cover what it rarely meets:
an entry torn by the kill, and every kind of change the Qdrant store journals.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from tests.servers.restartable import Journal


def f32(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


class _Entry(msgspec.Struct):
    n: int


def test_a_torn_last_entry_is_cut_off_and_the_next_ones_read_back(tmp_path: Path) -> None:
    path = tmp_path / "journal.bin"
    journal: Journal[_Entry] = Journal(path, _Entry)
    journal.append(_Entry(1))
    journal.close()
    whole = path.read_bytes()
    path.write_bytes(whole + (40).to_bytes(4, "little") + b"\x81")  # killed inside the next write

    again: Journal[_Entry] = Journal(path, _Entry)
    again.append(_Entry(2))
    assert [e.n for e in again.entries()] == [1, 2]
    again.close()


def test_the_qdrant_store_holds_every_change_after_a_restart(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client")
    from tests.servers.qdrant_process import JournaledStore
    from tests.servers.qdrant_rest import Incoming, QdrantError

    path = tmp_path / "journal.bin"
    store = JournaledStore(path)
    store.create_collection("c", {"": (2, "Euclid")}, {"sparse"}, False)
    store.create_collection("gone", {"": (2, "Euclid")}, set(), False)
    first = Incoming(1, {"": f32(0.1, 0.2)}, {"sparse": ([3], f32(0.5))}, {"a": 1})
    uid = "5e85dbc1-191f-4ec4-9f59-dc30e8685b42"
    store.upsert("c", [first, Incoming(uid, {"": f32(1, 2)}, {}, None)], None, id_error="rest")
    store.upsert("c", [Incoming(1, {"": f32(0.3, 0.4)}, {}, {"a": 2})], None, id_error="grpc")
    with pytest.raises(QdrantError):  # refused: not journaled
        store.upsert("c", [Incoming(2, {"": f32(1, 2, 3)}, {}, None)], None, id_error="rest")
    store.delete_points("c", [uid], [], None)
    assert store.delete_collection("gone")

    again = JournaledStore(path)
    assert not again.exists("gone")
    points = again.points("c")
    assert list(points) == [1]
    assert points[1].vector().tobytes() == f32(0.3, 0.4).tobytes()
    assert points[1].payload == {"a": 2} and not points[1].sparse
