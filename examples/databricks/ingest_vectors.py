# Databricks notebook source
# ruff: noqa: E402, F821  (a notebook: imports in cells; spark, dbutils, display are its globals)
# MAGIC %md
# MAGIC # Load embeddings from a Unity Catalog table into a vector database
# MAGIC
# MAGIC `df.write.format("vectordb")` writes a DataFrame of ids and vectors with the connector's own batched,
# MAGIC concurrent, retrying upsert client in every task. This notebook:
# MAGIC
# MAGIC 1. installs the connector (notebook-scoped) and registers the data source;
# MAGIC 2. reads a Delta table of embeddings (`id`, `embedding array<float>`, other columns become metadata);
# MAGIC 3. writes it to the index, keeping rows that fail (with the reason) as Parquet in a Volume;
# MAGIC 4. reads the dead letters back, and shows the job's report;
# MAGIC 5. keeps the index up to date from the table's change stream (Structured Streaming).
# MAGIC
# MAGIC Needs Apache Spark 4.0 or later (Databricks Runtime 17 or later). On a classic cluster or on
# MAGIC serverless / standard (shared) access mode alike; see `README.md` beside this notebook for the differences.

# COMMAND ----------

# MAGIC %md
# MAGIC ## Install
# MAGIC The connector has no release on PyPI yet: build its wheel from the source (in a checkout, `uv build --wheel`
# MAGIC or `python -m build --wheel`), copy it to the Volume (`databricks fs cp
# MAGIC dist/vectordb_connector-0.1.0-py3-none-any.whl dbfs:/Volumes/main/default/vectordb/wheels/`) or import it
# MAGIC into the workspace, and install that file. Once it is released: `%pip install "vectordb-connector[spark,grpc]"`.

# COMMAND ----------

# MAGIC %pip install "/Volumes/main/default/vectordb/wheels/vectordb_connector-0.1.0-py3-none-any.whl[spark,grpc]"

# COMMAND ----------

dbutils.library.restartPython()

# COMMAND ----------

# MAGIC %md
# MAGIC ## Settings
# MAGIC The API key comes from a secret scope (`databricks secrets put-secret vdb pinecone_api_key`); Databricks
# MAGIC redacts it in outputs and the connector never logs it.

# COMMAND ----------

dbutils.widgets.text("source_table", "main.default.doc_embeddings")
dbutils.widgets.text("uri", "pinecone+grpc://my-index-abc123.svc.pinecone.io")
dbutils.widgets.text("namespace", "docs")
dbutils.widgets.text("volume", "/Volumes/main/default/vectordb")

source_table = dbutils.widgets.get("source_table")
uri = dbutils.widgets.get("uri")
namespace = dbutils.widgets.get("namespace")
volume = dbutils.widgets.get("volume")
api_key = dbutils.secrets.get("vdb", "pinecone_api_key")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Register the data source
# MAGIC After a cluster-scoped install Spark finds `format("vectordb")` by itself. A notebook-scoped `%pip`
# MAGIC install, and every Spark Connect session (serverless, standard access mode), registers it explicitly:

# COMMAND ----------

from vectordb.spark import register

register(spark)  # spark: the notebook's session

# COMMAND ----------

# MAGIC %md
# MAGIC ## Write the table
# MAGIC `mode("append")` is required: Spark refuses its default save mode (`errorifexists`) for Python data
# MAGIC sources. Upserts add new ids and replace existing ones, so running the cell again changes nothing.
# MAGIC
# MAGIC Options are checked on the driver before any task starts (a typo fails in a second). `budget_tasks`
# MAGIC divides the job-wide `max_rows_per_second` among the tasks that write at once. Every write below
# MAGIC takes the same `write_options`, so a row written again stores what it would have stored the first time.

# COMMAND ----------

write_options = {
    "uri": uri,
    "api_key": api_key,
    "namespace": namespace,
    "id_column": "id",
    "vector_column": "embedding",
    "metadata_columns": "title,url,updated_at",  # the table's other columns are not stored
    "dimension": "1536",  # checked against the index before any task starts
    "max_concurrency": "8",
    "max_rows_per_second": "20000",  # the whole job, not per task...
    "budget_tasks": "16",  # ...divided among this many tasks at once (executors x cores)
}
df = spark.table(source_table)

(
    df.write.format("vectordb")
    .options(**write_options)
    .option("on_error", "dead_letter")
    .option("dead_letter_path", f"{volume}/dead_letters")
    .option("report_path", f"{volume}/reports")
    .mode("append")
    .save()
)

# COMMAND ----------

# MAGIC %md
# MAGIC ## What failed, and why
# MAGIC Dead letters are Parquet: `id`, `error`, `retryable`, `attempts`, then the row's own columns, so they can
# MAGIC be fixed and written again with the same writer. Each job adds its own files.

# COMMAND ----------

dead = spark.read.parquet(f"{volume}/dead_letters")
display(dead.groupBy("error", "retryable").count().orderBy("count", ascending=False))

# COMMAND ----------

import json
import os

# the newest report by time: names are job-<random id>, so their order is not the order the jobs ran in
reports = [f"{volume}/reports/{p}" for p in os.listdir(f"{volume}/reports") if p.startswith("job-")]
with open(max(reports, key=os.path.getmtime)) as file:
    latest = json.load(file)
print(latest["summary"])
for reason, rows in latest["reasons"]:
    print(f"{rows:>8} x {reason}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Write the retryable ones again
# MAGIC Rows that failed for a retryable reason (throttling that outlasted the retries, a timeout) can simply be
# MAGIC written again; the others need their data fixed first. A letter is not its row: `rows_from_letters` gives
# MAGIC the rows back as the first write read them (the reason dropped), and the same `write_options` store the
# MAGIC same columns (a letter holds every column of its row, also those `metadata_columns` leaves out).

# COMMAND ----------

from vectordb.spark import rows_from_letters

retry = rows_from_letters(dead.where("retryable"))  # id_column "id", as in write_options
(
    retry.write.format("vectordb")
    .options(**write_options)
    .option("on_error", "report")
    .option("report_path", f"{volume}/reports")
    .mode("append")
    .save()
)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Keep the index up to date (Structured Streaming)
# MAGIC Each micro-batch is written like a job, named `batch-<n>` in the reports and dead letters. A micro-batch
# MAGIC replayed after a failure upserts the same ids again: nothing is duplicated.

# COMMAND ----------

query = (
    spark.readStream.table(source_table)
    .writeStream.format("vectordb")
    .options(**write_options)
    .option("on_error", "dead_letter")
    .option("dead_letter_path", f"{volume}/stream_dead_letters")  # one folder per streaming query
    .option("report_path", f"{volume}/stream_reports")
    .option("checkpointLocation", f"{volume}/checkpoints/doc_embeddings")
    .trigger(availableNow=True)
    .start()
)
query.awaitTermination()
