"""Named dense vectors into PostgreSQL + pgvector (option ``vector_columns``): a ``vector(n)`` column per name
(quoted identifiers), read back exactly with psycopg; the existing table checked per name before any row;
multi-vectors refused (pgvector has no multi-vector type)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.backends.pgvector import PgvectorBackend, TableName, default_layout, encode_copy
from vectordb.connector.client import Client, resolve_options
from vectordb.connector.rows import RowBatch

from .pg_server import PgServer, pg_server_fixture, pg_table_fixture  # noqa: F401

# names that only quoted identifiers keep: upper case, a space
NAMES = {"Title": "title_vec", "body text": "body_vec"}
DIMS = {"Title": 8, "body text": 5}


def matrices(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal((n, dim), dtype=np.float32) for name, dim in DIMS.items()}


def arrow_rows(ids: list[str], vectors: dict[str, np.ndarray], **extra: Any) -> pa.Table:
    columns: dict[str, Any] = {"id": ids}
    for name, column in NAMES.items():
        matrix = vectors[name]
        columns[column] = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    return pa.table({**columns, **extra})


def sql(server: PgServer, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with server.connect() as conn:
        cur = conn.execute(statement, params or None)
        return cur.fetchall() if cur.description else []


def stored(server: PgServer, table: str) -> dict[str, dict[str, Any]]:
    """``id`` -> each name's vector as float32 bytes (read as real[], not the binary COPY), and metadata."""
    rows = sql(server, f'SELECT id::text, "Title"::real[], "body text"::real[], metadata FROM "{table}"')
    return {
        row_id: {
            "Title": np.asarray(title, np.float32).tobytes(),
            "body text": np.asarray(body, np.float32).tobytes(),
            "metadata": metadata,
        }
        for row_id, title, body, metadata in rows
    }


def columns_of(server: PgServer, table: str) -> dict[str, str]:
    rows = sql(
        server,
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
        f'"{table}"',
    )
    return dict(rows)


def test_create_makes_a_column_per_name_and_reads_back_exactly(pg_server: PgServer, pg_table: str) -> None:
    vectors = matrices(300)
    ids = [f"r{i}" for i in range(300)]
    with connect(pg_server.uri(pg_table), create=True, vector_columns=NAMES) as client:
        report = client.upsert(arrow_rows(ids, vectors, n=list(range(300))))
    assert report.ok and report.written == 300
    columns = columns_of(pg_server, pg_table)
    assert columns["Title"] == "vector(8)" and columns["body text"] == "vector(5)"
    assert "embedding" not in columns
    # no ANN index during a load, as for the one vector: only the primary key's
    assert sql(pg_server, "SELECT count(*) FROM pg_indexes WHERE tablename = %s", pg_table) == [(1,)]
    got = stored(pg_server, pg_table)
    assert len(got) == 300
    for i, row_id in enumerate(ids):
        for name in DIMS:
            assert got[row_id][name] == vectors[name][i].tobytes(), (row_id, name)
        assert got[row_id]["metadata"] == {"n": i}


def test_upsert_keeps_the_last_of_an_id_and_deletes_work_in_named_mode(
    pg_server: PgServer, pg_table: str
) -> None:
    first, second = matrices(4, seed=1), matrices(4, seed=2)
    uri = pg_server.uri(pg_table)
    with connect(uri, create=True, vector_columns=NAMES, op_column="op") as client:
        assert client.upsert(arrow_rows(["a", "b", "c", "d"], first, op=["upsert"] * 4)).ok
        twice = {name: np.stack([m[0], m[1]]) for name, m in second.items()}
        assert client.write(arrow_rows(["a", "a"], twice, op=["upsert", "upsert"])).ok
        assert client.write([{"id": "b", "op": "delete"}, {"id": "missing", "op": "delete"}]).ok
        mixed = {name: np.stack([m[2], m[3]]) for name, m in second.items()}
        assert client.write(arrow_rows(["c", "d"], mixed, op=["delete", "upsert"])).ok
    got = stored(pg_server, pg_table)
    assert sorted(got) == ["a", "d"]
    for name in DIMS:
        assert got["a"][name] == second[name][1].tobytes()
        assert got["d"][name] == second[name][3].tobytes()


def test_dict_rows_learn_each_dimension_from_the_rows(pg_server: PgServer, pg_table: str) -> None:
    vectors = matrices(20, seed=3)
    records = [
        {
            "id": f"d{i}",
            "title_vec": vectors["Title"][i],
            "body_vec": vectors["body text"][i].tolist(),
            "k": "x",
        }
        for i in range(20)
    ]
    with connect(pg_server.uri(pg_table), create=True, vector_columns=NAMES) as client:
        assert client.upsert(records).ok
    got = stored(pg_server, pg_table)
    for i in range(20):
        for name in DIMS:
            assert got[f"d{i}"][name] == vectors[name][i].tobytes()
        assert got[f"d{i}"]["metadata"] == {"k": "x"}


