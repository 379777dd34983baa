"""Beam's side of a server that echoes keys: the key reaches no dead letter of the failed output and no
pipeline error (tests/e2e/test_secrets.py checks the connector itself, transport by transport)."""

from __future__ import annotations

import logging
import traceback
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

from . import data

KEY = "sk-BEAMECHO-8c2f4a6e1d"


def written(uri: str, **options: Any) -> tuple[beam.Pipeline, Any]:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    records = pipeline | beam.Create([0]) | beam.FlatMap(data.records)
    return pipeline, records | WriteToVectorDB(uri, api_key=KEY, **options)


def blanked_letters(letters: list[dict[str, Any]]) -> None:
    """The failed output: the two refused rows, each with the server's reason, its echo of the key blanked."""
    assert sorted(letter["id"] for letter in letters) == ["s0-5", "s0-7"]
    for letter in letters:
        assert KEY not in repr(letter) and KEY[3:15] not in repr(letter)
        assert "API key: ***" in letter["error"]


def pipeline_error(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + str(exc) + repr(exc)


def test_a_key_the_server_echoes_reaches_no_dead_letter_or_pipeline_error(
    grpc_server: ServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    grpc_server.script(api_key=KEY, echo_key=True, reject_ids=frozenset({"s0-5", "s0-7"}))
    pipeline, result = written(grpc_server.uri, on_error="report")
    assert_that(result.failed, blanked_letters)
    pipeline.run().wait_until_finish()
    texts = []
    pipeline, _ = written(grpc_server.uri)  # on_error="fail": the pipeline fails with the reasons
    with pytest.raises(Exception, match="2 of 1000 rows failed") as refused:
        pipeline.run().wait_until_finish()
    texts.append(pipeline_error(refused.value))
    grpc_server.script(api_key="the-right-key", echo_key=True)  # a wrong key fails whatever on_error says
    pipeline, _ = written(grpc_server.uri, on_error="report")
    with pytest.raises(Exception, match="UNAUTHENTICATED") as unauthenticated:
        pipeline.run().wait_until_finish()
    texts.append(pipeline_error(unauthenticated.value))
    echoed = {r.outcome for r in grpc_server.arrived().requests if KEY in r.message}
    assert echoed == {"rejected"}  # the server quoted the key to the upserts (and to the key check)
    texts += [record.getMessage() for record in caplog.records]
    assert not any(KEY in text or KEY[3:15] in text for text in texts)
    assert all("API key: ***" in text for text in texts[:2])
