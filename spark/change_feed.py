"""``changes(df)``: one micro-batch of a Delta change data feed, as rows for ``format("vectordb")``.

A change feed (``readStream.format("delta").option("readChangeFeed", "true")``) has one row per
change, with ``_change_type`` (``insert``, ``update_preimage``, ``update_postimage``, ``delete``),
``_commit_version`` and ``_commit_timestamp``. The sink needs one row per id, saying what the id
ends as. ``changes`` keeps, for each id:

- only its latest change in the micro-batch: the highest ``_commit_version``, and within one
  version a post-image or insert over a delete (a commit that rewrites a table, an overwrite or a
  ``replaceWhere``, deletes the old row and inserts the new one under the same id: the row stays);
- nothing of pre-images, but for an update that changed the id itself (``SET id = …``, or a column of
  ``id_from``): a pre-image that is its id's last change in the batch, with no post-image or insert of
  that id in its version, says the id is gone, and leaves as a ``delete`` (a pre-image otherwise says
  what a row was, not what it is);
- its change type as the op (``insert``/``update_postimage`` upsert, ``delete`` deletes; the
  spellings of ``op_column``, ``connector/rows/ops.py``), in column ``op_column``; the commit
  columns are dropped.

With ``namespace_column`` (the sink's option), a row is an id in a namespace: the latest change is kept
for each (namespace, id), so an update that moves an id to another namespace (``SET tenant = 't2'``) leaves
the pre-image of the namespace it left as a ``delete``, which databases keeping one row per (namespace, id)
need (PostgreSQL, Pinecone namespaces, Weaviate tenants, Qdrant shard keys); the id's delete comes before its
upsert in its task, so a database keeping one row per id ends with the row as well.

The rows are partitioned by id (one shuffle, which the latest-per-id window reuses), so every
change of an id is in one task: two tasks never race on one id. Rows whose id is null are all kept
(each one fails in the sink as a row without an id, instead of all but one vanishing here).

The module is ``change_feed``, not ``changes``: a submodule named like the function would replace
``vectordb.spark.changes`` with the module as soon as anything imported it.

A micro-batch can end inside a commit: Delta's change-feed source admits files up to
``maxFilesPerTrigger`` (1,000 unless set) or ``maxBytesPerTrigger``, and a commit that deletes and
inserts the same id (an overwrite) lists its new files first, so its inserts can land in one
micro-batch and its deletes in the next, which would then delete rows the table still holds. With
``table`` (the Delta table's path or name), ``changes`` reads the change feed of the versions the batch
deletes in, whole, and an id such a version inserts again is upserted with that row instead: exact at
the end of every micro-batch, wherever the batches cut the commits (whichever order a commit's files
come in). The cost, in a batch that deletes: a read of those versions' changes, which grows with the
commits (a ``MERGE``'s change files), not with the table. ``table`` may instead be a function from a
version to the table as of it (a table no path or name reaches): then the ids the batch deletes are
looked up in the table as of its last version, a read of every id of the table. Without ``table``, the
result is exact as long as no micro-batch cuts such a commit. Delta 4.1 and later refuse to read a
version older than the table's deleted-file retention, which the first micro-batches of a backfill of an
old table are: for them the deleted ids are looked up in the current table (``_snapshot``), exact once
the query reaches the version that was current then.

The input is a micro-batch, not a stream: apply it inside ``foreachBatch``, where a batch that runs
again after a restart (the same versions) upserts and deletes the same ids again, which is safe.
Ids must be unique in the table: two rows of one id in one version have no order.

A column added to the table (``ALTER TABLE ADD COLUMNS``) after the versions of a micro-batch is in the
batch, null (a streaming query reads every version with the schema the table had when it started), and
not in the table as of the batch's version: it is no missing column, and a row looked up there has it
null.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from vectordb.connector.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["CHANGE_TYPE", "COMMIT_TIMESTAMP", "COMMIT_VERSION", "changes"]

_log = logging.getLogger(__name__)

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
PREIMAGE = "update_preimage"
DELETE = "delete"
_LATEST = "__vectordb_latest"  # the window's row number, dropped before the rows leave


def changes(
    df: DataFrame,
    id_column: str | Sequence[str] = "id",
    *,
    table: str | Callable[[int], DataFrame] | None = None,
    op_column: str = CHANGE_TYPE,
    namespace_column: str | None = None,
    num_partitions: int | None = None,
) -> DataFrame:
    """The latest change of each id in one micro-batch of a Delta change feed, partitioned by id.

    Write the result with ``.option("op_column", op_column)`` (and the same ``id_column``):

        def write(batch, batch_id):
            (changes(batch).write.format("vectordb").option("uri", uri)
               .option("op_column", "_change_type").mode("append").save())

        feed.writeStream.foreachBatch(write).option("checkpointLocation", cp).start()

    With ``table=``, this reads the batch before the write does (its versions, then the ids a delete
    inserts again): ``batch.persist()`` before and ``batch.unpersist()`` after the write, or each read
    scans the feed's files again.

    Args:
        df: a micro-batch (or any batch) of a change data feed: the table's columns, ``_change_type``
            and ``_commit_version`` (``_commit_timestamp`` is dropped when present).
        id_column: the id column, as the sink's option ``id_column`` (default ``id``); or the columns
            the sink derives ids from (``id_from``), which together identify a row.
        table: the Delta table the feed comes from (a path, or a name ``spark.read.table`` knows): ids
            the batch deletes that the same version inserts again are upserted with that row; or a
            function from a version to the table as of that version: ids the batch deletes that the
            table still holds at the batch's last version are (see above).
        op_column: the name the change type leaves under (the sink's ``op_column``).
        namespace_column: the sink's option ``namespace_column``, where the index has one row per
            (namespace, id) (PostgreSQL, Pinecone namespaces, Weaviate tenants, Qdrant shard keys): the
            latest change is kept per (namespace, id), and an update that moves an id to another namespace
            deletes it from the one it left. Rows stay partitioned by id, with an id's deletes before its
            upserts, so a database with one row per id ends with the row too.
        num_partitions: partitions of the result (default: ``spark.sql.shuffle.partitions``).

    Returns:
        One row per id: the table's columns and ``op_column``.

    Raises:
        ConfigError: a streaming DataFrame, a missing change-feed or id column, a change type that is
            not a string, a commit version that is not an integer, or an ``op_column`` that names one
            of the table's own columns.
    """
    keys = [id_column] if isinstance(id_column, str) else list(id_column)
    _check(df, keys, op_column, namespace_column, num_partitions)
    _check_table(table)
    # a row is what the index keys it by: its id, and its namespace where the sink has namespace_column;
    # a null namespace is a namespace (the write's), so it matches itself where a null id matches nothing
    namespace = [] if namespace_column is None or namespace_column in keys else [namespace_column]
    row = [*keys, *namespace]
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    change = F.lower(F.col(CHANGE_TYPE))
    by_id = [F.col(k) for k in keys]
    no_id = F.lit(False)
    for key in by_id:
        no_id = no_id | key.isNull()
    kept = df.filter(F.col(CHANGE_TYPE).isNull() | (change != PREIMAGE) | ~no_id)  # a null id's: nothing
    if table is not None:
        kept = _with_rows_still_there(kept, row, table, namespace)
    spread = kept.repartition(num_partitions, *by_id) if num_partitions else kept.repartition(*by_id)
    # within one version a pre-image comes first (the id had the row before it), then a delete, then the
    # insert or post-image of the same id
    order = F.when(change == PREIMAGE, -1).when(change == DELETE, 0).otherwise(1)
    newest_first = Window.partitionBy(*[F.col(k) for k in row]).orderBy(
        F.col(COMMIT_VERSION).desc(), order.desc()
    )
    latest = spread.withColumn(_LATEST, F.row_number().over(newest_first)).filter(
        (F.col(_LATEST) == 1) | no_id
    )
    # a pre-image kept is an id an update took away from its row: it is gone
    latest = latest.withColumn(
        CHANGE_TYPE,
        F.when(change == PREIMAGE, F.lit(DELETE)).otherwise(F.col(CHANGE_TYPE)),
    )
    if row != keys:  # an id moved to another namespace: its delete goes before its upsert, in its task
        latest = latest.sortWithinPartitions(*by_id, (F.lower(F.col(CHANGE_TYPE)) == DELETE).desc())
    dropped = [c for c in (_LATEST, COMMIT_VERSION, COMMIT_TIMESTAMP) if c in latest.columns]
    out = latest.drop(*dropped)
    return out if op_column == CHANGE_TYPE else out.withColumnRenamed(CHANGE_TYPE, op_column)


def _with_rows_still_there(
    kept: DataFrame, keys: list[str], table: str | Callable[[int], DataFrame], null_safe: list[str]
) -> DataFrame:
    """``kept`` and, for each id it deletes that the table still holds, that row: later than the delete
    (or in the same version, where an insert wins), so the window keeps it. The ``null_safe`` keys (the
    namespace column) match where both are null (``_semi_join``).

    A Delta path or name: the ids a deleting commit inserts again are in that commit's own change feed,
    so the feed of the versions that delete is read, and their inserts and post-images of the deleted ids
    come back. That read grows with those commits, not with the table: a ``MERGE`` reads its change files.
    On a 1,000,000-row table a version's ``changes()`` took a median 3.0 s this way against 5.2 s through
    the table's ids (``jobs.bench.sync --databases none``). Where that feed cannot be read as the batch
    was (a later schema change: a batch read of a table without column mapping takes its latest schema,
    and Delta refuses one that does not fit), the table as of the batch's last version is read instead,
    as for a function from a version to the table: its id columns, and its rows only when some deleted id
    is still there. That read grows with the table.
    """
    from pyspark.sql import functions as F

    is_delete = F.lower(F.col(CHANGE_TYPE)) == DELETE
    # one pass over the batch: its last version and the versions that delete
    last = kept.agg(F.max(COMMIT_VERSION), F.collect_set(F.when(is_delete, F.col(COMMIT_VERSION)))).first()
    if last is None or last[0] is None:
        return kept
    version, deleting = int(last[0]), sorted(int(v) for v in last[1])
    past_retention = False
    if callable(table):
        snapshot = table(version)
    else:
        snapshot, past_retention = _snapshot(kept, table, version)
    if not past_retention:  # the current table is no check of an old version's columns
        _check_columns(kept, snapshot, table)  # on every batch: a wrong table fails at once
    if not deleting:
        return kept
    if past_retention and isinstance(table, str):  # only a path or a name is read past it
        _check_current_columns(kept, snapshot, table, version)
    if not callable(table) and not past_retention:  # Delta refuses the feed of versions it refuses
        found = _rows_inserted_again(kept, keys, table, deleting, null_safe)
        if found is not None:
            return found
    deleted = kept.filter(is_delete).select(*keys).distinct()
    still_there = _semi_join(snapshot.select(*keys), deleted, keys, null_safe)
    if still_there.isEmpty():
        return kept
    # a column added after the version (null in the batch, which Spark reads with the latest schema) is null
    added = {c: F.lit(None).cast(kept.schema[c].dataType) for c in _missing_columns(kept, snapshot.columns)}
    back = _semi_join(snapshot, still_there, keys, null_safe).withColumns(
        {**added, CHANGE_TYPE: F.lit("update_postimage"), COMMIT_VERSION: F.lit(version).cast("long")}
    )
    if COMMIT_TIMESTAMP in kept.columns:
        back = back.withColumn(COMMIT_TIMESTAMP, F.lit(None).cast(kept.schema[COMMIT_TIMESTAMP].dataType))
    try:  # past the retention, the current table's types may have changed since: Spark widens what it can
        joined = kept.unionByName(back.select(*kept.columns))
        if past_retention:
            joined.schema  # noqa: B018  # analysed now (Spark Connect analyses lazily)
    except _spark_errors() as exc:
        if not past_retention:
            raise
        raise ConfigError(
            f"changes(): Delta refuses to read version {version} of {table}, older than the table's "
            f"delta.deletedFileRetentionDuration, and its current version's rows do not fit the change "
            f"feed's columns ({_type_changes(kept, snapshot)}): start the query from a version within that "
            "retention"
        ) from exc
    return joined


def _snapshot(kept: DataFrame, table: str, version: int) -> tuple[DataFrame, bool]:
    """The Delta table at ``table`` as of ``version``, and False; where Delta refuses to read that version,
    the table as it is now, and True.

    Delta 4.1 and later refuse to read a version older than the table's
    ``delta.deletedFileRetentionDuration`` (7 days unless set), in a change-feed read as in ``VERSION AS
    OF``, while the streaming source still reads its feed: the first micro-batches of a backfill from
    ``startingVersion`` 0 of a table older than that are such versions. Their deleted ids are looked up
    in the current table: an id it holds is upserted with its current row, which the id's later changes,
    in later micro-batches, follow. The index is then exact once the query has reached the version
    that was current when the last such micro-batch ran, not after each of their micro-batches. The
    current table's columns are checked only by a batch that deletes (``_check_current_columns``).
    """
    errors = _spark_errors()
    try:
        snapshot = _as_of(kept, table, version)
        snapshot.schema  # noqa: B018  # analysed now: Delta refuses an old version here, not in the write
        return snapshot, False
    except errors as exc:
        if _BEYOND_RETENTION not in str(exc):
            raise
    if table not in _told_beyond_retention:
        _told_beyond_retention.add(table)
        _log.warning(
            "changes(): Delta refuses to read version %d of %s, older than the table's "
            "delta.deletedFileRetentionDuration; the ids micro-batches of such versions delete are looked up "
            "in the current table, and the index is exact once the query reaches the version current then",
            version,
            table,
        )
    return _as_of(kept, table, None), True


def _check_current_columns(kept: DataFrame, current: DataFrame, table: str, version: int) -> None:
    """Past the retention, for a batch that deletes: the current table must have the feed's columns, as
    its rows of deleted ids still there go out in their place (a batch that deletes nothing reads none)."""
    missing = _missing_columns(kept, current.columns)
    if missing:
        raise ConfigError(
            f"changes(): Delta refuses to read version {version} of {table}, older than the table's "
            f"delta.deletedFileRetentionDuration, and its current version has no column "
            f"{', '.join(map(repr, missing))}: start the query from a version within that retention"
        )


def _type_changes(kept: DataFrame, current: DataFrame) -> str:
    """The columns whose type the current table has changed, as ``'value' array<bigint> now, bigint in
    the feed``."""
    changed = [
        f"{c!r} {current.schema[c].dataType.simpleString()} now, "
        f"{kept.schema[c].dataType.simpleString()} in the feed"
        for c in kept.columns
        if c in current.columns and current.schema[c].dataType != kept.schema[c].dataType
    ]
    return "; ".join(changed) or "no column's type differs"


def _spark_errors() -> tuple[type[BaseException], ...]:
    """What Spark raises for a read Delta refuses: PySpark's errors, and py4j's in a classic session
    (Spark Connect's client alone has no py4j)."""
    from pyspark.errors import PySparkException

    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:
        return (PySparkException,)
    return (PySparkException, Py4JJavaError)


# Delta's error for a version older than the table's deleted-file retention (Delta 4.1 and later)
_BEYOND_RETENTION = "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION"
_told_beyond_retention: set[str] = set()  # tables the warning was given for, once each per process


def _as_of(kept: DataFrame, table: str, version: int | None) -> DataFrame:
    """The Delta table at ``table`` (a path or a name) as of ``version`` (``None``: its current version)."""
    ref = f"delta.`{table.replace('`', '``')}`" if _is_path(table) else table
    at = "" if version is None else f" VERSION AS OF {version}"
    return kept.sparkSession.sql(f"SELECT * FROM {ref}{at}")


def _is_path(table: str) -> bool:
    """A path, not a name: a name ``spark.sql`` knows holds no ``/`` or ``:`` but in backquotes, as the SQL
    name of a path table does (``delta.`/lake/docs` ``), which was quoted again as a path and failed."""
    return ("/" in table or ":" in table) and not _QUOTED_NAME.fullmatch(table)


# a table's SQL name whose last part is backquoted (delta.`/lake/docs`, catalog.db.`t:1`)
_QUOTED_NAME = re.compile(r"(?:\w+\.)+`(?:[^`]|``)+`")


def _semi_join(left: DataFrame, right: DataFrame, keys: list[str], null_safe: list[str]) -> DataFrame:
    """``left``'s rows whose ``keys`` are a row of ``right``'s, where the ``null_safe`` keys also match
    null to null: an equi-join never does, so a deleted id of the null namespace the table still holds
    (or inserts again) would leave the index as a delete. Ids stay equi-joined: a null id is no id."""
    from functools import reduce

    from pyspark.sql import functions as F

    # right's keys renamed: the two sides may share a lineage, which makes left[k] == right[k] ambiguous
    names = [f"__vectordb_key{i}" for i in range(len(keys))]
    other = right.select(*[F.col(k).alias(n) for k, n in zip(keys, names, strict=True)])
    matches = [
        left[k].eqNullSafe(other[n]) if k in null_safe else left[k] == other[n]
        for k, n in zip(keys, names, strict=True)
    ]
    return left.join(other, reduce(lambda a, b: a & b, matches), "left_semi")


def _rows_inserted_again(
    kept: DataFrame, keys: list[str], table: str, versions: list[int], null_safe: list[str]
) -> DataFrame | None:
    """``kept`` and the inserts and post-images, in the change feed of ``table``, of the ids it deletes,
    in the ``versions`` that delete them: what a commit deletes and inserts again (an overwrite) comes
    back whichever micro-batch holds which of its files; after a ``MERGE`` nothing does, and ``kept`` is
    returned as it is. ``None`` where the feed of those versions cannot be read with the batch's columns."""
    from pyspark.sql import functions as F

    errors = _spark_errors()
    reader = (
        kept.sparkSession.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", versions[0])
        .option("endingVersion", versions[-1])
    )
    try:
        feed = reader.load(table) if _is_path(table) else reader.table(table)
        if any(
            c not in feed.columns or feed.schema[c].dataType != kept.schema[c].dataType for c in kept.columns
        ):
            _log.info(
                "changes(): the feed of versions %d-%d reads in another schema now", versions[0], versions[-1]
            )
            return None
        deleting = kept.filter(F.lower(F.col(CHANGE_TYPE)) == DELETE).select(*keys, COMMIT_VERSION)
        inserted = F.lower(F.col(CHANGE_TYPE)).isin("insert", "update_postimage")
        back = _semi_join(
            feed.filter(inserted & F.col(COMMIT_VERSION).isin(versions)),
            deleting,
            [*keys, COMMIT_VERSION],
            null_safe,
        )
        if back.isEmpty():
            return kept
    except errors as exc:  # Delta refuses the read: a schema that does not fit
        _log.info(
            "changes(): the feed of versions %d-%d cannot be read now: %s", versions[0], versions[-1], exc
        )
        return None
    return kept.unionByName(back.select(*kept.columns))


def _missing_columns(kept: DataFrame, table_columns: list[str]) -> list[str]:
    """The feed's columns, other than the change feed's own, that the table has not."""
    return [
        c for c in kept.columns if c not in (*table_columns, CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
    ]


def _check_columns(kept: DataFrame, snapshot: DataFrame, table: str | Callable[[int], DataFrame]) -> None:
    """The table as of the batch's last version must have the feed's columns, but for columns added to it
    since: a streaming query reads every version with the table's schema as of its start, so a column
    added later is in every micro-batch, null in those of versions before it."""
    missing = _missing_columns(kept, snapshot.columns)
    if missing and isinstance(table, str):  # added since: the current table has it
        now = _as_of(kept, table, None).columns
        missing = [c for c in missing if c not in now]
    elif missing:  # a function reaches no current version: added since, the batch holds only nulls of it
        from pyspark.sql import functions as F

        counts = kept.agg(*[F.count(kept[c]) for c in missing]).collect()[0]
        missing = [c for c, n in zip(missing, counts, strict=True) if n]
    if missing:
        raise ConfigError(
            f"changes(): the table has no column {', '.join(map(repr, missing))} of the change feed; "
            "apply changes() to the feed's own columns and derive others after it"
        )


def _check_table(table: object) -> None:
    """``table=`` is a path, a name or a function: a DataFrame (no version of it can be read) would be taken
    for a name and fail inside Spark, naming nothing."""
    if table is None or isinstance(table, str) or (callable(table) and not _is_dataframe(table)):
        return
    raise ConfigError(
        f"changes(): table= takes a Delta table's path or name, or a function from a version to the table as "
        f"of it (lambda version: spark.read.option('versionAsOf', version).table(name)), not a "
        f"{type(table).__name__}"
    )


def _is_dataframe(value: object) -> bool:
    from pyspark.sql import DataFrame

    return isinstance(value, DataFrame)


def _check(
    df: DataFrame, keys: list[str], op_column: str, namespace_column: str | None, num_partitions: int | None
) -> None:
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType, StringType

    if df.isStreaming:
        raise ConfigError(
            "changes() resolves one micro-batch, not a stream: call it inside "
            "writeStream.foreachBatch(lambda batch, batch_id: changes(batch).write...)"
        )
    columns = df.columns
    missing = [c for c in (CHANGE_TYPE, COMMIT_VERSION) if c not in columns]
    if missing:
        raise ConfigError(
            f"changes(): the DataFrame has no column {', '.join(map(repr, missing))}: it is not a Delta change "
            f"data feed (read it with .option('readChangeFeed', 'true')); its columns: {columns}"
        )
    absent = [k for k in keys if k not in columns]
    if not keys or absent:
        raise ConfigError(
            f"changes(): id column {', '.join(map(repr, absent or keys))} is not in the DataFrame "
            f"(columns: {columns}); pass id_column= as the sink's option id_column"
        )
    if namespace_column is not None and namespace_column not in columns:
        raise ConfigError(
            f"changes(): namespace_column {namespace_column!r} is not in the DataFrame (columns: {columns}); "
            "pass the sink's option namespace_column"
        )
    kind = df.schema[CHANGE_TYPE].dataType
    if not isinstance(kind, StringType):
        raise ConfigError(
            f"changes(): column {CHANGE_TYPE!r} has type {kind.simpleString()}; expected string"
        )
    version = df.schema[COMMIT_VERSION].dataType
    if not isinstance(version, (ByteType, ShortType, IntegerType, LongType)):  # as text, "9" > "10"
        raise ConfigError(
            f"changes(): column {COMMIT_VERSION!r} has type {version.simpleString()}; expected an integer "
            f"(Delta's is long): cast it, .withColumn({COMMIT_VERSION!r}, col({COMMIT_VERSION!r}).cast('long'))"
        )
    if op_column != CHANGE_TYPE and op_column in columns:
        raise ConfigError(f"changes(): op_column {op_column!r} is a column of the table; name another")
    if num_partitions is not None and num_partitions < 1:
        raise ConfigError(f"changes(): num_partitions must be at least 1, not {num_partitions}")
