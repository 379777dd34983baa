"""Both commands' ``--help`` examples read from a store: ``vectordb-load``'s ``--input s3://bucket/…``, which
open-source Spark refuses (no file system for ``s3://``; the README says ``s3a://`` with hadoop-aws), and
``vectordb-beam``'s ``gs://`` input, which needs ``apache-beam[gcp]`` (no extra of ours brings it). The
examples now use ``s3a://`` and say what each store needs."""

from __future__ import annotations

import pytest


def help_of(main_module: str, capsys: pytest.CaptureFixture[str]) -> str:
    module = pytest.importorskip(main_module)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    return out[out.index("examples:") :]


def test_vectordb_load_reads_s3_as_s3a_with_hadoop_aws(capsys: pytest.CaptureFixture[str]) -> None:
    examples = help_of("vectordb.spark.load", capsys)
    assert "--input s3a://bucket/embeddings/" in examples and "s3://" not in examples
    assert "s3a://: hadoop-aws's jar on Spark's classpath" in examples


def test_vectordb_beam_says_what_its_gs_example_needs(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("apache_beam")
    examples = help_of("vectordb.beam.load", capsys)
    assert "--input 'gs://bucket/embeddings/*.parquet'" in examples
    assert "gs://: pip install 'apache-beam[gcp]'" in examples
