"""``vectordb.spark.changes``: a change-feed micro-batch, built by hand (no Delta), becomes one row per id.

The property test makes a table's history at random (inserts, updates as pre/post-image pairs,
deletes, and rewrites that delete and insert one id in the same version), takes a run of its
versions as one micro-batch in a random row order, and checks that ``changes`` leaves exactly the
last change of every id the batch touched: what the id ends as after the batch's last version.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.servers.fixtures import ServerHandle
from vectordb.connector.errors import ConfigError
from vectordb.connector.rows.ops import op_of
from vectordb.spark import changes

SCHEMA = "id string, value long, _change_type string, _commit_version long, _commit_timestamp timestamp"
T0 = dt.datetime(2026, 1, 1)

Change = tuple[str | None, int, str, int]  # id, value, change type, version


def feed(spark: Any, rows: list[Change], schema: str = SCHEMA) -> Any:
    stamped = [(i, v, t, n, T0 + dt.timedelta(seconds=n)) for i, v, t, n in rows]
    return spark.createDataFrame(stamped, schema)


def resolved(df: Any) -> dict[str | None, tuple[str, int]]:
    """id → (op, value) of ``changes``' result; every id once."""
    rows = df.collect()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), f"an id twice: {sorted(map(str, ids))}"
    found: dict[str | None, tuple[str, int]] = {}
    for r in rows:
        op = op_of(r["_change_type"])
        assert op is not None, r
        found[r["id"]] = (op, r["value"])
    return found


def history(draw: st.DrawFn) -> tuple[list[Change], dict[str, int], int]:
    """A table's change feed over several versions; the table before ``first`` (what the index already
    holds), and ``first``: the first version of the micro-batch."""
    table: dict[str, int] = {}
    changes_: list[Change] = []
    before: dict[str, int] = {}
    versions = draw(st.integers(1, 6))
    first = draw(st.integers(0, versions - 1))
    serial = 0
    for version in range(versions):
        if version == first:
            before = dict(table)
        pool = [f"k{i}" for i in range(6)]
        touched = draw(st.lists(st.sampled_from(pool), unique=True, max_size=5))
        for key in touched:
            serial += 1
            if key not in table:
                table[key] = serial
                changes_.append((key, serial, "insert", version))
                continue
            kind = draw(st.sampled_from(["update", "delete", "rewrite", "rename"]))
            old = table[key]
            if kind == "rename":  # an update of the id itself (SET id = ...): the old id is gone
                renamed = f"r{serial}"  # no other change of this version touches it
                changes_ += [
                    (key, old, "update_preimage", version),
                    (renamed, serial, "update_postimage", version),
                ]
                del table[key]
                table[renamed] = serial
            elif kind == "update":
                changes_ += [
                    (key, old, "update_preimage", version),
                    (key, serial, "update_postimage", version),
                ]
                table[key] = serial
            elif kind == "delete":
                changes_.append((key, old, "delete", version))
                del table[key]
            else:  # an overwrite of the table: the old row deleted, the new one inserted, one commit
                changes_ += [(key, old, "delete", version), (key, serial, "insert", version)]
                table[key] = serial
    return [c for c in changes_ if c[3] >= first], before, first


@st.composite
def micro_batches(draw: st.DrawFn) -> tuple[list[Change], dict[str, int], int]:
    batch, before, _ = history(draw)
    order = draw(st.randoms(use_true_random=False))
    shuffled = list(batch)
    order.shuffle(shuffled)
    partitions = draw(st.integers(1, 3))
    return shuffled, before, partitions


def table_after(before: dict[str, int], batch: list[Change]) -> dict[str, int]:
    """The table after the batch's changes, applied in version order: within a version what rows were
    (deletes, pre-images) goes before what they are (inserts, post-images)."""
    table = dict(before)
    was = ("delete", "update_preimage")
    for key, value, kind, _ in sorted(batch, key=lambda c: (c[3], c[2] not in was)):
        if kind in was:
            table.pop(key, None)  # type: ignore[arg-type]
        else:
            table[key] = value  # type: ignore[index]
    return table


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(micro_batches())
def test_the_result_is_the_last_change_of_every_id(
    spark: Any, case: tuple[list[Change], dict[str, int], int]
) -> None:
    batch, before, partitions = case
    after = table_after(before, batch)
    touched = {c[0] for c in batch}
    expected = {k: ("upsert", after[k]) if k in after else ("delete", None) for k in touched}
    got = resolved(changes(feed(spark, batch), num_partitions=partitions))
    assert {k: (op, None if op == "delete" else v) for k, (op, v) in got.items()} == expected
    # applied to what the index held, the result gives the table
    index = dict(before)
    for key, (op, value) in got.items():
        if op == "delete":
            index.pop(key, None)  # type: ignore[arg-type]
        else:
            index[key] = value  # type: ignore[index]
    assert index == after


