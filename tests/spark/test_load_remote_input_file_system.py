"""``vectordb-load`` with an ``--input`` whose Hadoop file system Spark lacks (``gs://`` without the GCS
connector's jar: ClassNotFoundException GoogleHadoopFileSystem; ``https://``, whose Hadoop file system
cannot list: UnsupportedOperationException) printed a page of Java trace and exited with 1, and Spark's
WARN line quoted the input with its password. The command asks the JVM for each input's file system
before Spark reads: one line, exit status 2, the input quoted without its password."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vectordb.connector.errors import ConfigError
from vectordb.spark.load import load_files

# what Spark prints when its JVM starts (its banner, and log lines such as a UI port taken), before any
# input is read
_SPARK_START = re.compile(
    r"WARNING: Using incubator modules|Using Spark's default log4j profile|Setting default log level"
    r"|To adjust logging level|\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?:INFO|WARN) (?:NativeCodeLoader|Utils): "
)


@pytest.mark.parametrize(
    ("given", "shown", "said"),
    [
        (
            "gs://u:PWSECRET1@bucket/x.parquet",
            "gs://u:***@bucket/x.parquet",
            "org.apache.hadoop.fs.gs.GoogleHadoopFileSystem is not on Spark's classpath",
        ),
        (
            "https://acct.blob.core.windows.net/c/x.parquet?sv=1&sig=PWSECRET2",
            "https://acct.blob.core.windows.net/c/x.parquet?sv=1&sig=***",
            "Spark reads no https:// input",
        ),
    ],
)
def test_an_input_spark_has_no_file_system_for_is_one_line_without_its_password(
    tmp_path: Path, given: str, shown: str, said: str
) -> None:
    command = [
        sys.executable,
        "-m",
        "vectordb.spark.load",
        "--input",
        given,
        "--uri",
        "qdrant://127.0.0.1:1/c",
    ]
    command += ["--master", "local[1]"]  # PYTHONPATH: the conftest's, with this checkout first
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert "PWSECRET" not in output
    lines = [line for line in output.splitlines() if line.strip() and not _SPARK_START.match(line)]
    assert len(lines) == 1, output  # no trace, and Spark said nothing of the input
    assert done.returncode == 2
    assert lines[0].startswith(f"vectordb-load: ConfigError: --input {shown!r}: ")
    assert said in lines[0]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("gs://u:PWSECRET3@bucket/x.parquet", "GoogleHadoopFileSystem is not on Spark's classpath"),
        ("https://host/x.parquet?sig=PWSECRET4", "Spark reads no https:// input"),
    ],
)
def test_spark_refusing_a_file_system_while_reading_is_a_config_error(
    spark: Any, given: str, said: str
) -> None:
    """Where the file systems are not asked first (a Spark Connect session has no JVM here), Spark's own
    refusal is translated as well."""
    with pytest.raises(ConfigError) as caught:
        load_files(spark.read.format("parquet"), [given])
    message = str(caught.value)
    assert said in message and "PWSECRET" not in message