def test_an_existing_table_is_written_by_column_name(pg_server: PgServer, pg_table: str) -> None:
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, "body text" vector(5), other vector(3), '
        f'"Title" vector, metadata jsonb)',
    )
    vectors = matrices(10, seed=4)
    with connect(pg_server.uri(pg_table), vector_columns=NAMES) as client:
        assert client.upsert(arrow_rows([f"e{i}" for i in range(10)], vectors)).ok
    got = stored(pg_server, pg_table)
    for i in range(10):
        for name in DIMS:
            assert got[f"e{i}"][name] == vectors[name][i].tobytes()
    assert sql(pg_server, f'SELECT count(*) FROM "{pg_table}" WHERE other IS NULL') == [(10,)]


@pytest.mark.parametrize(
    ("columns", "options", "message"),
    [
        (
            '"Title" vector(8)',
            {},
            r"option vector_columns: name 'body text': table \w+ has no column 'body text' \(columns: id text, "
            r"Title vector\(8\), metadata jsonb\)",
        ),
        (
            '"Title" vector(8), "body text" vector(6)',
            {"vector_dimensions": {"Title": 8, "body text": 5}},
            r"option vector_columns: name 'body text': table \w+ column 'body text' is vector\(6\), the write's "
            r"vectors have 5 dimensions",
        ),
        (
            '"Title" vector(8), "body text" text',
            {},
            r"option vector_columns: name 'body text': table \w+ column 'body text' is text, not vector or halfvec",
        ),
    ],
)
def test_an_existing_table_is_checked_per_name_before_any_row(
    pg_server: PgServer, pg_table: str, columns: str, options: dict[str, Any], message: str
) -> None:
    sql(pg_server, f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, {columns}, metadata jsonb)')
    raw = {"uri": pg_server.uri(pg_table), "vector_columns": NAMES, **options}
    with pytest.raises(ConfigError, match=message):
        Client(resolve_options(raw)).prepare_target()  # a job's driver
    if "vector_dimensions" not in options:  # one process: checked once the rows give the dimensions
        with pytest.raises(ConfigError, match=message), connect(**raw) as client:
            client.upsert(arrow_rows(["x"], matrices(1)))
    assert sql(pg_server, f'SELECT count(*) FROM "{pg_table}"') == [(0,)]


@pytest.mark.parametrize("stated", [{}, {"vector_dimensions": {"Title": 8}}])
def test_rows_of_another_dimension_than_the_column_fail_alone(
    pg_server: PgServer, pg_table: str, stated: dict[str, Any]
) -> None:
    """No dimension stated for 'body text': the column's vector(N) is the write's, as the single vector's
    is. Most rows' 'body text' is 5 long where the column is vector(6): those rows fail alone, and the row
    that fits is written (the dimension the rows gave is no statement to refuse the whole write for)."""
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, "Title" vector(8), "body text" vector(6))',
    )
    vectors = matrices(3)
    body = [row.tolist() for row in vectors["body text"]]
    body[2] = body[2] + [0.5]  # the one row of the column's dimension
    table = pa.table(
        {
            "id": ["x", "y", "z"],
            "title_vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors["Title"].reshape(-1)), 8),
            "body_vec": pa.array(body, pa.list_(pa.float32())),
        }
    )
    with connect(pg_server.uri(pg_table), vector_columns=NAMES, on_error="report", **stated) as client:
        report = client.write(table)
    assert report.written == 1
    assert {f.ids: f.error for f in report.failures} == {
        ("x", "y"): "vector 'body text' has 5 dimensions; expected 6"
    }
    rows = sql(pg_server, f'SELECT id, "body text"::real[] FROM "{pg_table}"')
    assert [(i, np.asarray(v, np.float32).tobytes()) for i, v in rows] == [
        ("z", np.asarray(body[2], np.float32).tobytes())
    ]


def test_a_stated_dimension_the_column_contradicts_stops_the_write_before_any_row(
    pg_server: PgServer, pg_table: str
) -> None:
    sql(
        pg_server,
        f'CREATE TABLE "{pg_table}" (id text PRIMARY KEY, "Title" vector(8), "body text" vector(6))',
    )
    message = r"name 'body text': .* is vector\(6\), the write's vectors have 5"
    options = {"vector_columns": NAMES, "vector_dimensions": {"body text": 5}}
    with pytest.raises(ConfigError, match=message), connect(pg_server.uri(pg_table), **options) as client:
        client.upsert(arrow_rows(["x", "y"], matrices(2)))
    assert sql(pg_server, f'SELECT count(*) FROM "{pg_table}"') == [(0,)]