def test_several_versions_of_one_id_in_one_batch(spark: Any) -> None:
    rows: list[Change] = [
        ("a", 1, "insert", 0),
        ("a", 1, "update_preimage", 1),
        ("a", 2, "update_postimage", 1),
        ("b", 3, "insert", 0),
        ("b", 3, "delete", 2),
        ("c", 4, "delete", 3),
        ("c", 5, "insert", 3),  # an overwrite: deleted and inserted in one version
        ("d", 6, "update_preimage", 4),
        ("d", 7, "update_postimage", 4),
        ("d", 7, "delete", 5),
        ("e", 8, "insert", 0),
        ("e", 8, "update_preimage", 6),  # UPDATE ... SET id = 'f' WHERE id = 'e'
        ("f", 8, "update_postimage", 6),
    ]
    out = changes(feed(spark, rows[::-1]))
    assert out.columns == ["id", "value", "_change_type"]
    assert {r["id"]: (r["_change_type"], r["value"]) for r in out.collect()} == {
        "a": ("update_postimage", 2),
        "b": ("delete", 3),
        "c": ("insert", 5),
        "d": ("delete", 7),
        "e": ("delete", 8),  # its row now has another id
        "f": ("update_postimage", 8),
    }


def test_every_id_lands_in_one_partition_after_one_shuffle(spark: Any) -> None:
    rng = random.Random(5)
    rows: list[Change] = []
    for n in range(400):
        key = f"id{rng.randrange(60)}"
        rows.append((key, n, rng.choice(["insert", "update_postimage", "delete"]), rng.randrange(4)))
    out = changes(feed(spark, rows).repartition(3), num_partitions=4)
    from pyspark.sql import functions as F

    placed = out.select("id", F.spark_partition_id().alias("p")).collect()
    assert out.rdd.getNumPartitions() == 4
    assert len({r["id"] for r in placed}) == len(placed) == 60
    # the same hash partitioning as a plain repartition by id: where any other write would put the id
    plain = feed(spark, rows).repartition(4, "id").select("id", F.spark_partition_id().alias("p")).collect()
    assert {r["id"]: r["p"] for r in placed} == {r["id"]: r["p"] for r in plain}
    plan = out._jdf.queryExecution().executedPlan().toString()
    final = plan.split("== Initial Plan ==")[0]  # adaptive execution prints both plans
    assert final.count("Exchange hashpartitioning") == 1, plan  # the window reuses the repartition


def test_ids_from_several_columns_another_op_column_and_null_ids(spark: Any) -> None:
    schema = "tenant string, " + SCHEMA
    rows = [
        ("t1", "a", 1, "insert", 0),
        ("t2", "a", 2, "insert", 0),
        ("t1", "a", 3, "delete", 1),
        ("t1", None, 4, "insert", 0),
        ("t1", None, 5, "insert", 1),
    ]
    stamped = [(*r, T0) for r in rows]
    out = changes(spark.createDataFrame(stamped, schema), ["tenant", "id"], op_column="op")
    assert out.columns == ["tenant", "id", "value", "op"]
    got = sorted((r["tenant"], r["id"] or "", r["op"], r["value"]) for r in out.collect())
    # rows without an id are all kept: each fails in the sink, none vanishes here
    assert got == [
        ("t1", "", "insert", 4),
        ("t1", "", "insert", 5),
        ("t1", "a", "delete", 3),
        ("t2", "a", "insert", 2),
    ]


def test_an_int_commit_version_orders_as_a_number(spark: Any) -> None:
    schema = "id string, value long, _change_type string, _commit_version int"
    rows = [("a", 9, "update_postimage", 9), ("a", 10, "update_postimage", 10)]
    assert [r["value"] for r in changes(spark.createDataFrame(rows, schema)).collect()] == [10]


def test_a_feed_without_commit_timestamp_and_an_empty_batch(spark: Any) -> None:
    df = spark.createDataFrame([], "id string, _change_type string, _commit_version long")
    assert changes(df).collect() == []
    assert changes(df).columns == ["id", "_change_type"]


