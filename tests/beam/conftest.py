"""Fixtures for the Beam sink tests: Pinecone-protocol servers, and helpers to run pipelines and read metrics."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult

from tests.servers.fixtures import ServerHandle, start_server, start_server_process
from vectordb.connector.transports.base import forget_shared

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def grpc_server() -> Iterator[ServerHandle]:
    """A Pinecone gRPC server in this process (the DirectRunner's in-memory workers are threads here)."""
    with start_server("grpc") as handle:
        try:
            yield handle
        finally:
            forget_shared()  # the connector's channel to it, before the server stops


@pytest.fixture
def rest_server() -> Iterator[ServerHandle]:
    with start_server("rest") as handle:
        try:
            yield handle
        finally:
            forget_shared()


@pytest.fixture(scope="module")
def server_process() -> Iterator[ServerHandle]:
    """A Pinecone gRPC server in its own process, for runners whose workers are other processes."""
    with start_server_process("grpc") as handle:
        try:
            yield handle
        finally:
            forget_shared()


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes inherit the environment: let them import ``tests.beam.data`` like this process."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


FAILED: list[dict[str, Any]] = []  # the dead letters of run_sink's pipelines; the caller clears it


def _collect_failed(letter: dict[str, Any]) -> None:
    FAILED.append(letter)  # a module function: pickled by reference, so the in-process runner fills FAILED


def run_sink(uri: str, elements: list[Any], **options: Any) -> PipelineResult:
    """``elements``, in order, through ``WriteToVectorDB(uri, on_error="report", **options)`` on the
    in-memory runner; its dead letters are appended to ``FAILED``."""
    import apache_beam as beam
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from vectordb.beam import WriteToVectorDB

    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = (
        pipeline | beam.Create(elements, reshuffle=False) | WriteToVectorDB(uri, on_error="report", **options)
    )
    _ = result.failed | beam.Map(_collect_failed)
    outcome = pipeline.run()
    outcome.wait_until_finish()
    return outcome


def counters(result: PipelineResult) -> dict[str, int]:
    """The sink's committed counters (namespace ``vectordb``) by name; a counter never updated is absent."""
    found = result.metrics().query(MetricsFilter().with_namespace("vectordb"))["counters"]
    out: dict[str, int] = {}
    for counter in found:
        out[counter.key.metric.name] = out.get(counter.key.metric.name, 0) + counter.committed
    return out


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "flink: runs on the Flink portable runner (skipped with the reason without Java, the job server "
        "or a private network namespace)",
    )
