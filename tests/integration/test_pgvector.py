"""PostgreSQL + pgvector: the contract suite and pgvector's own behaviour, against a real embedded server.

Every write goes through ``vectordb.connector``; every check reads the table back with psycopg
directly (vectors as ``real[]``, an independent route from the binary COPY that wrote them).
Failures are real server behaviour: values PostgreSQL refuses, a wrong password, triggers that
sleep past the statement timeout or raise a deadlock once.
"""

from __future__ import annotations

import struct
import threading
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.contract.suite import BackendContract, StoredRow, Target
from vectordb.connector import AuthError, ConfigError, ConnectError, connect
from vectordb.connector.backends.pgvector import (
    PgTarget,
    PgvectorBackend,
    PgvectorOptions,
    TableName,
    default_layout,
    delete_sql,
    encode_copy,
    truncate_sql,
)
from vectordb.connector.backends.pgvector.backend import array_literal
from vectordb.connector.errors import (
    NotFound,
    Rejected,
    ServerError,
    ServerTimedOut,
    Throttled,
    TransportError,
    Unavailable,
)
from vectordb.connector.rows import RowBatch
from vectordb.connector.transports.base import forget_shared
from vectordb.connector.transports.postgres import error_for

from .pg_server import LOADER, LOADER_PASSWORD, PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

DIM = 8


def read_rows(server: PgServer, table: str) -> dict[str, StoredRow]:
    with server.connect() as conn:
        rows = conn.execute(f'SELECT id::text, embedding::real[], metadata FROM "{table}"').fetchall()
    return {
        row_id: StoredRow(None if vec is None else np.asarray(vec, dtype=np.float32), meta or {})
        for row_id, vec, meta in rows
    }


def sql(server: PgServer, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []


def rows_of(n: int, *, prefix: str = "g", dim: int = DIM, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [
        {"id": f"{prefix}{i}", "values": rng.standard_normal(dim, dtype=np.float32), "n": i} for i in range(n)
    ]


class TestPgvectorContract(BackendContract):
    dim = DIM

    @pytest.fixture
    def target(self, pg_server: PgServer, pg_table: str) -> Target:
        return Target(
            uri=pg_server.uri(pg_table),
            read_back=lambda: read_rows(pg_server, pg_table),
            options={"create": True},
        )


# -- the table -----------------------------------------------------------------------------------


def test_create_makes_the_documented_table_and_no_ann_index(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table), create=True) as client:
        assert client.write(rows_of(5)).written == 5
    columns = sql(
        pg_server,
        "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        pg_table,
    )
    assert columns == [
        ("id", "text", True),
        ("embedding", f"vector({DIM})", False),
        ("metadata", "jsonb", False),
    ]
    indexes = sql(pg_server, "SELECT indexdef FROM pg_indexes WHERE tablename = %s", pg_table)
    assert (
        len(indexes) == 1 and "UNIQUE" in indexes[0][0] and "(id)" in indexes[0][0]
    )  # the key, no ANN index


def test_missing_table_without_create_names_the_table_and_the_option(
    pg_server: PgServer, pg_table: str
) -> None:
    with connect(pg_server.uri(pg_table)) as client, pytest.raises(ConfigError) as caught:
        client.write(rows_of(3))
    assert pg_table in str(caught.value) and "create=true" in str(caught.value)


def test_rows_of_another_dimension_fail_and_a_stated_one_is_a_config_error(
    pg_server: PgServer, pg_table: str
) -> None:
    sql(pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector(4), metadata jsonb)')
    with connect(pg_server.uri(pg_table)) as client:
        report = client.write(rows_of(3))
    assert (report.written, report.failed) == (0, 3)
    assert {f.error for f in report.failures} == {f"vector has {DIM} dimensions; expected 4"}
    with (
        connect(pg_server.uri(pg_table), dimension=DIM) as client,
        pytest.raises(ConfigError, match="dimension mismatch"),
    ):
        client.write(rows_of(3))
    assert sql(pg_server, f'SELECT count(*) FROM "{pg_table}"') == [(0,)]


def test_table_without_a_unique_id_is_refused(pg_server: PgServer, pg_table: str) -> None:
    sql(pg_server, f'CREATE TABLE "{pg_table}" (id text, embedding vector({DIM}), metadata jsonb)')
    with connect(pg_server.uri(pg_table)) as client, pytest.raises(ConfigError, match="ON CONFLICT"):
        client.write(rows_of(3))


def test_existing_table_columns_are_learnt(pg_server: PgServer, pg_table: str) -> None:
    """Other names and extra columns: the one vector column is found, untouched columns keep defaults."""
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id bigint PRIMARY KEY, created timestamptz NOT NULL DEFAULT now(), '
        f"vec halfvec({DIM}), attrs jsonb)",
    )
    rows = [{"id": i, "values": [i + 0.5] * DIM, "tag": "x"} for i in range(6)]
    rows.append({"id": "not-a-number", "values": [1.0] * DIM})
    with connect(pg_server.uri(pg_table)) as client:
        report = client.write(rows)
    assert report.written == 6 and report.failed_ids == ["not-a-number"]
    assert "bigint" in report.failures[0].error  # PostgreSQL's reason: invalid input syntax for type bigint
    stored = sql(
        pg_server, f'SELECT id, vec::real[], attrs, created IS NOT NULL FROM "{pg_table}" ORDER BY id'
    )
    assert [r[0] for r in stored] == list(range(6))
    assert stored[3][1] == [3.5] * DIM and stored[3][2] == {"tag": "x"} and stored[3][3]


