"""A key with surrounding whitespace (``open("key.txt").read()`` keeps the line break) is trimmed where
the options are parsed: sent as it was, every write failed with an error about a header (``Api-Key: a
line break ...``), naming neither the option nor the line break. Servers trim a header's value too, so
the trimmed key is the one they read; both forms stay blanked out of what a server echoes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.fixtures import ServerHandle, start_server
from vectordb.connector import AuthError, connect
from vectordb.connector.client import resolve_options
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.base import forget_shared

KEY = "sk-FROMFILE-0123456789abcdef"
PASTED = [KEY + "\n", KEY + "\r\n", f"  {KEY}\t", "\n" + KEY]


@pytest.fixture(params=["grpc", "rest"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    with start_server(request.param) as handle:
        handle.script(api_key=KEY, echo_key=True)
        yield handle
        forget_shared()


@pytest.mark.parametrize("pasted", PASTED)
def test_a_key_read_from_a_file_writes(server: ServerHandle, pasted: str) -> None:
    with connect(server.uri, api_key=pasted, verify=False, max_retries=0) as client:
        report = client.upsert([{"id": "a", "values": [0.1, 0.2]}])
    assert report.written == 1
    assert server.arrived().ids() == {"a"}


def test_a_key_read_from_a_variable_that_holds_a_line_break_writes(
    server: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VDB_KEY_FROM_FILE", KEY + "\n")
    with connect(server.uri, api_key_env="VDB_KEY_FROM_FILE", verify=False, max_retries=0) as client:
        assert client.upsert([{"id": "b", "values": [0.1, 0.2]}]).written == 1


def test_a_wrong_key_with_a_line_break_is_refused_by_the_server_and_blanked(server: ServerHandle) -> None:
    wrong = "sk-WRONGFROMFILE-fedcba9876543210"
    client = connect(server.uri, api_key=wrong + "\n", verify=False, max_retries=0)
    with client, pytest.raises(AuthError) as caught:
        client.upsert([{"id": "c", "values": [0.1, 0.2]}])
    assert "Api-Key" not in str(caught.value) and "metadata" not in str(caught.value)
    assert wrong not in str(caught.value)  # the server quoted it (echo_key): blanked


@pytest.mark.parametrize("pasted", PASTED)
def test_options_hold_the_trimmed_key_and_both_forms_are_blanked(pasted: str) -> None:
    options = resolve_options(
        {
            "uri": "pinecone://127.0.0.1:1",
            "api_key": pasted,
            "embed_api_key": pasted,
            "embed_url": "http://127.0.0.1:1",
            "embed_model": "m",
            "text_column": "t",
        }
    )
    assert options.api_key == KEY and options.credential() == KEY
    assert options.embed_api_key == KEY
    embed = options.embed_options()
    assert embed is not None and embed.credential() == KEY
    secrets = Secrets.of(options)
    for echoed in (KEY, pasted, repr(pasted), f"invalid key {pasted!r}: {pasted}"):
        assert KEY not in secrets.blank(echoed)
