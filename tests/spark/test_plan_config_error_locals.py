"""A bad option given to a Spark write is raised from no frame of ``plan_write`` whose locals hold the key:
it held the options in clear (``raw``, ``connector_raw``) while they were parsed, as ``connect()`` and
``WriteToVectorDB`` did before them, and tools print a traceback's locals (Sentry, rich, ``--showlocals``)."""

from __future__ import annotations

import traceback

import pytest
from pyspark.sql.types import ArrayType, FloatType, StringType, StructField, StructType

from vectordb.connector.errors import ConfigError
from vectordb.spark.plan import plan_write

SCHEMA = StructType([StructField("id", StringType()), StructField("values", ArrayType(FloatType()))])


@pytest.mark.parametrize(
    ("options", "secret"),
    [
        (
            {"uri": "qdrant://127.0.0.1:1/d", "api_key": "sk-SPARKLOCALS-hunter51", "batch_size": "0"},
            "hunter51",
        ),
        (
            {"uri": "qdrant://127.0.0.1:1/d", "api_key": "sk-SPARKLOCALS-hunter52", "bach_size": "9"},
            "hunter52",
        ),
        ({"uri": "postgresql://u:hunter53@127.0.0.1:1/db?table=t", "batch_size": "0"}, "hunter53"),
    ],
)
def test_a_bad_option_leaves_no_key_in_the_tracebacks_locals(options: dict, secret: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan_write(options, SCHEMA, overwrite=False)
    error = caught.value
    assert error.__traceback__ is not None
    below_the_call = error.__traceback__.tb_next  # this test's own frame holds what it passed
    shown = "".join(
        traceback.TracebackException(type(error), error, below_the_call, capture_locals=True).format()
    )
    assert "plan_write" in shown and "option" in str(error)  # the frames are there, with their locals
    assert secret not in shown