def test_bigint_ids_with_create(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table), create=True, id_type="bigint") as client:
        assert client.write([{"id": 2**40 + i, "values": [1.0] * DIM} for i in range(3)]).ok
    assert sql(pg_server, f'SELECT pg_typeof(id)::text, min(id) FROM "{pg_table}" GROUP BY 1') == [
        ("bigint", 2**40)
    ]


# -- what PostgreSQL refuses -----------------------------------------------------------------------


def test_rows_postgres_refuses_fail_alone_with_its_reason(pg_server: PgServer, pg_table: str) -> None:
    """One whole-batch COPY is refused; the engine bisects down to the two rows at fault."""
    rows = rows_of(20, prefix="b")
    rows[7]["note"] = "nul \x00 in jsonb"
    rows[13]["id"] = "nul\x00id"
    with connect(pg_server.uri(pg_table), create=True) as client:
        report = client.write(rows)
    assert report.written == 18
    assert sorted(report.failed_ids) == ["b7", "nul\x00id"]
    reasons = {f.ids[0]: f for f in report.failures}
    assert (
        reasons["b7"].error_type == "Rejected"
        and "\\u0000 cannot be converted to text" in reasons["b7"].error
    )
    assert 'invalid byte sequence for encoding "UTF8": 0x00' in reasons["nul\x00id"].error
    assert set(read_rows(pg_server, pg_table)) == {f"b{i}" for i in range(20)} - {"b7", "b13"}


def test_statement_timeout_is_a_deadline(pg_server: PgServer, pg_table: str) -> None:
    sql(
        pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector({DIM}), metadata jsonb)'
    )
    sql(
        pg_server,
        f"CREATE FUNCTION {pg_table}_slow() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$",
    )
    sql(
        pg_server,
        f'CREATE TRIGGER slow BEFORE INSERT ON "{pg_table}" FOR EACH ROW EXECUTE FUNCTION {pg_table}_slow()',
    )
    started = time.monotonic()
    with connect(pg_server.uri(pg_table), timeout_s=0.3, max_retries=0) as client:
        report = client.write(rows_of(2))
    assert time.monotonic() - started < 3.5  # the server cancelled the statement: not 2 rows' 2 s sleeps
    assert report.written == 0 and report.failures[0].error_type == "ServerTimedOut"
    assert "57014" in report.failures[0].error and report.failures[0].retryable
    # the server rolled the statement back: nothing may be stored, unlike a reply that never came
    assert "may be stored" not in report.failures[0].error
    assert sql(pg_server, f'SELECT count(*) FROM "{pg_table}"') == [(0,)]


def test_deadlock_is_retried(pg_server: PgServer, pg_table: str) -> None:
    """A trigger raises deadlock_detected on the first batch only: the engine retries and all rows land."""
    sql(
        pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector({DIM}), metadata jsonb)'
    )
    sql(pg_server, f"CREATE SEQUENCE {pg_table}_calls")
    sql(
        pg_server,
        f"CREATE FUNCTION {pg_table}_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF nextval('{pg_table}_calls') = 1 THEN RAISE EXCEPTION 'scripted' USING ERRCODE = '40P01'; END IF; "
        "RETURN NEW; END $$",
    )
    sql(
        pg_server,
        f'CREATE TRIGGER once BEFORE INSERT ON "{pg_table}" FOR EACH ROW EXECUTE FUNCTION {pg_table}_once()',
    )
    with connect(pg_server.uri(pg_table)) as client:
        report = client.write(rows_of(10))
    assert report.ok and report.written == 10 and report.retries == 1
    assert len(read_rows(pg_server, pg_table)) == 10


def test_concurrent_writers_of_the_same_ids_all_land(pg_server: PgServer, pg_table: str) -> None:
    """Two clients upsert the same ids in small concurrent batches: ON CONFLICT merges them, nothing fails."""
    with connect(pg_server.uri(pg_table), create=True) as client:
        client.write(rows_of(1))
    reports: list[Any] = []

    def load(seed: int) -> None:
        with connect(pg_server.uri(pg_table), batch_size=25, max_concurrency=3) as client:
            reports.append(client.write(rows_of(300, seed=seed)))

    threads = [threading.Thread(target=load, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.written for r in reports] == [300, 300] and all(r.ok for r in reports)
    assert len(read_rows(pg_server, pg_table)) == 300


# -- namespaces and sparse vectors -------------------------------------------------------------


def test_namespace_fills_its_column_and_is_part_of_the_key(pg_server: PgServer, pg_table: str) -> None:
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True, namespace="tenant-a") as client:
        assert client.write(rows_of(4)).ok
    with connect(uri, namespace="tenant-b") as client:
        assert client.write(rows_of(2)).ok
    with connect(uri, namespace_column="ns") as client:
        assert client.write([{"id": "g0", "values": [9.0] * DIM, "ns": "tenant-a"}]).ok
    counts = sql(pg_server, f'SELECT namespace, count(*) FROM "{pg_table}" GROUP BY 1 ORDER BY 1')
    assert counts == [("tenant-a", 4), ("tenant-b", 2)]
    replaced = sql(
        pg_server, f"SELECT embedding::real[] FROM \"{pg_table}\" WHERE namespace = 'tenant-a' AND id = 'g0'"
    )
    assert replaced == [([9.0] * DIM,)]
    key = sql(pg_server, "SELECT indexdef FROM pg_indexes WHERE tablename = %s", pg_table)[0][0]
    assert "(namespace, id)" in key


