"""The driver side of a write: every check that can fail before a task starts, and the plan tasks get.

``plan_write`` runs in ``DataSource.writer()`` (and ``streamWriter()``), on the driver, before
Spark schedules anything, so a typo or a wrong column costs a second, not a failed job:

1. options: the connector's (unknown key, bad value, missing credential) and the adapter's;
2. columns and types, checked by the core's own input check on an empty batch of the schema;
3. with ``embed_url``, one probe request to the embedding endpoint (its key, the model, and the
   dimension of its vectors, which becomes the write's: a target of another fails here);
4. the target: one cheap call (``check_target``: reachability, credentials, dimension when the
   option ``dimension`` gives it; with ``create=true`` the collection is made here, once, and
   without ``dimension`` only if the target already fixes one: no task's rows decide it, nor the key
   type of option ``id_type=auto``, taken from the id column's Spark type); what it
   learnt (``resolved_options()``: a collection id, "verified") goes to the tasks, which skip it;
5. the save mode, the dead-letter and report locations, and the job-wide rate budget, divided
   by ``budget_tasks`` (the data source cannot see how many tasks run at once: it must be told).

``mode("overwrite")`` with ``allow_overwrite=true`` (batch writes only) then clears the target
here, once, before any task writes: the option ``namespace``, or with ``namespace_column`` or
no namespace the whole collection. Clearing and writing are not one transaction: a reader in
between sees the target empty, and a job that fails after the clear leaves what it wrote.

The resulting ``WritePlan`` is pickled into every task; it holds options, never a connection.

One check cannot run here: ``spark.speculation``. Spark hands ``writer()`` the options, the schema and
the save mode, not the session's conf, which a task sees (its local properties). So every task
refuses first, before it reads its partition or sends a row (``check_speculation``), and the job
fails with the reason having written no row (what ran here stays done: a collection ``create=true``
made, the target an ``allow_overwrite`` clear emptied).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from vectordb.connector.errors import ConfigError
from vectordb.connector.staging import Folder

from .driver_log import log_line
from .ml_vectors import dense_ml_columns
from .options import SparkOptions, parse_spark_options, split_options

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pyarrow as pa
    from pyspark.sql.types import StructType

    from vectordb.connector.client import Client
    from vectordb.connector.options import BackendOptions

__all__ = ["SPECULATION_CONF", "WritePlan", "arrow_schema", "check_speculation", "plan_write"]

SPECULATION_CONF = "spark.speculation"


@dataclass(frozen=True, slots=True)
class WritePlan:
    """What every task of one write needs; small and picklable."""

    options: BackendOptions  # validated; the rate budget already divided per task
    # as the user set them, before the target was asked: what the target taught the driver (a dimension,
    # "verified") differs once the first micro-batch wrote, so this, not ``options``, names a replayed one
    given_options: BackendOptions
    spark: SparkOptions
    token: str  # names this write's clients, staged dead letters and report
    target: str  # the backend's description, for messages (no credentials)
    dead_letters: Folder | None
    reports: Folder | None


def plan_write(
    raw: Mapping[str, str], schema: StructType, overwrite: bool, *, streaming: bool = False
) -> WritePlan:
    """Validate everything knowable on the driver; raise ``ConfigError`` (or a fatal server error)."""
    from vectordb.connector.planner import DriverPlan
    from vectordb.connector.redaction import caught, returned

    parsed = caught(_parsed, raw, schema)
    del raw  # the options in clear (a key): no frame of an error raised below holds them (tools print locals)
    options, spark_options = returned(parsed)
    with DriverPlan(options) as plan:  # the client checks what the backend knows: hosts, keys, limits
        _check_columns(plan.client, schema)
        plan.learn_model_dimension(lambda line: log_line(logging.INFO, line))
        client = plan.client
        if client.bulk is not None:  # the database's bulk path: its own driver checks
            client.bulk.check(client, streaming=streaming, overwrite=overwrite)
        if overwrite:
            _check_overwrite(client, spark_options, streaming)
        dead_letters = reports = None
        if options.on_error == "dead_letter":
            dead_letters = Folder.parse(options.dead_letter_path or "", "dead_letter_path").check_writable()
        if spark_options.report_path:
            reports = Folder.parse(spark_options.report_path, "report_path").check_writable()
        # a DataFrame's rows name no namespace of their own: a target that needs one for each row is
        # refused here rather than by every task alike
        dense = client.spec.vector_column in schema.fieldNames()
        prepared = plan.ask_target(clear=overwrite, dense=dense, own_namespaces=False)
        if prepared.cleared is not None:
            log_line(logging.INFO, f'mode("overwrite"): deleted {prepared.cleared} before writing')
        # what the driver learnt (a collection id, "already verified") spares every task the same calls
        return WritePlan(
            # api_key_env is read here, once: executors of a spark-submit job need not have the variable
            options=_embed_credential(_per_task_budget(plan.options, spark_options).with_credential()),
            given_options=options,
            spark=spark_options,
            token=uuid.uuid4().hex[:12],
            target=plan.target,
            dead_letters=dead_letters,
            reports=reports,
        )


def _parsed(raw: Mapping[str, str], schema: StructType) -> tuple[BackendOptions, SparkOptions]:
    """The write's options, parsed and checked (a missing budget_tasks fails before the target is asked)."""
    from vectordb.connector.client import resolve_options

    connector_raw, adapter_raw = split_options(raw)
    spark_options = parse_spark_options(adapter_raw)
    options = _metadata_from_schema(_id_type_from_schema(resolve_options(connector_raw), schema), schema)
    _per_task_budget(options, spark_options)
    return options, spark_options


