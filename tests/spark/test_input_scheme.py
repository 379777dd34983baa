"""An ``--input`` of a scheme Spark has no file system for (a typo: ``s4://``) is one line naming it,
not Spark's page of Java trace."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from vectordb.connector.errors import ConfigError
from vectordb.spark.load import read_input


def test_load_names_a_scheme_spark_cannot_read(spark: Any) -> None:
    args = argparse.Namespace(sample=None, input=["s4://bucket/x.parquet"], format="parquet")
    with pytest.raises(ConfigError) as caught:
        read_input(spark, args)
    assert str(caught.value).startswith(
        "--input 's4://bucket/x.parquet': Spark has no file system for s4:// here"
    )