def test_namespace_without_a_column_is_a_config_error(pg_server: PgServer, pg_table: str) -> None:
    sql(
        pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector({DIM}), metadata jsonb)'
    )
    with (
        connect(pg_server.uri(pg_table), namespace="x") as client,
        pytest.raises(ConfigError, match="namespace"),
    ):
        client.write(rows_of(2))


def test_sparse_vectors_land_in_a_sparsevec_column(pg_server: PgServer, pg_table: str) -> None:
    rows = [
        {"id": "both", "values": [0.5] * DIM, "sparse": {"indices": [0, 7, 99], "values": [1.5, -2.0, 0.25]}},
        {"id": "dense", "values": [0.25] * DIM},
        {"id": "sparse-only", "sparse": {"indices": [3], "values": [4.0]}},
    ]
    with connect(
        pg_server.uri(pg_table), create=True, sparse_column="sparse", sparse_dimension=100
    ) as client:
        report = client.write(rows)
    assert report.ok and report.written == 3, report
    stored = dict(sql(pg_server, f'SELECT id, sparse_embedding::text FROM "{pg_table}"'))
    # pgvector's text form counts from 1; the binary form the connector sends counts from 0
    assert stored == {"both": "{1:1.5,8:-2,100:0.25}/100", "dense": None, "sparse-only": "{4:4}/100"}
    assert read_rows(pg_server, pg_table)["sparse-only"].vector is None


# -- clearing (Client.clear, Spark's overwrite) ----------------------------------------------------


def _make_table(server: PgServer, table: str, *, namespaced: bool = False) -> None:
    ns = "namespace text NOT NULL DEFAULT '', " if namespaced else ""
    key = "namespace, id" if namespaced else "id"
    sql(
        server,
        f'CREATE TABLE "{table}" ({ns}id text NOT NULL, embedding vector({DIM}), metadata jsonb, '
        f"PRIMARY KEY ({key}))",
    )


def test_clear_keeps_the_table_its_index_and_grants_and_the_same_client_writes_again(
    pg_server: PgServer, pg_table: str
) -> None:
    _make_table(pg_server, pg_table)
    sql(pg_server, f'CREATE INDEX "{pg_table}_hnsw" ON "{pg_table}" USING hnsw (embedding vector_l2_ops)')
    sql(pg_server, f'GRANT SELECT ON "{pg_table}" TO {LOADER}')
    schema_sql = (
        "SELECT (SELECT array_agg(indexdef ORDER BY indexdef) FROM pg_indexes WHERE tablename = %s), "
        "(SELECT relacl::text FROM pg_class WHERE relname = %s)"
    )
    before = sql(pg_server, schema_sql, pg_table, pg_table)
    with connect(pg_server.uri(pg_table)) as client:
        assert client.write(rows_of(30)).written == 30
        assert client.clear() == f"all rows of table {pg_table}"
        assert read_rows(pg_server, pg_table) == {}
        assert client.clear() == f"all rows of table {pg_table}"  # an empty table: nothing to do, no error
        assert client.write(rows_of(3, prefix="again")).ok  # the pooled sessions' staging tables still work
    assert sorted(read_rows(pg_server, pg_table)) == ["again0", "again1", "again2"]
    assert sql(pg_server, schema_sql, pg_table, pg_table) == before
    with connect(pg_server.uri(pg_table)) as client:  # a new client, after a clear by another
        client.clear()
        assert client.write(rows_of(2)).ok
    assert sorted(read_rows(pg_server, pg_table)) == ["g0", "g1"]


def test_clear_of_a_missing_table_names_it_and_creates_nothing(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table)) as client, pytest.raises(ConfigError) as caught:
        client.clear()
    assert pg_table in str(caught.value) and "does not exist" in str(caught.value)
    assert sql(pg_server, "SELECT to_regclass(%s)::text", pg_table) == [(None,)]


def test_clear_with_create_makes_an_empty_table(pg_server: PgServer, pg_table: str) -> None:
    """Spark's overwrite of a table that is not there yet: created, cleared (empty), then written."""
    with connect(pg_server.uri(pg_table), create=True, dimension=DIM, namespace="a") as client:
        assert client.clear("a") == f"namespace 'a' of table {pg_table} (0 rows)"
        assert client.write(rows_of(2)).ok
    assert sql(pg_server, f'SELECT namespace, count(*) FROM "{pg_table}" GROUP BY 1') == [("a", 2)]