def check_speculation(value: str | None) -> None:
    """Refuse every write while ``spark.speculation`` (its value as a task sees it) is on.

    A speculative copy of a slow task writes the same rows while the first attempt still writes, and
    a request already sent lands even after Spark kills the attempt that lost. So a late row of one
    attempt can replace what the other wrote after it: an id upserted then deleted in one partition
    ends stored, the earlier of two rows of one id wins, a finished job's id is overwritten by a
    straggler of the write before. No option of the data can rule that out, so no write may run.
    """
    if value is None or value.strip().lower() != "true":
        return
    raise ConfigError(
        f"{SPECULATION_CONF}=true: Spark may run a second copy of a slow task while the first still writes, "
        "and a request sent cannot be taken back when Spark stops the copy that lost, so an older row of an id "
        "could land after a newer one (an upsert after its delete) while the job reports success; no task "
        f"writes while it is on: run the write in an application started with {SPECULATION_CONF}=false "
        f"(spark-submit --conf {SPECULATION_CONF}=false; a running session cannot change it)"
    )


def _id_type_from_schema(options: BackendOptions, schema: StructType) -> BackendOptions:
    """Option ``id_type=auto`` (a key type that follows the data) resolved from the id column's Spark type.

    Left to the data, the key type is decided by the first batch a task sends, so an empty DataFrame
    (no task has a row) made no collection at all with ``create=true``. The schema says what every
    batch would have: an integral column gives integer ids (``int64``), a string or binary UUID column
    or ``id_from`` text ids (``varchar``), so the collection is made here, on the driver, as rows would
    have made it. Another type is left as it is: the column check refuses it.
    """
    from pyspark.sql.types import BinaryType, IntegralType, StringType

    if getattr(options, "id_type", None) != "auto" or not options.create:
        return options
    if options.id_from:
        resolved = "varchar"
    elif options.id_column not in schema.fieldNames():
        return options  # the column check names the missing column
    else:
        kind = schema[options.id_column].dataType
        if isinstance(kind, IntegralType):
            resolved = "int64"
        elif isinstance(kind, StringType | BinaryType):
            resolved = "varchar"
        else:
            return options
    return msgspec.structs.replace(options, id_type=resolved)