def test_bad_rows_fail_alone_by_name_and_dead_letters_carry_the_whole_row(
    pg_server: PgServer, pg_table: str
) -> None:
    vectors = matrices(6, seed=5)
    title = [vectors["Title"][i].tolist() for i in range(6)]
    body: list[Any] = [vectors["body text"][i].tolist() for i in range(6)]
    title[1] = title[1][:7]
    body[3] = None
    body[4] = [float("inf")] * 5
    table = pa.table(
        {
            "id": [f"b{i}" for i in range(6)],
            "title_vec": pa.array(title, pa.list_(pa.float32())),
            "body_vec": pa.array(body, pa.list_(pa.float32())),
            "note": [f"n{i}" for i in range(6)],
        }
    )
    options = {"create": True, "vector_columns": NAMES, "vector_dimensions": DIMS, "on_error": "report"}
    with connect(pg_server.uri(pg_table), **options) as client:
        report = client.upsert(table)
        letters = client.dead_letters(table, report).to_pylist()
    assert report.written == 3 and report.failed == 3
    reasons = {f.ids[0]: f.error for f in report.failures}
    assert "'Title'" in reasons["b1"] and "'body text'" in reasons["b3"] and "'body text'" in reasons["b4"]
    assert sorted(stored(pg_server, pg_table)) == ["b0", "b2", "b5"]
    by_id = {letter["id"]: letter for letter in letters}
    assert sorted(by_id) == ["b1", "b3", "b4"]
    assert by_id["b1"]["title_vec"] == pytest.approx(title[1]) and by_id["b1"]["note"] == "n1"
    assert by_id["b3"]["body_vec"] is None and by_id["b3"]["title_vec"] == pytest.approx(title[3])


def test_a_row_postgres_refuses_fails_alone(pg_server: PgServer, pg_table: str) -> None:
    """A refusal of the whole COPY (here a NUL in the metadata, which jsonb refuses) is bisected to its row."""
    vectors = matrices(4, seed=6)
    table = arrow_rows([f"p{i}" for i in range(4)], vectors, note=["a", "b\x00", "c", "d"])
    with connect(pg_server.uri(pg_table), create=True, vector_columns=NAMES, on_error="report") as client:
        report = client.upsert(table)
    assert report.written == 3 and report.failed_ids == ["p1"]
    assert sorted(stored(pg_server, pg_table)) == ["p0", "p2", "p3"]


def test_multi_vectors_are_refused_saying_pgvector_has_no_such_type() -> None:
    with pytest.raises(ConfigError) as caught:
        connect("postgresql://u@127.0.0.1:1/db?table=t", multi_vector_columns="colbert:c")
    message = str(caught.value)
    assert message.startswith("option multi_vector_columns: postgresql does not store multi-vectors: ")
    assert "pgvector has no multi-vector type" in message


@pytest.mark.parametrize("name", ["id", "metadata", "x" * 64])
def test_create_refuses_names_that_cannot_be_columns(pg_server: PgServer, pg_table: str, name: str) -> None:
    raw = {
        "uri": pg_server.uri(pg_table),
        "create": "true",
        "vector_columns": {name: "v"},
        "vector_dimensions": {name: 4},
    }
    with pytest.raises(ConfigError, match=f"option vector_columns: name '{name}'"):
        Client(resolve_options(raw)).prepare_target()
    assert sql(pg_server, "SELECT to_regclass(%s)::text", f'"{pg_table}"') == [(None,)]


def test_copy_row_holds_each_names_vector_field_in_order() -> None:
    vectors = matrices(2, seed=7)
    options = resolve_options({"uri": "postgresql://u@h/db?table=t", "vector_columns": NAMES})
    layout = default_layout(TableName(None, "t"), options, None, DIMS)  # type: ignore[arg-type]
    batch = RowBatch(ids=["a", "b"], vectors=None, named_vectors=dict(vectors))
    body = encode_copy(batch, layout)
    row = body[19:]  # after the 19-byte header
    assert int.from_bytes(row[:2], "big") == len(layout.stage_columns()) == 4  # v0, v1, id, metadata
    offset = 2
    for name, dim in DIMS.items():
        size = int.from_bytes(row[offset : offset + 4], "big")
        assert size == 4 + 4 * dim and int.from_bytes(row[offset + 4 : offset + 6], "big") == dim
        values = np.frombuffer(row[offset + 8 : offset + 4 + size], ">f4")
        assert values.astype(np.float32).tobytes() == vectors[name][0].tobytes()
        offset += 4 + size
    backend = PgvectorBackend(options)  # type: ignore[arg-type]
    assert (backend.row_bytes(batch) >= 16 + 4 * (8 + 5)).all()
    assert '"Title"' in layout.upsert_sql() and '"body text"' in layout.upsert_sql()


def test_halfvec_columns_per_name(pg_server: PgServer, pg_table: str) -> None:
    """``vector_type=halfvec``: each name's column is halfvec(n); values half precision holds come back exact."""
    vectors = {name: (np.arange(4 * dim, dtype=np.float32).reshape(4, dim) / 4) for name, dim in DIMS.items()}
    with connect(pg_server.uri(pg_table), create=True, vector_columns=NAMES, vector_type="halfvec") as client:
        assert client.upsert(arrow_rows([f"h{i}" for i in range(4)], vectors)).ok
    columns = columns_of(pg_server, pg_table)
    assert columns["Title"] == "halfvec(8)" and columns["body text"] == "halfvec(5)"
    rows = sql(
        pg_server, f'SELECT id, "Title"::vector::real[], "body text"::vector::real[] FROM "{pg_table}"'
    )
    for row_id, title, body in rows:
        i = int(row_id[1:])
        assert np.asarray(title, np.float32).tobytes() == vectors["Title"][i].tobytes()
        assert np.asarray(body, np.float32).tobytes() == vectors["body text"][i].tobytes()