def test_clear_of_a_namespace_counts_and_keeps_the_rest(pg_server: PgServer, pg_table: str) -> None:
    """Same ids in several namespaces, and rows written without one (stored as '')."""
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True, namespace="a") as client:
        for ns in ("a", "b", "it's"):
            assert client.upsert(rows_of(3), namespace=ns).written == 3
    with connect(uri) as client:
        assert client.write(rows_of(2, prefix="plain")).written == 2
    counts_sql = f'SELECT namespace, count(*) FROM "{pg_table}" GROUP BY 1 ORDER BY 1'
    assert sql(pg_server, counts_sql) == [("", 2), ("a", 3), ("b", 3), ("it's", 3)]
    with connect(uri) as client:
        assert client.clear("it's") == f'namespace "it\'s" of table {pg_table} (3 rows)'
        assert client.clear("a") == f"namespace 'a' of table {pg_table} (3 rows)"
        assert client.clear("a") == f"namespace 'a' of table {pg_table} (0 rows)"
        assert client.clear("") == f"namespace '' of table {pg_table} (2 rows)"
        assert client.clear("nobody") == f"namespace 'nobody' of table {pg_table} (0 rows)"
    assert sql(pg_server, counts_sql) == [("b", 3)]


def test_clear_of_namespace_also_takes_null_rows_when_namespace_is_not_in_the_key(
    pg_server: PgServer, pg_table: str
) -> None:
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, namespace text, embedding vector({DIM}), metadata jsonb)',
    )
    with connect(pg_server.uri(pg_table)) as client:
        assert client.write(rows_of(2, prefix="none")).ok  # namespace NULL
        assert client.upsert(rows_of(3, prefix="x"), namespace="x").ok
        assert client.clear("") == f"namespace '' of table {pg_table} (2 rows)"
    assert sorted(read_rows(pg_server, pg_table)) == ["x0", "x1", "x2"]


def test_clear_of_a_namespace_without_a_namespace_column_deletes_nothing(
    pg_server: PgServer, pg_table: str
) -> None:
    _make_table(pg_server, pg_table)
    with connect(pg_server.uri(pg_table)) as client:
        assert client.write(rows_of(4)).ok
        with pytest.raises(ConfigError, match=f"table {pg_table} has no namespace column"):
            client.clear("a")
    assert len(read_rows(pg_server, pg_table)) == 4


def test_clear_of_a_table_partitioned_by_namespace(pg_server: PgServer, pg_table: str) -> None:
    """A list-partitioned table (one partition per tenant): both clears keep every partition attached."""
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (namespace text NOT NULL, id text NOT NULL, embedding vector({DIM}), '
        "metadata jsonb, PRIMARY KEY (namespace, id)) PARTITION BY LIST (namespace)",
    )
    for ns in ("a", "b"):
        sql(pg_server, f'CREATE TABLE "{pg_table}_{ns}" PARTITION OF "{pg_table}" FOR VALUES IN (\'{ns}\')')
    uri = pg_server.uri(pg_table)
    partitions_sql = f'SELECT tableoid::regclass::text, count(*) FROM "{pg_table}" GROUP BY 1 ORDER BY 1'
    with connect(uri, namespace_column="ns") as client:
        for ns in ("a", "b"):
            assert client.write([{**r, "ns": ns} for r in rows_of(3)]).written == 3
        assert client.clear("a") == f"namespace 'a' of table {pg_table} (3 rows)"
        assert sql(pg_server, partitions_sql) == [(f"{pg_table}_b", 3)]
        assert client.clear() == f"all rows of table {pg_table}"
        assert sql(pg_server, partitions_sql) == []
        assert client.write([{**r, "ns": "a"} for r in rows_of(2)]).written == 2
    assert sql(pg_server, partitions_sql) == [(f"{pg_table}_a", 2)]
    attached = f"SELECT count(*) FROM pg_inherits WHERE inhparent = '\"{pg_table}\"'::regclass"
    assert sql(pg_server, attached) == [(2,)]


def test_clear_without_truncate_privilege_deletes_and_without_delete_is_an_auth_error(
    pg_server: PgServer, pg_table: str
) -> None:
    _make_table(pg_server, pg_table)
    sql(pg_server, f'GRANT SELECT, INSERT, UPDATE, DELETE ON "{pg_table}" TO {LOADER}')
    uri = pg_server.uri(pg_table, user=LOADER, password=LOADER_PASSWORD)
    with connect(uri) as client:
        assert client.write(rows_of(5)).written == 5
        cleared = client.clear()
    assert cleared == f"all rows of table {pg_table} (5 rows, by DELETE: no TRUNCATE privilege)"
    assert read_rows(pg_server, pg_table) == {}
    sql(pg_server, f'REVOKE DELETE ON "{pg_table}" FROM {LOADER}')
    with connect(uri) as client:
        assert client.write(rows_of(2)).written == 2
        with pytest.raises(AuthError) as caught:
            client.clear()
    message = str(caught.value)
    assert f"cannot clear table {pg_table}" in message and "42501" in message
    assert "s3cret" not in message and LOADER_PASSWORD not in message
    assert len(read_rows(pg_server, pg_table)) == 2


def test_clear_of_a_table_another_references_deletes_or_says_why_not(
    pg_server: PgServer, pg_table: str
) -> None:
    """TRUNCATE refuses a table a foreign key points at: DELETE does it, unless rows are still referenced."""
    _make_table(pg_server, pg_table)
    child = f"{pg_table}_child"
    sql(pg_server, f'CREATE TABLE "{child}" (item text REFERENCES "{pg_table}" (id))')
    try:
        with connect(pg_server.uri(pg_table)) as client:
            assert client.write(rows_of(3)).ok
            assert client.clear().endswith("(3 rows, by DELETE: a foreign key references the table)")
            assert client.write(rows_of(3)).ok
            sql(pg_server, f"INSERT INTO \"{child}\" VALUES ('g1')")
            with pytest.raises(Rejected, match=f"cannot clear table {pg_table}: .*23503"):
                client.clear()
        assert len(read_rows(pg_server, pg_table)) == 3  # the failed DELETE rolled back whole
    finally:
        sql(pg_server, f'DROP TABLE "{child}"')


