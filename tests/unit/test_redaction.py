"""``redaction.Secrets``: which credentials are in use, and every form of them a server may quote."""

from __future__ import annotations

import base64
import logging
from urllib.parse import quote

import orjson
import pytest

from vectordb.connector.client import resolve_options
from vectordb.connector.embedding.options import parse_embed_options
from vectordb.connector.redaction import Secrets, blank_logs, uri_passwords

KEY = 'sk-proj/a+b=c&d\\e"f-0123456789'  # characters that URL-encoding and JSON escape


@pytest.mark.parametrize(
    "quoted",
    [
        KEY,
        quote(KEY, safe=""),
        quote(KEY, safe="").replace("%20", "+"),
        orjson.dumps(KEY).decode()[1:-1],  # as it sits inside a JSON string
        orjson.dumps(KEY).decode()[1:-1].replace("/", "\\/"),
        base64.b64encode(KEY.encode()).decode(),
        base64.b64encode(KEY.encode()).decode().rstrip("="),
        f"Bearer {KEY}",
    ],
)
def test_every_form_of_a_key_a_server_may_quote_is_blanked(quoted: str) -> None:
    text = f"Invalid API key {quoted}. Check it."
    assert (
        Secrets(KEY).blank(text)
        == f"Invalid API key {'Bearer ' if quoted.startswith('Bearer') else ''}***. Check it."
    )


def test_every_occurrence_goes_and_the_rest_of_the_text_stays() -> None:
    secrets = Secrets("k3y-k3y-k3y", None, "", "pw-42")
    assert secrets.blank("a k3y-k3y-k3y b pw-42 c k3y-k3y-k3y") == "a *** b *** c ***"
    assert secrets.blank("nothing secret") == "nothing secret"
    assert Secrets().blank("k3y-k3y-k3y") == "k3y-k3y-k3y" and not Secrets() and secrets
    assert "k3y" not in repr(secrets) and "pw-42" not in repr(secrets)


def test_a_longer_secret_holding_a_shorter_one_goes_whole() -> None:
    assert Secrets("abc", "abcdef-123").blank("x abcdef-123 y abc") == "x *** y ***"


def test_the_credentials_in_use_are_the_keys_the_passwords_and_their_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_VDB_KEY", "env-key-0001")
    options = resolve_options(
        {
            "uri": "milvus://127.0.0.1:19530/docs",
            "api_key_env": "TEST_VDB_KEY",
            "embed_url": "http://user:url-pw-0002@127.0.0.1:1/v1",
            "embed_model": "m",
            "embed_api_key": "embed-key-0003",
            "text_column": "text",
        }
    )
    shown = Secrets.of(options).blank("env-key-0001 url-pw-0002 embed-key-0003 http://127.0.0.1")
    assert shown == "*** *** *** http://127.0.0.1"
    milvus = Secrets.of(resolve_options({"uri": "milvus://127.0.0.1/docs", "api_key": "root:pw-0004"}))
    assert milvus.blank("user root:pw-0004, password pw-0004") == "user ***, password ***"
    pg = resolve_options({"uri": "postgresql://u:p%40ss-0005@db/app?table=t", "api_key": "pw-0006"})
    assert Secrets.of(pg).blank("p%40ss-0005 p@ss-0005 pw-0006") == "*** *** ***"
    embedding = parse_embed_options({"url": "https://h/v1", "model": "m", "api_key": "embed-key-0007"})
    assert Secrets.of(embedding).blank("key embed-key-0007") == "key ***"


def test_a_key_variable_this_process_lacks_is_no_error_and_blanks_nothing() -> None:
    options = resolve_options(
        {"uri": "qdrant://127.0.0.1/docs", "api_key": "k-0008", "embed_url": "http://h", "embed_model": "m",
         "embed_api_key_env": "NOT_SET_ANYWHERE_0009", "text_column": "text"}
    )  # fmt: skip
    assert Secrets.of(options).blank("k-0008") == "***"


def test_uri_passwords_as_written_decoded_and_as_a_parameter() -> None:
    assert uri_passwords("postgresql://u:p%2Fw@h/db") == ["p%2Fw", "p/w"]
    assert uri_passwords("postgresql://u@h/db?password=q-1&sslmode=disable") == ["q-1"]
    assert uri_passwords("postgresql://u:pw-2@h:notaport/db") == ["pw-2"]
    assert uri_passwords("qdrant://h/c") == [] and uri_passwords("") == []


def test_library_log_records_are_blanked_while_the_secrets_are_in_use(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secrets = Secrets("log-key-0010")
    blank_logs(secrets, "tests.redaction.library")
    with caplog.at_level(logging.DEBUG, logger="tests.redaction.library"):
        logging.getLogger("tests.redaction.library").debug("headers %r", [(b"x-echo", b"log-key-0010")])
    assert caplog.records[-1].getMessage() == "headers [(b'x-echo', b'***')]"
    del secrets  # gone with its transport: no longer blanked
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="tests.redaction.library"):
        logging.getLogger("tests.redaction.library").debug("log-key-0010")
    assert caplog.records[-1].getMessage() == "log-key-0010"


def test_a_short_key_alive_beside_a_longer_one_cannot_cut_the_longer_one_out_of_a_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a transport with the key "k" alive (another client of the same process) beside one with "sk-…":
    # blanking one set after the other turned "sk-SECRET" into "s***-SECRET", which then showed
    alive = [Secrets("k"), Secrets("sk-SECRETKEY-0020"), Secrets("SECRET")]
    for secrets in alive:
        blank_logs(secrets, "tests.redaction.several")
    for _ in range(20):  # whatever order the live set yields them in
        with caplog.at_level(logging.DEBUG, logger="tests.redaction.several"):
            logging.getLogger("tests.redaction.several").debug("x-echo-api-key: sk-SECRETKEY-0020")
        assert "SECRET" not in caplog.records[-1].getMessage()
        assert caplog.records[-1].getMessage() == "x-echo-api-***ey: ***"
        alive.reverse()
    del alive
