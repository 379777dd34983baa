"""A database key HTTP or gRPC cannot carry (a line break, NUL, a character beyond what headers hold) is a
``ConfigError`` naming option ``api_key``, never quoting the key: it named the header alone (``Api-Key: a
line break ...``, ``gRPC metadata api-key: ...``), which a user never wrote."""

from __future__ import annotations

import traceback
from collections.abc import Iterator

import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError

KEYS = ["pk-bad\nkey-0123456789abcdef", "pk-bad\x00key-0123456789abcdef", "pk-€uro-0123456789abcdef"]


@pytest.fixture(scope="module", params=["rest", "grpc"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        yield handle


@pytest.mark.parametrize("key", KEYS, ids=["line-break", "nul", "beyond-latin-1"])
def test_a_key_no_request_can_carry_names_option_api_key(server: ServerHandle, key: str) -> None:
    with (
        pytest.raises(ConfigError) as caught,
        connect(server.uri, api_key=key, verify=False) as client,
    ):
        client.upsert([{"id": "a", "values": [0.5] * 8}])
    text = str(caught.value)
    assert text.startswith("option api_key (or api_key_env): "), text
    error = caught.value  # the connector's frames (this test's, which holds the key, left out)
    frames = traceback.TracebackException(type(error), error, caught.tb.tb_next, capture_locals=True)
    shown = "".join(frames.format())
    assert "0123456789" not in shown, shown
    assert server.arrived().requests == []