def test_clear_waits_for_a_lock_no_longer_than_timeout_s(pg_server: PgServer, pg_table: str) -> None:
    """A reader's open transaction holds the table: TRUNCATE gives up after timeout_s instead of queueing
    (and, with no retries left, the clear fails with the reason)."""
    _make_table(pg_server, pg_table)
    with connect(pg_server.uri(pg_table)) as setup:  # the rows written without the 0.3 s limit under test
        assert setup.write(rows_of(4)).ok
    with connect(pg_server.uri(pg_table), timeout_s=0.3, max_retries=0) as client:
        with pg_server.connect() as reader:
            with reader.transaction():
                reader.execute(f'SELECT count(*) FROM "{pg_table}"').fetchall()  # ACCESS SHARE until the end
                started = time.monotonic()
                with pytest.raises(Unavailable) as caught:
                    client.clear()
                assert time.monotonic() - started < 5.0  # gave up, not queued behind the reader
            assert "55P03" in str(caught.value) and f"cannot clear table {pg_table}" in str(caught.value)
            assert len(read_rows(pg_server, pg_table)) == 4  # nothing was cleared
            assert client.clear() == f"all rows of table {pg_table}"  # the pooled connection is fine
        assert client.write(rows_of(1)).ok
    assert sorted(read_rows(pg_server, pg_table)) == ["g0"]


def test_deleting_a_namespace_behind_a_row_lock_gives_up_after_timeout_s(
    pg_server: PgServer, pg_table: str
) -> None:
    """Deletes, like every statement, wait for a lock at most timeout_s: a held row fails the clear with why."""
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True, namespace="a") as setup:  # the rows written without the 0.3 s limit
        assert setup.upsert(rows_of(3), namespace="a").written == 3
    with connect(uri, namespace="a", timeout_s=0.3, max_retries=0) as client, pg_server.connect() as other:
        with other.transaction():
            other.execute(f'SELECT id FROM "{pg_table}" WHERE id = %s FOR UPDATE', ("g1",)).fetchall()
            started = time.monotonic()
            with pytest.raises(Unavailable) as caught:
                client.clear("a")
            assert time.monotonic() - started < 5.0  # gave up, not queued behind the lock
        assert "55P03" in str(caught.value) and f"cannot clear table {pg_table}" in str(caught.value)
        assert len(read_rows(pg_server, pg_table)) == 3  # the DELETE rolled back whole
        assert client.clear("a") == f"namespace 'a' of table {pg_table} (3 rows)"


def test_a_clear_held_up_by_a_lock_is_retried_like_a_write(pg_server: PgServer, pg_table: str) -> None:
    """Control-plane statements retry retryable failures as upserts do: a TRUNCATE that meets a reader's
    lock is tried again, and lands once the reader is done."""
    _make_table(pg_server, pg_table)
    with connect(pg_server.uri(pg_table), timeout_s=0.3, max_retries=8) as client:
        assert client.write(rows_of(4)).ok
        reader = pg_server.connect()
        transaction = reader.transaction()
        transaction.__enter__()
        reader.execute(f'SELECT count(*) FROM "{pg_table}"').fetchall()  # ACCESS SHARE until it ends
        release = threading.Timer(0.8, lambda: (transaction.__exit__(None, None, None), reader.close()))
        started = (
            time.monotonic()
        )  # before the timer starts: the reader holds the lock 0.8 s from here at least
        release.start()
        try:
            assert client.clear() == f"all rows of table {pg_table}"
            assert time.monotonic() - started > 0.6  # it did wait for the reader, through retries
        finally:
            release.join()
    assert read_rows(pg_server, pg_table) == {}


def test_a_lock_timeout_set_in_the_uri_is_kept(pg_server: PgServer, pg_table: str) -> None:
    """The user's own lock_timeout (libpq options) wins over timeout_s: the clear waits that long."""
    uri = pg_server.uri(pg_table) + "&options=-c%20lock_timeout%3D1200"
    with connect(uri, create=True, namespace="a", timeout_s=0.2, max_retries=0) as client:
        assert client.upsert(rows_of(3), namespace="a").written == 3
        with pg_server.connect() as other, other.transaction():
            other.execute(f'SELECT id FROM "{pg_table}" WHERE id = %s FOR UPDATE', ("g1",)).fetchall()
            started = time.monotonic()
            with pytest.raises(Unavailable, match="55P03"):
                client.clear("a")
            assert 1.1 < time.monotonic() - started < 5.0


def test_installing_pgvector_behind_another_install_is_retryable_not_a_config_error(
    pg_server: PgServer, pg_table: str
) -> None:
    """A CREATE EXTENSION that waits on another session's is a lock timeout, not a missing privilege."""
    database = pg_table.replace("t_", "db_", 1)
    sql(pg_server, f'CREATE DATABASE "{database}"')
    try:
        uri = pg_server.uri(pg_table).replace("/postgres?", f"/{database}?")
        other = psycopg_connect(pg_server, database)
        try:
            with other.transaction():
                other.execute("CREATE EXTENSION vector")  # not committed while the client tries
                with (
                    connect(uri, create=True, timeout_s=0.3) as client,
                    pytest.raises(Unavailable, match="55P03"),
                ):
                    client.upsert(rows_of(2))
            with connect(uri, create=True) as client:  # and once the other session is done
                assert client.upsert(rows_of(2)).written == 2
        finally:
            other.close()
    finally:
        forget_shared()
        sql(pg_server, f'DROP DATABASE "{database}" WITH (FORCE)')


