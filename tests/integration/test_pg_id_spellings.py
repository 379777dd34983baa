"""Two spellings PostgreSQL reads as one id are one row, and the last occurrence in a write wins, whatever
the id column's type: uuid (braces, no hyphens), citext (letter case), char(n) (trailing spaces), numeric
(7, 7.0; rounded to the column's scale), and types the connector cannot model (a case-insensitive ICU
collation, float8), whose rows then go one after another.

Each table has a trigger that sleeps on the first occurrence's row, standing in for a busy server: a
second spelling sent beside it in another request (batch_size=1, several in flight) lands first and is
then overwritten, unless the connector knows the two are one row."""

from __future__ import annotations

from typing import Any

import pytest

from vectordb.connector import connect
from vectordb.connector.rows import RowRules

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

U = "0e5c3c4a-4a8e-4c0b-9d6c-0b8e1c7c2f11"
OTHER = "8f0e4b7e-6d1a-4a51-b0f4-3c2d9e8a7b61"  # an id of every type here (a uuid column takes no "1")
SLOW_S = 0.4

# (id type, first spelling, last spelling, how many rows the table ends with after one upsert of each)
SPELLINGS = [
    ("uuid", U, "{" + U + "}"),
    ("uuid", U, "{" + U.replace("-", "").upper() + "}"),
    ("citext", "Doc", "doc"),
    ("char(5)", "ab", "ab   "),
    ("numeric", "7", "7.0"),
    ("numeric(10, 2)", "7", "7.001"),
    ("bigint", "7", "+07"),
    ("text COLLATE ci", "Doc", "DOC"),  # nondeterministic: compared without case
    ("float8", "7", "7.0"),
]


