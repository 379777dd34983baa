"""A Qdrant-protocol server in its own process, REST and gRPC over one journaled store, which fault
tests SIGKILL and start again on the same two ports holding every change it acknowledged.

``JournaledStore`` is a ``QdrantStore`` that appends each change it applied (a collection created or
deleted, a shard key, an upsert, points deleted) to a ``restartable.Journal`` before the reply goes
out, and applies the journal's changes, through the same code, when it starts. A change the store
refused is not journaled; ``reset`` is not either (it is for tests that do not restart the server).

``RestartableQdrant`` runs ``main`` (``python -m tests.servers.qdrant_process --rest-port R
--grpc-port G --journal FILE``), which announces ``REST`` and ``GRPC``; a restart asks for the same
two ports. Its ``client()`` is the official qdrant-client on them.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from .qdrant_grpc import QdrantGrpcServer
from .qdrant_rest import Incoming, QdrantRestServer, QdrantStore
from .restartable import Journal, RestartableProcess, serve_until_signal

__all__ = ["JournaledStore", "RestartableQdrant", "main"]


class _Created(msgspec.Struct, tag="create"):
    name: str
    vectors: dict[str, tuple[int, str]]
    sparse: list[str]
    custom_sharding: bool
    multi: list[str] = []


class _Dropped(msgspec.Struct, tag="drop"):
    name: str


class _ShardKey(msgspec.Struct, tag="shard_key"):
    name: str
    key: str | int


class _Point(msgspec.Struct, array_like=True):
    id: Any  # as sent: the store normalises it on every apply
    dense: dict[str, bytes]  # little-endian float32
    sparse: dict[str, tuple[list[int], bytes]]
    payload: dict[str, Any] | None
    multi: dict[str, list[bytes]] = {}  # each vector's little-endian float32


class _Upserted(msgspec.Struct, tag="upsert"):
    collection: str
    points: list[_Point]
    shard_key: Any
    id_error: Literal["rest", "grpc"]


class _Deleted(msgspec.Struct, tag="delete"):
    collection: str
    ids: list[Any] | None
    must: list[tuple[str, Any]]
    shard_key: Any


_Entry = _Created | _Dropped | _ShardKey | _Upserted | _Deleted


class JournaledStore(QdrantStore):
    """A ``QdrantStore`` whose changes survive a SIGKILL of its process (the module docstring)."""

    def __init__(self, journal: Path) -> None:
        super().__init__()
        self._journal: Journal[_Entry] = Journal(journal, _Entry)
        for entry in self._journal.entries():
            self._apply(entry)

    def create_collection(
        self,
        name: str,
        vectors: dict[str, tuple[int, str]],
        sparse: set[str],
        custom_sharding: bool,
        multi: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        self._change(_Created(name, vectors, sorted(sparse), custom_sharding, sorted(multi)))

    def delete_collection(self, name: str) -> bool:
        return bool(self._change(_Dropped(name)))

    def create_shard_key(self, name: str, key: str | int) -> None:
        self._change(_ShardKey(name, key))

    def upsert(
        self, collection: str, points: list[Incoming], shard_key: Any, *, id_error: Literal["rest", "grpc"]
    ) -> None:
        kept = [
            _Point(
                p.id,
                {name: v.astype("<f4").tobytes() for name, v in p.dense.items()},
                {name: (idx, vals.astype("<f4").tobytes()) for name, (idx, vals) in p.sparse.items()},
                p.payload,
                {name: [v.astype("<f4").tobytes() for v in vs] for name, vs in p.multi.items()},
            )
            for p in points
        ]
        self._change(_Upserted(collection, kept, shard_key, id_error))

    def delete_points(
        self, collection: str, ids: list[Any] | None, must: list[tuple[str, Any]], shard_key: Any
    ) -> None:
        self._change(_Deleted(collection, ids, must, shard_key))

    def _change(self, entry: _Entry) -> object:
        # applied first: a change the store refuses raises before it is journaled
        with self._journal.lock:
            result = self._apply(entry)
            self._journal.append(entry)
        return result

    def _apply(self, entry: _Entry) -> object:
        """Apply ``entry`` as the store's own method does; its result (whether a dropped collection existed)."""
        if isinstance(entry, _Created):
            super().create_collection(
                entry.name, entry.vectors, set(entry.sparse), entry.custom_sharding, set(entry.multi)
            )
        elif isinstance(entry, _Dropped):
            return super().delete_collection(entry.name)
        elif isinstance(entry, _ShardKey):
            super().create_shard_key(entry.name, entry.key)
        elif isinstance(entry, _Upserted):
            points = [
                Incoming(
                    p.id,
                    {name: np.frombuffer(v, "<f4") for name, v in p.dense.items()},
                    {name: (idx, np.frombuffer(vals, "<f4")) for name, (idx, vals) in p.sparse.items()},
                    p.payload,
                    {name: [np.frombuffer(v, "<f4") for v in vs] for name, vs in p.multi.items()},
                )
                for p in entry.points
            ]
            super().upsert(entry.collection, points, entry.shard_key, id_error=entry.id_error)
        else:
            super().delete_points(entry.collection, entry.ids, entry.must, entry.shard_key)
        return None


