"""vectordb.spark: ``df.write.format("vectordb")`` and ``writeStream.format("vectordb")`` for PySpark ≥ 4.0.

After ``pip install vectordb-connector`` Spark finds the data source by itself (the top-level
``pyspark_vectordb`` module). ``register(spark)`` registers it explicitly where that lookup
cannot see the install: a session started before it, a Spark Connect client, or an editable
(development) install, whose modules ``pkgutil.iter_modules()`` does not list.

    (df.write.format("vectordb")
       .option("uri", "pinecone+grpc://my-index-abc123.svc.pinecone.io")
       .option("api_key", key)
       .mode("append").save())

Options: see ``VectorDataSource``. ``changes(df)`` turns a micro-batch of a Delta change data feed
into rows for the sink (one per id, its latest change; ``spark/change_feed.py``).
``rows_from_letters(df)`` turns dead letters read from ``dead_letter_path`` back into their rows.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .change_feed import changes
    from .datasource import VectorDataSource
    from .letters import rows_from_letters

__all__ = [
    "VectorDataSource",
    "changes",
    "connect_redaction_regex",
    "register",
    "rows_from_letters",
    "workers_python_mismatch",
]


def _blank_py4j_option_values() -> None:
    """At DEBUG, py4j logs every command sent to the JVM, ``.option("api_key", key)`` with its value:
    blank the values of options named like a credential, and URI passwords (``user:pw@``, ``?password=``,
    ``api_key=``, ``sig=``), in those lines."""
    for name in ("py4j.clientserver", "py4j.java_gateway"):
        py4j_log = logging.getLogger(name)
        if not any(isinstance(f, _BlankPy4jCommands) for f in py4j_log.filters):
            py4j_log.addFilter(_BlankPy4jCommands())


class _BlankPy4jCommands(logging.Filter):
    """A py4j command is its arguments one a line, strings as ``s<text>``: ``option``, ``s<name>``,
    ``s<value>``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Command to send:"):
            from vectordb.connector.keys import SECRET_PARAMETER, without_password

            text = re.sub(
                rf"(\ns[^\n]*(?:{SECRET_PARAMETER.pattern})[^\n]*\ns)[^\n]*",
                r"\1***",
                record.getMessage(),
                flags=re.IGNORECASE,
            )
            text = re.sub(r"(://[^/@:\n]*:)[^\n]*@", r"\1***@", text)
            # any argument may be a URI: a PostgreSQL uri's ?password=, a signed URL's sig= (by word)
            record.msg, record.args = without_password(text), None
        return True


_blank_py4j_option_values()


# Spark Connect shows each statement's text, option values included, in the Spark UI and writes it to the
# event log, blanking only what this session conf matches (unset by default)
_REDACTION_CONF = "spark.sql.redaction.string.regex"


def register(spark: SparkSession) -> None:
    """Register ``format("vectordb")`` with ``spark`` (a classic or a Spark Connect session).

    On Spark Connect it also has the server blank the connector's credentials in that statement text.
    """
    from .datasource import VectorDataSource

    spark.dataSource.register(VectorDataSource)
    if type(spark).__module__.startswith("pyspark.sql.connect"):  # no import: it needs pyspark[connect]
        _redact_credentials(spark)
    _warn_if_workers_run_another_python(spark)


def connect_redaction_regex() -> str:
    """A Java regex for ``spark.sql.redaction.string.regex`` that matches, in a Connect plan's text, the
    value of every option whose name says it holds a credential (``api_key``, ``embed_api_key``,
    ``password``, ``token``: the words the connector blanks everywhere else) and a URI's password
    (``user:password@``, ``?api_key=``), wherever a URI is quoted."""
    from vectordb.connector.keys import SECRET_PARAMETER

    words = SECRET_PARAMETER.pattern
    quoted = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # a text-format string: \" inside does not end it
    option = rf'key: "[^"]*(?:{words})[^"]*"\s*value: {quoted}'
    userinfo = r'://[^"\\/@:\s]*:[^"\\]*(?:\\.[^"\\]*)*@'  # to the last @ in the string, as keys.py reads it
    query = rf'[?&;][^=&;"\\\s]*(?:{words})[^=&;"\\\s]*=[^&;"\\\s]*'
    return f"(?i:{option}|{userinfo}|{query})"


def _redact_credentials(spark: SparkSession) -> None:
    """Add ``connect_redaction_regex()`` to the session's redaction pattern, keeping one the user set; a
    server that refuses the conf gets a warning saying how to start it, since keys would show otherwise."""
    ours = connect_redaction_regex()
    try:
        current = spark.conf.get(_REDACTION_CONF, None) or ""
        if ours in current:
            return
        spark.conf.set(_REDACTION_CONF, f"(?:{current})|{ours}" if current else ours)
    except Exception as exc:  # a server that lets clients set only some confs (a serverless one)
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        logging.getLogger("vectordb.spark").warning(
            "Spark Connect shows each write's options in the Spark UI and the event log, and this session "
            f"may not set {_REDACTION_CONF} to blank the keys among them ({reason}): pass keys with api_key_env (or "
            f"embed_api_key_env), or start the server with --conf {_REDACTION_CONF}='{ours}'"
        )


def _warn_if_workers_run_another_python(spark: SparkSession) -> None:
    """One log line when a local session's Python workers would start a Python other than this one,
    where ``vectordb`` is likely missing: their failure comes back as a long Java trace."""
    try:
        master = spark.sparkContext.master or ""
        configured = spark.conf.get("spark.pyspark.python", None)
    except Exception:  # Spark Connect: the workers are the server's business
        return
    message = workers_python_mismatch(master, configured, os.environ.get("PYSPARK_PYTHON"))
    if message:
        logging.getLogger("vectordb.spark").warning(message)


def workers_python_mismatch(master: str, configured: str | None, env: str | None) -> str | None:
    """Why a ``local`` session's Python workers would not run this Python, or ``None`` if they would.

    Spark starts ``spark.pyspark.python``, else ``$PYSPARK_PYTHON``, else ``python3`` from ``PATH``.
    Two executables in one folder (``python``, ``python3`` of a venv) count as the same Python.
    """
    if not master.startswith("local"):
        return None  # executors elsewhere: their Python is their cluster's
    given = configured or env or "python3"
    found = shutil.which(given) or given
    if os.path.dirname(os.path.abspath(found)) == os.path.dirname(os.path.abspath(sys.executable)):
        return None
    return (
        f"Spark's Python workers will start {found}, not this Python ({sys.executable}), and may not "
        "find vectordb: activate this environment, or set PYSPARK_PYTHON (spark.pyspark.python) to it"
    )


def __getattr__(name: str) -> Any:
    if name == "VectorDataSource":
        from .datasource import VectorDataSource

        return VectorDataSource
    if name == "changes":
        from .change_feed import changes

        return changes
    if name == "rows_from_letters":
        from .letters import rows_from_letters

        return rows_from_letters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