def _metadata_from_schema(options: BackendOptions, schema: StructType) -> BackendOptions:
    """Option ``metadata_columns`` left to its default (every column the write does not use otherwise)
    resolved to the schema's columns, as each task's reader will take them, with ``create=true``.

    The target is asked before any task, and a collection create=true makes may have fields a metadata
    column must not be named like (Milvus's ``id``, ``vector``, ``sparse``): the check sees the option,
    which was empty by default, so the collection was made and every row failed in every task. Resolved
    here, the check refuses the column by name before anything is made.
    """
    from vectordb.connector.client import column_spec
    from vectordb.connector.rows.arrow import _metadata_columns

    if options.metadata_columns is not None or not options.create:
        return options
    names = _metadata_columns(schema.fieldNames(), column_spec(options))
    return msgspec.structs.replace(options, metadata_columns=names) if names else options


def _embed_credential(options: BackendOptions) -> BackendOptions:
    """``embed_api_key_env`` read here, once, as ``api_key_env`` is: executors need not have the variable."""
    if options.embed_api_key_env is None:
        return options
    embed = options.embed_options()
    assert embed is not None
    return msgspec.structs.replace(options, embed_api_key=embed.credential(), embed_api_key_env=None)


def _per_task_budget(options: BackendOptions, spark: SparkOptions) -> BackendOptions:
    """Divide the job-wide ``max_rows_per_second``/``max_bytes_per_second`` among ``budget_tasks``."""
    rows, nbytes = options.max_rows_per_second, options.max_bytes_per_second
    if rows is None and nbytes is None:
        return options
    if spark.budget_tasks is None:
        given = "max_rows_per_second" if rows is not None else "max_bytes_per_second"
        raise ConfigError(
            f"option budget_tasks: {given} is a budget for the whole job, and the data source cannot see "
            "how many tasks write at once; set budget_tasks to that number (executors x cores each, or the "
            "partition count if smaller; e.g. spark.sparkContext.defaultParallelism)"
        )
    n = spark.budget_tasks
    return msgspec.structs.replace(
        options,
        max_rows_per_second=None if rows is None else rows / n,
        max_bytes_per_second=None if nbytes is None else nbytes / n,
    )


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark's Arrow writer hands a task for ``schema`` (UDTs as their SQL type)."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" not in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema)  # PySpark 4.0 has no timezone argument; its timestamps are UTC
    return to_arrow_schema(schema, timezone="UTC")


def _check_columns(client: Client, schema: StructType) -> None:
    """Run the core's input check on an empty batch: missing column or wrong type → ``ConfigError``."""
    import pyarrow as pa

    try:
        empty = pa.RecordBatch.from_pylist([], schema=arrow_schema(schema))
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise ConfigError(f"input schema: a column has a type the Arrow writer cannot pass: {exc}") from None
    (empty,) = dense_ml_columns([empty], client.options)  # as tasks hand it to the client
    client.check_columns(empty)


def _check_overwrite(client: Client, spark: SparkOptions, streaming: bool) -> None:
    """``mode("overwrite")`` deletes the target's contents: only when asked, and the backend can."""
    name = client.backend.name
    if streaming:  # first: allow_overwrite cannot lift it, so it is no fix to point to
        raise ConfigError(
            'mode("overwrite") / outputMode("complete") is not supported for streaming writes: every '
            'micro-batch would first delete the previous ones; use outputMode("append")'
        )
    if not spark.allow_overwrite:
        raise ConfigError(
            f'mode("overwrite") would delete what the {name} target holds before writing; use '
            'mode("append") (upserts replace rows by id), or set allow_overwrite=true to really replace it'
        )
    if not client.backend.supports_clear:
        raise ConfigError(
            f'mode("overwrite") with allow_overwrite=true: the {name} backend cannot delete a '
            "collection's or namespace's contents; use mode(\"append\") (upserts replace rows by id)"
        )