def psycopg_connect(server: PgServer, database: str) -> Any:
    """An autocommit connection to another database of the test server."""
    import psycopg

    return psycopg.connect(f"postgresql://postgres@/{database}?host={server.socket_dir}", autocommit=True)


def test_clear_sql() -> None:
    layout = default_layout(
        TableName("s", 'we"ird'), PgvectorOptions(uri="postgresql:///db", namespace="x"), 4
    )
    assert truncate_sql(layout.table) == 'TRUNCATE TABLE "s"."we""ird"'
    assert delete_sql(layout, "a") == (
        'WITH gone AS (DELETE FROM "s"."we""ird" WHERE "namespace" = %s RETURNING 1) SELECT count(*) FROM gone'
    )
    assert delete_sql(layout, None).startswith('WITH gone AS (DELETE FROM "s"."we""ird" RETURNING 1)')
    assert 'WHERE "namespace" = %s OR "namespace" IS NULL' in delete_sql(layout, "")


# -- the binary COPY itself ------------------------------------------------------------------------


SPECIAL = np.array(
    [0.0, -0.0, 1e-45, -1e-45, 1.1754944e-38, 3.4028235e38, -3.4028235e38, 1 / 3, np.pi, -2.5e-7],
    dtype=np.float32,
)


def test_copy_bytes_are_parsed_into_the_same_float32_values(pg_server: PgServer) -> None:
    """The stream ``encode_copy`` makes, fed to PostgreSQL by psycopg alone, holds bit-identical vectors."""
    rng = np.random.default_rng(7)
    matrix = np.vstack([SPECIAL, rng.standard_normal((50, SPECIAL.size), dtype=np.float32) * 1e3])
    backend = PgvectorBackend(PgvectorOptions(uri="postgresql:///postgres?table=items"))
    batch = RowBatch(
        ids=[f"v{i}" for i in range(len(matrix))], vectors=matrix, metadata=[{"i": i} for i in range(51)]
    )
    body = encode_copy(batch, backend.layout)
    with pg_server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE copied (v vector, id text, m jsonb)")
        with cur.copy("COPY copied (v, id, m) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(body)
        stored = cur.execute("SELECT id, v::real[], m FROM copied").fetchall()
    assert len(stored) == 51
    for row_id, values, meta in stored:
        i = int(row_id[1:])
        got = np.asarray(values, dtype=np.float32)
        np.testing.assert_array_equal(got.view(np.uint32), matrix[i].view(np.uint32))  # -0.0 stays -0.0
        assert meta == {"i": i}


def test_written_vectors_are_bit_identical(pg_server: PgServer, pg_table: str) -> None:
    with connect(pg_server.uri(pg_table), create=True) as client:
        assert client.write([{"id": "special", "values": SPECIAL}]).ok
    stored = read_rows(pg_server, pg_table)["special"].vector
    assert stored is not None
    np.testing.assert_array_equal(stored.view(np.uint32), SPECIAL.view(np.uint32))


def test_pgvector_binary_layout() -> None:
    """int16 dim, int16 unused, big-endian float32: checked byte by byte on one row."""
    layout = PgvectorBackend(PgvectorOptions(uri="postgres://h/db?table=t")).layout
    body = encode_copy(RowBatch(ids=["a"], vectors=np.array([[1.5, -2.0]], dtype=np.float32)), layout)
    assert body.startswith(b"PGCOPY\n\xff\r\n\x00" + bytes(8)) and body.endswith(b"\xff\xff")
    row = body[19:-2]
    assert row[:2] == struct.pack(">h", 3)  # vector, id, metadata
    assert row[2:18] == struct.pack(">ihhff", 12, 2, 0, 1.5, -2.0)
    assert row[18:23] == struct.pack(">i", 1) + b"a"
    assert row[23:] == struct.pack(">i", 3) + b"\x01{}"


# -- connecting, credentials, URIs -----------------------------------------------------------------


def _failed_logins(server: PgServer) -> int:
    return server.log_path.read_text(errors="replace").count(
        f'password authentication failed for user "{LOADER}"'
    )


def test_bad_password_is_an_auth_error_at_once(pg_server: PgServer, pg_table: str) -> None:
    before = _failed_logins(pg_server)
    started = time.monotonic()
    uri = pg_server.uri(pg_table, user=LOADER, password="wrong-Pw")
    with connect(uri, create=True) as client, pytest.raises(AuthError) as caught:
        client.write(rows_of(50))
    assert time.monotonic() - started < 5.0  # at once: no retries of a refused password (each waits seconds)
    assert "password authentication failed" in str(caught.value) and "wrong-Pw" not in str(caught.value)
    deadline = time.monotonic() + 2
    while _failed_logins(pg_server) == before and time.monotonic() < deadline:
        time.sleep(0.02)  # the server writes its log line asynchronously
    assert _failed_logins(pg_server) == before + 1  # one login attempt: no retry storm


@pytest.mark.parametrize("given", ["in-uri", "as-api-key", "from-api-key-env"])
def test_right_password_writes_and_is_never_shown(
    pg_server: PgServer, pg_table: str, given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_uri = given == "in-uri"
    uri = pg_server.uri(pg_table, user=LOADER, password=LOADER_PASSWORD if in_uri else None)
    options = {"as-api-key": {"api_key": LOADER_PASSWORD}, "from-api-key-env": {"api_key_env": "VDB_TEST_PG"}}
    monkeypatch.setenv("VDB_TEST_PG", LOADER_PASSWORD)
    with connect(uri, create=True, **options.get(given, {})) as client:
        assert client.write(rows_of(3)).written == 3
        shown = f"{client!r} {client.backend.describe()} {client.engine.transport!r}"
    assert "s3cret" not in shown and ("***" in shown) == in_uri
    assert len(read_rows(pg_server, pg_table)) == 3


def test_unreachable_server_is_a_connect_error(pg_server: PgServer) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    for uri in (
        f"postgresql://postgres@127.0.0.1:{port}/postgres?table=t",
        "postgres:///db?host=/nonexistent&table=t",
    ):
        started = time.monotonic()  # retried as any control call is: max_retries=0 keeps it to one try
        with connect(uri, max_retries=0) as client, pytest.raises(ConnectError):
            client.write(rows_of(2))
        assert time.monotonic() - started < 5.0


def test_uri_parsing_strips_table_and_masks_passwords() -> None:
    target = PgTarget.parse(
        "postgres://u:p%40ss@db.example:6543/app?sslmode=require&table=public.items", None
    )
    assert target.conninfo == "postgresql://u:p%40ss@db.example:6543/app?sslmode=require"
    assert (target.table.schema, target.table.name, target.table.sql) == (
        "public",
        "items",
        '"public"."items"',
    )
    assert "p%40ss" not in target.label and target.label.startswith("postgres://u:***@db.example:6543/app")
    socket_target = PgTarget.parse("postgresql:///app?host=/run/pg&password=xyz", "items")
    assert socket_target.conninfo == "postgresql:///app?host=/run/pg&password=xyz"
    assert "xyz" not in socket_target.label
    # TLS: required off this machine unless turned off by name; the URI's own sslmode wins
    assert PgTarget.parse("postgresql://u@db.example/app?table=t", None).conninfo.endswith("?sslmode=require")
    assert PgTarget.parse("postgresql://u@db.example/app?table=t", None, False).conninfo.endswith(
        "sslmode=disable"
    )
    assert "sslmode" not in PgTarget.parse("postgresql://u@127.0.0.1/app?table=t", None).conninfo
    assert "sslmode" not in PgTarget.parse("postgresql:///app?host=/run/pg&table=t", None).conninfo
    assert PgTarget.parse("postgresql:///app?host=db.example&table=t", None).conninfo.endswith(
        "sslmode=require"
    )
    assert PgTarget.parse("postgresql://u@127.0.0.1/app?table=t", None, True).conninfo.endswith(
        "sslmode=require"
    )
    with pytest.raises(ConfigError, match="name the table"):
        PgTarget.parse("postgresql://h/db", None)
    with pytest.raises(ConfigError, match="disagree"):
        PgTarget.parse("postgresql://h/db?table=a", "b")
    with pytest.raises(ConfigError, match="postgresql://"):
        PgTarget.parse("postgresql+grpc://h/db?table=a", None)


class _Diag:
    def __init__(self, primary: str) -> None:
        self.message_primary, self.message_detail, self.context = primary, None, None


class _PgError(Exception):
    def __init__(self, sqlstate: str | None, text: str = "boom") -> None:
        super().__init__(text)
        self.sqlstate, self.diag = sqlstate, _Diag(text)


@pytest.mark.parametrize(
    ("sqlstate", "kind"),
    [
        ("22P05", Rejected),
        ("23502", Rejected),
        ("54000", Rejected),
        ("40001", Unavailable),
        ("40P01", Unavailable),
        ("57P01", Unavailable),
        ("57014", ServerTimedOut),
        ("53300", Throttled),
        ("28P01", AuthError),
        ("42501", AuthError),
        ("42P01", NotFound),
        ("ZZ999", ServerError),
    ],
)
def test_sqlstates_map_to_connector_errors(sqlstate: str, kind: type[Exception]) -> None:
    error = error_for(_PgError(sqlstate), "pg")
    assert type(error) is kind and sqlstate in str(error)


def test_every_sqlstate_class_is_classed_on_purpose() -> None:
    """Each SQLSTATE class PostgreSQL defines (as psycopg lists them) has its entry; success and warnings aside."""
    import re

    import psycopg.errors

    from vectordb.connector.transports.postgres import ERROR_BY_CLASS

    classes = {code[:2] for code in psycopg.errors._sqlcodes if re.fullmatch(r"[0-9A-Z]{5}", code)}
    assert classes - {"00", "01"} <= set(ERROR_BY_CLASS), "classify the new SQLSTATE classes in postgres.py"


@pytest.mark.parametrize(
    ("message", "connecting", "kind"),
    [
        ('FATAL:  password authentication failed for user "x"', True, AuthError),
        ('FATAL:  role "x" does not exist', True, AuthError),
        ('FATAL:  database "x" does not exist', True, NotFound),
        ("FATAL:  sorry, too many clients already", True, Throttled),
        ("FATAL:  the database system is starting up", True, Unavailable),
        ("Connection refused", True, ConnectError),
        ("server closed the connection unexpectedly", False, TransportError),
    ],
)
def test_connection_messages_map_to_connector_errors(
    message: str, connecting: bool, kind: type[Exception]
) -> None:
    assert type(error_for(_PgError(None, message), "pg", connecting=connecting)) is kind


# -- deletes ----------------------------------------------------------------------------------------


def test_a_delete_id_the_key_cannot_hold_fails_alone_and_the_others_go(
    pg_server: PgServer, pg_table: str
) -> None:
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True, id_type="bigint") as client:
        assert client.write([{"id": i, "values": [float(i)] * DIM} for i in range(1, 6)]).ok
    with connect(uri, on_error="report") as client:
        report = client.delete([1, "x", 3, 99])  # "x" is no bigint: PostgreSQL refuses the batch, isolated
    assert (report.written, report.deleted, report.failed) == (3, 3, 1), report
    (failure,) = report.failures
    assert failure.ids == ("x",) and failure.op == "delete" and failure.error_type == "Rejected"
    assert "22P02" in failure.error  # invalid_text_representation, PostgreSQL's own reason
    assert sorted(read_rows(pg_server, pg_table)) == ["2", "4", "5"]


def test_deletes_without_a_namespace_in_the_key_go_by_id_and_with_one_stay_in_it(
    pg_server: PgServer, pg_table: str
) -> None:
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector({DIM}), metadata jsonb, namespace text)',
    )
    uri = pg_server.uri(pg_table)
    with connect(uri, namespace_column="ns") as client:
        rows = [
            {"id": f"g{i}", "values": [1.0] * DIM, "ns": ns} for i, ns in enumerate(["a", "a", "b", None])
        ]
        assert client.write(rows).ok
    with connect(uri, namespace_column="ns", op_column="op") as client:
        deletes = [{"id": "g0", "ns": "b", "op": "delete"}, {"id": "g2", "ns": "b", "op": "delete"}]
        assert client.write(deletes).ok  # g0 is a's: it stays
    with connect(uri) as client:
        assert client.delete(["g1", "g3"]).ok  # no namespace: by id, whatever the row's
    assert sql(pg_server, f'SELECT id, namespace FROM "{pg_table}"') == [("g0", "a")]


