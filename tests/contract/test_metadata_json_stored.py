"""What JSON metadata databases store, written by ``rows.checks.metadata_json`` for every encoder: a
decimal as its exact text, a duration as ISO 8601, and a row holding a value JSON has no form for fails
alone, naming its key, while the others are written (real PostgreSQL and Chroma servers)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.pg_server import pg_server_fixture, pg_table_fixture  # noqa: F401
from tests.payload_values import Opaque
from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.chroma_server import ChromaServer
    from tests.integration.pg_server import PgServer

pytestmark = pytest.mark.timeout(180)

DIM = 3


def rows() -> list[dict[str, Any]]:
    return [
        {"id": "d", "values": [1.0, 0.5, 0.0], "price": decimal.Decimal("1.10"), "took": dt.timedelta(1, 3)},
        {"id": "o", "values": [1.0, 0.5, 0.0], "obj": Opaque()},
        {"id": "s", "values": [1.0, 0.5, 0.0], "tags": {"a"}},
        {"id": "p", "values": [1.0, 0.5, 0.0], "n": 1},
    ]


def check_failures(report: Any) -> None:
    assert report.written == 2, report
    failures = {f.ids[0]: f.error for f in report.failures}
    assert set(failures) == {"o", "s"}
    assert failures["o"].startswith("metadata 'obj' ") and "Opaque" in failures["o"]
    assert failures["s"].startswith("metadata 'tags' ") and "set" in failures["s"]


def test_postgres_stores_decimals_and_durations_as_their_text(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table), create=True, on_error="report") as client:
        check_failures(client.write(rows()))
    with pg_server.connect() as conn:
        stored = dict(conn.execute(f'SELECT id::text, metadata::text FROM "{pg_table}"').fetchall())
    assert stored == {"d": '{"took": "P1DT3S", "price": "1.10"}', "p": '{"n": 1}'}


def test_chroma_stores_decimals_and_durations_as_their_text(
    chroma_server: ChromaServer, chroma_client: Any, chroma_collection: str
) -> None:
    with connect(chroma_server.uri(chroma_collection), create=True, on_error="report") as client:
        check_failures(client.write(rows()))
    got = chroma_client.get_collection(chroma_collection).get(ids=["d", "p"], include=["metadatas"])
    stored = dict(zip(got["ids"], got["metadatas"], strict=True))
    assert stored == {"d": {"price": "1.10", "took": "P1DT3S"}, "p": {"n": 1}}
