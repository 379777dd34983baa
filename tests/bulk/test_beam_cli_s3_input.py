"""``vectordb-beam --input s3://…`` with the store's options (``--s3_endpoint_url``): the command lists and reads
the input before the pipeline runs, and Beam's S3 file system had no options then ("Must provide one of client
or options"), so no S3 input could be read at all. The command hands its pipeline options to Beam's file
systems first; here against the session's S3-compatible store (MinIO, or moto without it)."""

from __future__ import annotations

import importlib.util

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.fixtures import start_server
from vectordb.beam.load import main
from vectordb.connector.transports.base import forget_shared

from .conftest import S3Store

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("boto3") is None, reason="Beam's S3 file system needs boto3 (apache-beam[aws])"
)


def test_an_s3_input_is_listed_and_read_with_the_stores_options(
    s3_store: S3Store, prefix: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = pa.table(
        {"id": [f"r{i}" for i in range(20)], "values": [[float(i), 1.0, 2.0, 3.0] for i in range(20)]}
    )
    with s3_store.fs().open_output_stream(f"{s3_store.bucket}/{prefix}/part-0.parquet") as out:
        pq.write_table(rows, out)
    monkeypatch.setenv("VDB_TEST_S3_INPUT_KEY", "sk-test")
    with start_server("grpc") as server:
        try:
            argv = [
                f"--input=s3://{s3_store.bucket}/{prefix}/*.parquet",
                f"--uri={server.uri}",
                "--option=api_key_env=VDB_TEST_S3_INPUT_KEY",
                f"--s3_endpoint_url=http://{s3_store.endpoint}",
                "--s3_region_name=us-east-1",
            ]
            assert main(argv) == 0, capsys.readouterr().err[-3000:]
            assert server.arrived().ids() == {f"r{i}" for i in range(20)}
        finally:
            forget_shared()
