"""The embeddings test server refuses what OpenAI refuses, and throttles as OpenAI and Azure do: a body
field OpenAI does not take (400 "Unrecognized request argument supplied: X"), ``dimensions`` for a model
without them (``text-embedding-ada-002``), an account out of quota (429 ``insufficient_quota``), and rate
limits whose wait is in ``Retry-After``, ``retry-after-ms``, OpenAI's ``x-ratelimit-reset-*`` or nowhere."""

from __future__ import annotations

import urllib.error
import urllib.request

import orjson
import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer


def post(server: EmbeddingsServer, doc: dict[str, object]) -> tuple[int, dict[str, object], dict[str, str]]:
    request = urllib.request.Request(
        server.url + "/v1/embeddings",
        data=orjson.dumps(doc),
        headers={"Authorization": f"Bearer {DEFAULT_KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as reply:
            return reply.status, orjson.loads(reply.read()), {k.lower(): v for k, v in reply.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read()), {k.lower(): v for k, v in exc.headers.items()}


def test_an_unknown_body_field_is_refused_by_name() -> None:
    with EmbeddingsServer() as server:
        status, doc, _ = post(server, {"model": "test-embed-64", "input": ["a"], "foo": 1})
        assert status == 400
        assert doc["error"]["message"] == "Unrecognized request argument supplied: foo"  # type: ignore[index]
        assert post(server, {"model": "test-embed-64", "input": ["a"], "user": "u1"})[0] == 200


def test_dimensions_are_refused_for_a_model_without_them() -> None:
    with EmbeddingsServer() as server:
        status, doc, _ = post(server, {"model": "text-embedding-ada-002", "input": ["a"], "dimensions": 256})
        assert status == 400 and "does not support specifying dimensions" in doc["error"]["message"]  # type: ignore[index]
        assert post(server, {"model": "text-embedding-ada-002", "input": ["a"]})[0] == 200


def test_an_account_out_of_quota() -> None:
    with EmbeddingsServer(out_of_quota=True) as server:
        status, doc, headers = post(server, {"model": "test-embed-64", "input": ["a"]})
    assert status == 429 and doc["error"]["code"] == "insufficient_quota"  # type: ignore[index]
    assert "retry-after" not in headers


@pytest.mark.parametrize(
    ("hint", "header", "value"),
    [
        ("retry-after", "retry-after", "60.000"),
        ("retry-after-ms", "retry-after-ms", "60000"),
        ("openai", "x-ratelimit-reset-requests", "60s"),
        ("none", None, None),
    ],
)
def test_a_rate_limit_window_says_its_wait_as_asked(hint: str, header: str | None, value: str | None) -> None:
    with EmbeddingsServer(throttle_s=60.0, throttle_hint=hint) as server:  # type: ignore[arg-type]
        status, doc, headers = post(server, {"model": "test-embed-64", "input": ["a"]})
    assert status == 429 and doc["error"]["code"] == "rate_limit_exceeded"  # type: ignore[index]
    hints = {name for name in headers if name.startswith(("retry-after", "x-ratelimit"))}
    if header is None:
        assert not hints
    else:
        assert headers[header] == value  # the whole window: its first request opened it
