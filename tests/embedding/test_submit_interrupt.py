"""The pool's ``submit`` raising on the embedding stream's feeder: the request is finished (``_done``)
exactly once, by the sender or by the feeder, never by both, and nothing is left held.

``ThreadPoolExecutor.submit`` queues the work item and then starts a worker thread, which can raise
(``RuntimeError: can't start new thread``) with the item queued and taken by a worker already running.
Before, the feeder then finished the request a second time after its sender had: its results merged twice,
the second time into nothing. The raise is placed with a patched ``submit`` (the real one, then the
error), since no real failure can be made to happen at that instant."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.embedding.fixtures import expected_vectors, words
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.embedding import client as client_module


@pytest.fixture
def finished(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[int]]:
    """How many times each request was finished, by ``id`` (requests kept alive, so ids stay theirs)."""
    counts: Counter[int] = Counter()
    kept: list[Any] = []
    original = client_module._Request.finish

    def counted(self: Any, dim: int | None) -> None:
        counts[id(self)] += 1
        kept.append(self)
        original(self, dim)

    monkeypatch.setattr(client_module._Request, "finish", counted)
    yield counts


def queued_then_raises(pool: Any) -> Callable[..., Any]:
    """``pool.submit`` that queues the work, waits for a worker to run it, then raises."""
    real = pool.submit

    def submit(fn: Callable[..., Any], *args: Any) -> Any:
        real(fn, *args).result()
        raise RuntimeError("can't start new thread")

    return submit


def raises_before_queueing(pool: Any) -> Callable[..., Any]:
    def submit(fn: Callable[..., Any], *args: Any) -> Any:
        raise RuntimeError("cannot schedule new futures after shutdown")

    return submit


@pytest.mark.parametrize("patched", [queued_then_raises, raises_before_queueing])
def test_submit_raising_finishes_the_request_once_and_leaves_nothing_held(
    embeddings_server: EmbeddingsServer,
    finished: Counter[int],
    monkeypatch: pytest.MonkeyPatch,
    patched: Callable[[Any], Callable[..., Any]],
) -> None:
    options = {"url": embeddings_server.url, "model": DEFAULT_MODEL, "api_key": DEFAULT_KEY}
    with EmbeddingClient(parse_embed_options({**options, "max_concurrency": 1, "batch_size": 1})) as client:
        dispatch = client.dispatch
        with monkeypatch.context() as patch:
            patch.setattr(dispatch.pool, "submit", patched(dispatch.pool))
            with pytest.raises(RuntimeError):
                list(client.stream([[words(0)]]))
        assert list(finished.values()) == [1]
        assert [dispatch.in_flight, dispatch._unanswered] == [0, 0]
        (again,) = client.stream([[words(9)]])  # the client still embeds
        assert (again.vectors == expected_vectors([words(9)])).all()