def test_deletes_with_the_namespace_in_the_key(pg_server: PgServer, pg_table: str) -> None:
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True, namespace_column="ns", op_column="op") as client:
        rows = [{"id": "g", "values": [1.0] * DIM, "ns": ns} for ns in ("a", "b", "")]
        assert client.write(rows).ok
        report = client.write(
            [{"id": "g", "ns": "b", "op": "delete"}, {"id": "g", "ns": None, "op": "delete"}]
        )
    assert report.ok and report.deleted == 2, report
    assert sql(pg_server, f'SELECT namespace, id FROM "{pg_table}"') == [("a", "g")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"])), max_size=8))
def test_ids_sent_as_one_array_literal_read_back_as_themselves(pg_server: PgServer, ids: list[str]) -> None:
    # a delete's ids travel as one array literal: quotes, backslashes, braces, commas, spaces, "NULL", ""
    # (any text UTF-8 carries: an id with a lone surrogate is refused before it is sent, tests/badinput)
    (back,) = sql(pg_server, "SELECT CAST(%s AS text[])", array_literal(ids))[0]
    assert back == ids


def test_a_credential_in_any_parameter_of_the_uri_is_never_shown() -> None:
    """``sslpassword=``, or ``password`` percent-encoded: the target's label showed them as given."""
    uri = "postgresql://loader@127.0.0.1:1/db?table=t&sslpassword=Hunter2pass&%70assword=Other2pass&sslmode=disable"
    with connect(uri) as client:
        shown = f"{client!r} {client.backend.describe()}"
    assert "Hunter2pass" not in shown and "Other2pass" not in shown
    assert "sslpassword=***" in shown and "sslmode=disable" in shown


def test_rows_a_table_has_no_column_for_fail_alone_and_the_others_land(
    pg_server: PgServer, pg_table: str
) -> None:
    """A table of the user's own without jsonb or namespace columns: the rows carrying metadata, or a
    namespace, fail with the column to add; the rest is written (the write stopped at the first such
    batch, with rows before it written and none after accounted for)."""
    sql(pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, embedding vector({DIM}))')
    data = [{"id": r["id"], "values": r["values"]} for r in rows_of(3)]  # ids and vectors alone
    data[1]["metadata"] = {"k": 1}
    with connect(pg_server.uri(pg_table), on_error="report", batch_size=1) as client:
        report = client.write(data)
        in_namespace = client.upsert(data[:1] + data[2:], namespace="tenant")
    assert (report.written, report.failed) == (2, 1), report
    assert report.failed_ids == [data[1]["id"]]
    assert f"table {pg_table} has no jsonb column" in report.failures[0].error
    assert (in_namespace.written, in_namespace.failed) == (0, 2)
    assert "has no namespace column" in in_namespace.failures[0].error
    stored = sorted(row_id for (row_id,) in sql(pg_server, f'SELECT id FROM "{pg_table}"'))
    assert stored == sorted(r["id"] for r in data if "metadata" not in r)