def sql(server: PgServer, statement: str) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def make_table(server: PgServer, table: str, id_type: str) -> None:
    """A table with ``id_type`` ids whose trigger sleeps on a row written with metadata v = 'first'."""
    sql(server, "CREATE EXTENSION IF NOT EXISTS citext")
    if not sql(server, "SELECT 1 FROM pg_collation WHERE collname = 'ci'"):
        sql(server, "CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
    sql(server, f'CREATE TABLE "{table}" (id {id_type} PRIMARY KEY, embedding vector(2), metadata jsonb)')
    sql(
        server,
        f'CREATE FUNCTION "{table}_slow"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
        f"IF NEW.metadata->>'v' = 'first' THEN PERFORM pg_sleep({SLOW_S}); END IF; RETURN NEW; END $$",
    )
    sql(
        server,
        f'CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON "{table}" '
        f'FOR EACH ROW EXECUTE FUNCTION "{table}_slow"()',
    )


def drop_function(server: PgServer, table: str) -> None:
    sql(server, f'DROP TABLE IF EXISTS "{table}"')
    sql(server, f'DROP FUNCTION IF EXISTS "{table}_slow"()')


def stored(server: PgServer, table: str) -> list[tuple[str, str | None]]:
    return [tuple(r) for r in sql(server, f"SELECT id::text, metadata->>'v' FROM \"{table}\"")]  # type: ignore[misc]


@pytest.mark.parametrize("warm", [False, True], ids=["first-write", "table-known"])
@pytest.mark.parametrize(("id_type", "first", "last"), SPELLINGS)
def test_two_spellings_of_one_id_end_as_the_last_says(
    pg_server: PgServer, pg_table: str, id_type: str, first: str, last: str, warm: bool
) -> None:
    """first-write: the write that reads the table's catalog (its first rows are prepared before it);
    table-known: a later write of the same client, keyed by the id column's learnt type."""
    make_table(pg_server, pg_table, id_type)
    try:
        with connect(pg_server.uri(pg_table), on_error="report", batch_size=1, max_concurrency=4) as client:
            if warm:
                assert client.write(
                    [{"id": OTHER if id_type == "uuid" else "1", "values": [0, 0], "metadata": {"v": "warm"}}]
                ).ok
            report = client.write(
                [
                    {"id": first, "values": [1, 1], "metadata": {"v": "first"}},
                    {"id": last, "values": [2, 2], "metadata": {"v": "last"}},
                ]
            )
        assert report.ok, report
        rows = [r for r in stored(pg_server, pg_table) if r[1] != "warm"]
        assert [v for _, v in rows] == ["last"], rows
    finally:
        drop_function(pg_server, pg_table)


@pytest.mark.parametrize(("id_type", "first", "last"), SPELLINGS)
def test_an_upsert_then_a_delete_spelt_otherwise_leaves_no_row(
    pg_server: PgServer, pg_table: str, id_type: str, first: str, last: str
) -> None:
    make_table(pg_server, pg_table, id_type)
    try:
        rows = [
            {"id": first, "values": [1, 1], "metadata": {"v": "first"}, "op": "upsert"},
            {"id": last, "op": "delete"},
        ]
        for _ in range(2):  # the write that reads the catalog, and one after it
            with connect(
                pg_server.uri(pg_table), on_error="report", op_column="op", max_concurrency=4
            ) as client:
                report = client.write(rows)
                assert report.ok, report
                assert stored(pg_server, pg_table) == []
                assert client.write(rows).ok
                assert stored(pg_server, pg_table) == []
    finally:
        drop_function(pg_server, pg_table)


def test_the_rules_follow_the_id_column_type(pg_server: PgServer, pg_table: str) -> None:
    """What each type's rows are keyed by, once the table is read: ids as PostgreSQL compares them."""
    expected = {
        "text": ("", ["Doc", "doc", "7", "07"]),
        "bigint": ("", ["Doc", "doc", "7", "7"]),
        "uuid": ("uuid", [U, U, "Doc", "doc"]),
        "citext": ("case", ["doc", "doc", "ab", "ab  "]),
        "char(5)": ("spaces", ["Doc", "doc", "ab", "ab"]),
        "numeric(6, 1)": ("numeric", ["7", "7", "7.1", "7.1"]),
        "text COLLATE ci": ("one", None),
        "float8": ("one", None),
    }
    samples = {
        "text": ["Doc", "doc", "7", "07"],
        "bigint": ["Doc", "doc", "7", "07"],
        "uuid": [U, "{" + U.upper() + "}", "Doc", "doc"],
        "citext": ["Doc", "doc", "ab", "ab  "],
        "char(5)": ["Doc", "doc", "ab", "ab  "],
        "numeric(6, 1)": ["7", "7.00", "7.05", "7.1"],
    }
    for id_type, (fold, keys) in expected.items():
        table = f"{pg_table}_{len(id_type)}_{id_type.split('(')[0].split()[0]}"
        make_table(pg_server, table, id_type)
        try:
            with connect(pg_server.uri(table)) as client:
                assert client.write([{"id": OTHER if id_type == "uuid" else "1", "values": [0, 0]}]).ok
                rules = client.backend.rules
            assert rules.id_fold == fold, id_type
            if keys is not None:
                assert rules.row_keys(samples[id_type]) == keys, id_type
            else:
                assert len(set(rules.row_keys(["a", "b", "c"]))) == 1
        finally:
            drop_function(pg_server, table)


def make_namespaced_table(server: PgServer, table: str, namespace_type: str, key: str) -> None:
    """``make_table``'s, with a namespace column of ``namespace_type`` and the primary key ``key``."""
    make_table(server, table, "text")
    sql(server, f'ALTER TABLE "{table}" DROP CONSTRAINT "{table}_pkey"')
    sql(server, f"ALTER TABLE \"{table}\" ADD COLUMN namespace {namespace_type} NOT NULL DEFAULT ''")
    sql(server, f'ALTER TABLE "{table}" ADD PRIMARY KEY ({key})')


@pytest.mark.parametrize("warm", [False, True], ids=["first-write", "table-known"])
@pytest.mark.parametrize(
    "namespace_type", ["citext", "text COLLATE ci"], ids=["citext", "case-insensitive-collation"]
)
def test_two_spellings_of_one_namespace_are_one_row_in_order(
    pg_server: PgServer, pg_table: str, namespace_type: str, warm: bool
) -> None:
    """A citext (or case-insensitive) namespace in the key: "Docs" and "docs" are one namespace there."""
    make_namespaced_table(pg_server, pg_table, namespace_type, "namespace, id")
    try:
        rows = [
            {"id": "a", "values": [1, 1], "metadata": {"v": "first"}, "namespace": "Docs"},
            {"id": "a", "values": [2, 2], "metadata": {"v": "last"}, "namespace": "docs"},
        ]
        with connect(pg_server.uri(pg_table), on_error="report", batch_size=1, max_concurrency=4) as client:
            if warm:
                assert client.write([{"id": "w", "values": [0, 0], "metadata": {"v": "warm"}}]).ok
            report = client.write(rows)
        assert report.ok, report
        assert [v for _, v in stored(pg_server, pg_table) if v != "warm"] == ["last"]
    finally:
        drop_function(pg_server, pg_table)


def test_one_id_in_two_namespaces_of_a_table_keyed_by_id_alone_goes_in_order(
    pg_server: PgServer, pg_table: str
) -> None:
    """A namespace column outside the key: one id is one row whatever its namespace, also for the rows a
    write prepares before it reads the table (option namespace_column suggests (namespace, id))."""
    make_namespaced_table(pg_server, pg_table, "text", "id")
    try:
        rows = [
            {"id": "x", "values": [0, 0], "metadata": {"v": "x"}, "namespace": "n1"},
            {"id": "a", "values": [1, 1], "metadata": {"v": "first"}, "namespace": "n2"},
            {"id": "a", "values": [2, 2], "metadata": {"v": "last"}, "namespace": "n1"},
        ]
        uri = pg_server.uri(pg_table)
        with connect(uri, on_error="report", batch_size=1, namespace_column="namespace") as client:
            report = client.write(rows)
        assert report.ok, report
        assert sorted(stored(pg_server, pg_table)) == [("a", "last"), ("x", "x")]
    finally:
        drop_function(pg_server, pg_table)


# spellings every fold reads one way or another, and ids beside them
POOL = [
    "7", "07", " 7", "7 ", "7.0", "+7", "-0", "0", "1e3", "1000", "inf", "Infinity", "nan", ".5", "0.50",
    U, U.upper(), "{" + U + "}", "urn:uuid:" + U, U.replace("-", ""), "doc", "Doc", "ab  ", "ab", "x" * 40,
    "1_000", "\u0661\u0662", "\u00df", "SS", "1" * 32, "0" + "1" * 32, "\t7", "e5", "-", "uuid:" + U,
]  # fmt: skip


@pytest.mark.parametrize("fold", ["any", "uuid", "case", "spaces", "numeric", "one"])
def test_a_key_depends_on_its_id_alone_under_every_fold(fold: str) -> None:
    """The engine keys each batch, the checks each chunk: an id's key must not depend on the ids beside it
    (the fast paths that hand the ids back as they are included)."""
    rules = RowRules(id_fold=fold, id_scale=1 if fold == "numeric" else None)
    alone = {i: rules.row_keys([i])[0] for i in POOL}
    for start in range(len(POOL)):
        for size in (1, 2, 3, 5):
            ids = [POOL[(start + k * 7) % len(POOL)] for k in range(size)]
            assert rules.row_keys(ids) == [alone[i] for i in ids], ids
    lower = [i for i in POOL if i.isascii() and i == i.lower() and not i.endswith(" ")]
    assert rules.row_keys(lower) == [alone[i] for i in lower]


def test_a_number_no_numeric_holds_is_keyed_as_its_text_without_building_it() -> None:
    """An id "1e999999999" in a numeric(10, 2) column: PostgreSQL refuses the row; rounding it to 2 places
    first built a number of a billion digits (about 400 MB) for its key."""
    import tracemalloc

    rules = RowRules(id_fold="numeric", id_scale=2)
    tracemalloc.start()
    try:
        keys = rules.row_keys(["1e999999999", "7.001"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert keys == ["1e999999999", "7"]
    assert peak < 10_000_000, peak