@pytest.mark.parametrize(
    ("schema", "kwargs", "message"),
    [
        (
            "id string, value long",
            {},
            "no column '_change_type', '_commit_version': it is not a Delta change data feed",
        ),
        ("id string, _change_type string", {}, "no column '_commit_version'"),
        (
            "key string, _change_type string, _commit_version long",
            {},
            "id column 'id' is not in the DataFrame",
        ),
        (
            "id string, _change_type int, _commit_version long",
            {},
            "'_change_type' has type int; expected string",
        ),
        (
            "id string, _change_type string, _commit_version string",  # "9" > "10" as text
            {},
            "'_commit_version' has type string; expected an integer",
        ),
        (
            "id string, _change_type string, _commit_version double",
            {},
            "'_commit_version' has type double; expected an integer",
        ),
        (
            "id string, op string, _change_type string, _commit_version long",
            {"op_column": "op"},
            "a column of the table",
        ),
        ("id string, _change_type string, _commit_version long", {"num_partitions": 0}, "at least 1"),
    ],
)
def test_what_is_not_a_change_feed_is_a_config_error(
    spark: Any, schema: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=r"^changes\(\): ") as raised:
        changes(spark.createDataFrame([], schema), **kwargs)
    assert message in str(raised.value)


@pytest.mark.parametrize("table", ["dataframe", 7])
def test_a_table_that_is_no_path_name_or_function_is_refused_naming_table(spark: Any, table: Any) -> None:
    feed = spark.createDataFrame([("a", "insert", 1)], "id string, _change_type string, _commit_version long")
    given = feed if table == "dataframe" else table
    with pytest.raises(
        ConfigError, match=r"^changes\(\): table= takes a Delta table's path or name"
    ) as raised:
        changes(feed, table=given)
    assert type(given).__name__ in str(raised.value)


def test_a_stream_is_refused_with_where_to_call_it(spark: Any) -> None:
    stream = (
        spark.readStream.format("rate")
        .load()
        .selectExpr("cast(value as string) as id", "'insert' as _change_type", "value as _commit_version")
    )
    with pytest.raises(ConfigError, match=r"call it inside writeStream\.foreachBatch"):
        changes(stream)


def delta_order(draw: st.DrawFn) -> tuple[list[Change], list[dict[str, int]]]:
    """A whole history in the order Delta's change-feed source hands it out (a rewrite's new files
    first, its removed ones after), and the table after each version."""
    table: dict[str, int] = {}
    rows: list[Change] = []
    states: list[dict[str, int]] = []
    serial = 0
    for version in range(draw(st.integers(1, 5))):
        inserted: list[Change] = []
        removed: list[Change] = []
        for key in draw(st.lists(st.sampled_from([f"k{i}" for i in range(5)]), unique=True, max_size=4)):
            serial += 1
            if key not in table:
                inserted.append((key, serial, "insert", version))
                table[key] = serial
                continue
            kind = draw(st.sampled_from(["update", "delete", "rewrite"]))
            if kind == "update":
                inserted += [
                    (key, table[key], "update_preimage", version),
                    (key, serial, "update_postimage", version),
                ]
                table[key] = serial
            elif kind == "delete":
                removed.append((key, table.pop(key), "delete", version))
            else:
                removed.append((key, table[key], "delete", version))
                inserted.append((key, serial, "insert", version))
                table[key] = serial
        rows += inserted + removed
        states.append(dict(table))
    return rows, states


@st.composite
def cut_histories(draw: st.DrawFn) -> tuple[list[Change], list[dict[str, int]], list[int]]:
    rows, states = delta_order(draw)
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(rows) - 1)), unique=True, max_size=3)))
    return rows, states, [c for c in cuts if 0 < c < len(rows)]


def apply(index: dict[str, int], result: Any) -> None:
    for key, (op, value) in resolved(result).items():
        if op == "delete":
            index.pop(key, None)  # type: ignore[arg-type]
        else:
            index[key] = value  # type: ignore[index]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut_histories())