class RestartableQdrant(RestartableProcess):
    """The journaled REST and gRPC server in its own process, which a test may ``kill`` and ``start``
    again on the same ports and journal."""

    module = __name__
    announced = ("REST", "GRPC")

    def __init__(self, journal: Path) -> None:
        super().__init__()
        self.journal = journal

    def arguments(self) -> list[str]:
        rest, grpc = self.ports.get("REST", 0), self.ports.get("GRPC", 0)  # 0: any free port, then kept
        return ["--rest-port", str(rest), "--grpc-port", str(grpc), "--journal", str(self.journal)]

    @property
    def rest_host(self) -> str:
        return f"127.0.0.1:{self.ports['REST']}"

    @property
    def grpc_host(self) -> str:
        return f"127.0.0.1:{self.ports['GRPC']}"

    def uri(self, transport: Literal["rest", "grpc"], collection: str) -> str:
        """The connector's URI: ``qdrant://127.0.0.1:R/c`` or ``qdrant+grpc://127.0.0.1:G/c``."""
        if transport == "grpc":
            return f"qdrant+grpc://{self.grpc_host}/{collection}"
        return f"qdrant://{self.rest_host}/{collection}"

    def client(self, *, prefer_grpc: bool = False) -> Any:
        """The official client on both ports (``prefer_grpc`` picks the transport it uses)."""
        from qdrant_client import QdrantClient

        with warnings.catch_warnings():  # check_compatibility=False: no version check to warn about
            warnings.simplefilter("ignore", UserWarning)
            return QdrantClient(
                host="127.0.0.1",
                port=self.ports["REST"],
                grpc_port=self.ports["GRPC"],
                prefer_grpc=prefer_grpc,
                https=False,
                check_compatibility=False,  # tested apart, against the in-thread server
                timeout=10,
            )


def main(argv: list[str] | None = None) -> None:
    """Serve REST and gRPC over a ``JournaledStore`` until SIGTERM (``RestartableQdrant`` starts this)."""
    parser = argparse.ArgumentParser(description="A journaled Qdrant-protocol test server, REST and gRPC")
    parser.add_argument("--rest-port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--grpc-port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--journal", type=Path, required=True, help="journal changes here; start from it")
    args = parser.parse_args(argv)
    store = JournaledStore(args.journal)
    grpc_server = QdrantGrpcServer(args.grpc_port, store)
    with QdrantRestServer(args.rest_port, store) as rest:
        grpc_server.start()
        try:
            serve_until_signal(REST=rest.port, GRPC=grpc_server.port)
        finally:
            grpc_server.stop()


if __name__ == "__main__":
    main()
