"""The systemic watch's control request is sent as any request is, and never after a stop.

Every text is refused, alone too, in one constant message (as over a model's context). The 32nd refusal
of a single text (the one that makes the watch suspect the stream) is answered late, and a request that
arrives meanwhile is answered 401: the stream stops. When the late refusal then came back, the dispatcher
sent its control request (the probe text alone) to a server whose key had just been refused, after the
stop. The control request also had a send loop of its own, which did not count it on the wire nor its
timeouts toward a server that stopped answering.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer, Fault, _error, _Reply
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.embedding.client import PROBE_TEXT
from vectordb.connector.errors import AuthError, StoppedAnswering

pytestmark = pytest.mark.timeout(120)

LONGS = [f"long text {i}" for i in range(400)]  # each refused, in one constant message
LATE_S = 1.0


class RevokedWhileSuspected(EmbeddingsServer):
    """Answers the 32nd single-text request ``LATE_S`` late; the requests that arrive meanwhile get 401.
    Records when each request carrying the probe text arrived, and when the first 401 was answered."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.singles = 0
        self.revoked = False
        self.late: bytes | None = None
        self.first_401: float | None = None
        self.probes_at: list[float] = []

    async def _embeddings(
        self, headers: dict[bytes, bytes], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        texts = orjson.loads(body).get("input")
        if texts == [PROBE_TEXT] or texts == PROBE_TEXT:
            self.probes_at.append(time.monotonic())
        elif isinstance(texts, list) and len(texts) == 1 and not self.revoked:
            self.singles += 1
            if self.singles == 32:
                self.revoked, self.late = True, body
                await asyncio.sleep(LATE_S)
        return await super()._embeddings(headers, body, writer)

    def _answer(
        self, headers: dict[bytes, bytes], body: bytes, fault: Fault | None, over_quota: bool
    ) -> tuple[int, _Reply]:
        if self.revoked and body is not self.late:
            if self.first_401 is None:
                self.first_401 = time.monotonic()
            return 0, _error(401, "Incorrect API key provided", "invalid_request_error")
        if PROBE_TEXT.encode() in body:
            return super()._answer(headers, body, fault, over_quota)
        return 0, _error(400, "This model's maximum context length is 512 tokens", "invalid_request_error")


def test_no_control_request_is_sent_after_the_stream_stopped() -> None:
    options = {"model": "test-embed-64", "api_key": DEFAULT_KEY, "batch_size": 8, "max_concurrency": 4}
    options["encoding_format"] = "float"  # a refused base64 request is sent again as floats
    with RevokedWhileSuspected() as server:
        client = EmbeddingClient(parse_embed_options(options | {"url": server.url}))
        with client, pytest.raises(AuthError):
            client.embed(LONGS)
        time.sleep(0.3)
        assert server.singles == 32 and server.first_401 is not None
        after = [t for t in server.probes_at if t >= server.first_401]
    assert after == [], "the control request was sent after the 401 stopped the stream"


class SilentFromTheControl(EmbeddingsServer):
    """Refuses every text in one constant message until the control request (the probe text) arrives;
    from then on answers nothing at all (a frozen server). Records what each unanswered request carried."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.frozen = False
        self.unanswered: list[str] = []  # "control" or "texts", in arrival order

    async def _embeddings(
        self, headers: dict[bytes, bytes], body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        control = PROBE_TEXT.encode() in body
        self.frozen = self.frozen or control
        if self.frozen:
            self.unanswered.append("control" if control else "texts")
            await asyncio.sleep(60)
        return await super()._embeddings(headers, body, writer)

    def _answer(
        self, headers: dict[bytes, bytes], body: bytes, fault: Fault | None, over_quota: bool
    ) -> tuple[int, _Reply]:
        return 0, _error(400, "This model's maximum context length is 512 tokens", "invalid_request_error")


def test_the_control_requests_timeouts_count_toward_a_server_that_stopped_answering() -> None:
    """The control request was sent by a loop of its own that did not count its timeouts: a server that
    froze as it came got its ``max_retries + 1`` attempts, and then as many more lone requests before the
    stream stopped. Sent as any request is, its timeouts count (the last four of them sent alone, the limit
    at 1 from its second), and the stream stops after two more sent alone."""
    options = {"model": "test-embed-64", "api_key": DEFAULT_KEY, "batch_size": 8, "max_concurrency": 4}
    options |= {"encoding_format": "float", "timeout_s": 0.3, "max_retries": 5}
    with SilentFromTheControl() as server:
        client = EmbeddingClient(parse_embed_options(options | {"url": server.url}))
        with client, pytest.raises(StoppedAnswering):
            client.embed(LONGS)
        unanswered = server.unanswered
    assert unanswered[0] == "control" and unanswered.count("control") <= 6, unanswered
    # after the control's last attempt: the isolation requests that waited for its verdict (sent together,
    # up to 3) and two sent alone, as the control's lone timeouts count (old code: they did not, and 6
    # requests had to be sent alone after them). Under load some of those requests go out between the
    # control's attempts instead, so the bound is on what follows its last one.
    after_control = unanswered[len(unanswered) - unanswered[::-1].index("control") :]
    assert len(after_control) <= 5, unanswered