def test_with_the_table_micro_batches_that_cut_a_commit_end_exact(
    spark: Any, case: tuple[list[Change], list[dict[str, int]], list[int]]
) -> None:
    rows, states, cuts = case

    def as_of(version: int) -> Any:
        return spark.createDataFrame(sorted(states[version].items()), "id string, value long")

    index: dict[str, int] = {}
    for start, end in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        batch = rows[start:end]
        if not batch:
            continue
        apply(index, changes(feed(spark, batch), table=as_of))
        last = batch[-1][3]
        if end == len(rows) or rows[end][3] != last:  # the batch ends where a version ends
            assert index == states[last], (batch, states[last])
    assert index == (states[-1] if states else {})


def test_a_commit_cut_between_its_inserts_and_its_deletes(spark: Any) -> None:
    """An overwrite at v1 (``a`` rewritten, ``b`` dropped), cut after its new files: without the table
    the second batch deletes ``a``, which the table holds; with it, ``a`` stays."""
    first: list[Change] = [("a", 1, "insert", 0), ("b", 2, "insert", 0), ("a", 3, "insert", 1)]
    second: list[Change] = [("a", 1, "delete", 1), ("b", 2, "delete", 1)]
    tables = {0: [("a", 1), ("b", 2)], 1: [("a", 3)]}

    def as_of(version: int) -> Any:
        return spark.createDataFrame(tables[version], "id string, value long")

    for table, expected in ((None, {}), (as_of, {"a": 3})):
        index: dict[str, int] = {}
        apply(index, changes(feed(spark, first), table=table))
        apply(index, changes(feed(spark, second), table=table))
        assert index == expected


def test_a_table_without_the_feeds_columns_is_a_config_error(spark: Any) -> None:
    rows: list[Change] = [("a", 1, "delete", 0)]
    with pytest.raises(ConfigError, match="the table has no column 'value'"):
        changes(feed(spark, rows), table=lambda v: spark.createDataFrame([("a",)], "id string")).collect()


def past_retention(spark: Any, current: Any, refused: str) -> Any:
    """``_as_of`` as Delta 4.1 and later answer for a table whose versions are past its retention: every
    version refused with ``refused``'s error, the current table ``current``."""
    from pyspark.errors import AnalysisException

    def as_of(kept: Any, table: str, version: int | None) -> Any:
        if version is not None:
            raise AnalysisException(message=f"[{refused}] Cannot time travel beyond the retention.")
        return current

    return as_of


RETENTION = "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION"


def current_table(
    monkeypatch: pytest.MonkeyPatch, spark: Any, data: list[tuple], schema: str, refused: str = RETENTION
) -> None:
    """Every version of the table past its retention (``refused``'s error), its current rows ``data``."""
    from vectordb.spark import change_feed

    current = spark.createDataFrame(data, schema)
    monkeypatch.setattr(change_feed, "_as_of", past_retention(spark, current, refused))


@pytest.mark.parametrize("value_type", ["bigint", "int"])  # int: a type changed since, which Spark widens
def test_past_the_retention_deleted_ids_are_looked_up_in_the_current_table(
    spark: Any, monkeypatch: pytest.MonkeyPatch, value_type: str
) -> None:
    """The real Delta refusal is tested in tests/sync (``test_a_backfill_past_the_retention_ends_exact``);
    here, which rows come back: ``a``, which the current table holds, with its current row."""
    current_table(monkeypatch, spark, [("a", 7)], f"id string, value {value_type}")
    rows: list[Change] = [("a", 1, "delete", 1), ("b", 2, "delete", 1)]
    assert resolved(changes(feed(spark, rows), table="/lake/docs")) == {
        "a": ("upsert", 7),
        "b": ("delete", 2),
    }


def test_past_the_retention_a_column_the_current_table_lacks_is_a_config_error(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    current_table(monkeypatch, spark, [("a",)], "id string")
    with pytest.raises(ConfigError, match=r"refuses to read version 1 of /lake/docs.*no column 'value'"):
        changes(feed(spark, [("a", 1, "delete", 1)]), table="/lake/docs")


def test_past_the_retention_a_batch_that_deletes_nothing_needs_no_column_of_the_current_table(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backfill of a table that later dropped a column: its batches that only insert and update look
    nothing up, so they go through as the feed has them."""
    current_table(monkeypatch, spark, [("a",)], "id string")
    rows: list[Change] = [
        ("a", 1, "insert", 1),
        ("b", 2, "update_preimage", 1),
        ("b", 3, "update_postimage", 1),
    ]
    assert resolved(changes(feed(spark, rows), table="/lake/docs")) == {
        "a": ("upsert", 1),
        "b": ("upsert", 3),
    }


def test_past_the_retention_a_type_the_current_table_changed_beyond_reach_is_a_config_error_naming_it(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    current_table(monkeypatch, spark, [("a", [7])], "id string, value array<bigint>")
    with pytest.raises(
        ConfigError, match=r"version 1 of /lake/docs.*'value' array<bigint> now, bigint in the feed"
    ):
        changes(feed(spark, [("a", 1, "delete", 1)]), table="/lake/docs")


def test_another_refusal_of_a_version_is_raised_as_it_is(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.errors import AnalysisException

    current_table(monkeypatch, spark, [("a", 7)], "id string, value long", refused="TABLE_OR_VIEW_NOT_FOUND")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        changes(feed(spark, [("a", 1, "delete", 1)]), table="/lake/docs")


NS_SCHEMA = "id string, tenant string, values array<float>, _change_type string, _commit_version long"


def _ns_feed(spark: Any, rows: list[tuple[str | None, str, float, str, int]]) -> Any:
    return spark.createDataFrame([(i, t, [x, 1.0], c, n) for i, t, x, c, n in rows], NS_SCHEMA)


MOVES = [
    # v1: UPDATE ... SET tenant = 't2' WHERE id = 'x' (the row moves to another namespace)
    ("x", "t1", 1.0, "update_preimage", 1),
    ("x", "t2", 1.0, "update_postimage", 1),
    # v1, v2: y moves to t2 and back to t1
    ("y", "t1", 2.0, "update_preimage", 1),
    ("y", "t2", 2.0, "update_postimage", 1),
    ("y", "t2", 2.0, "update_preimage", 2),
    ("y", "t1", 3.0, "update_postimage", 2),
    # v2: an update within its namespace
    ("z", "t2", 4.0, "update_preimage", 2),
    ("z", "t2", 5.0, "update_postimage", 2),
]


def test_an_update_that_moves_an_id_to_another_namespace_deletes_it_from_the_one_it_left(spark: Any) -> None:
    shuffled = random.Random(3).sample(MOVES, len(MOVES))
    out = changes(_ns_feed(spark, shuffled), namespace_column="tenant", num_partitions=3)
    from pyspark.sql import functions as F

    rows = out.select("id", "tenant", "values", "_change_type", F.spark_partition_id().alias("p")).collect()
    got = {(r["tenant"], r["id"]): (op_of(r["_change_type"]), r["values"][0]) for r in rows}
    assert got == {
        ("t1", "x"): ("delete", 1.0),
        ("t2", "x"): ("upsert", 1.0),
        ("t1", "y"): ("upsert", 3.0),
        ("t2", "y"): ("delete", 2.0),
        ("t2", "z"): ("upsert", 5.0),
    }
    assert len(rows) == len(got)
    # still partitioned by id, an id's delete before its upsert: a database of one row per id keeps it
    for key in ("x", "y"):
        mine = [r for r in rows if r["id"] == key]
        assert len({r["p"] for r in mine}) == 1
        assert [op_of(r["_change_type"]) for r in mine] == ["delete", "upsert"]
    # without namespace_column an id is a row: the post-image alone, as before
    plain = {r["id"]: r["tenant"] for r in changes(_ns_feed(spark, MOVES)).collect()}
    assert plain == {"x": "t2", "y": "t1", "z": "t2"}


def test_a_moved_id_leaves_no_row_behind_in_an_index_of_namespace_id_rows(
    spark: Any, rest_server: ServerHandle
) -> None:
    def write(df: Any) -> None:
        (
            df.write.format("vectordb")
            .option("uri", rest_server.uri)
            .option("op_column", "_change_type")
            .option("namespace_column", "tenant")
            .mode("append")
            .save()
        )

    write(
        _ns_feed(
            spark,
            [("x", "t1", 1.0, "insert", 0), ("y", "t1", 2.0, "insert", 0), ("z", "t2", 4.0, "insert", 0)],
        )
    )
    write(changes(_ns_feed(spark, MOVES), namespace_column="tenant"))
    index = {ns: sorted(ids) for ns, ids in rest_server.arrived().namespaces.items() if ids}
    assert index == {"t1": ["y"], "t2": ["x", "z"]}


def test_a_namespace_column_not_in_the_feed_is_a_config_error(spark: Any) -> None:
    with pytest.raises(ConfigError, match="namespace_column 'tenant' is not in the DataFrame"):
        changes(spark.createDataFrame([], SCHEMA), namespace_column="tenant")
