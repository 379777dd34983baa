"""Through a proxy (``ServerPool``'s httpx path), a forked child (multiprocessing's default start on Linux)
sends on connections of its own, never on the keep-alive ones it inherited: parent and child each read
their own replies, not the other's."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.forks import answer_of, fork_child
from tests.servers.threaded_http import JsonHandler, ThreadedServer, TrackingHTTPServer
from vectordb.connector.redaction import Secrets
from vectordb.connector.transports.http import ServerPool

TRIALS = 5
CHILD_THREADS = 2
CHILD_LIMIT_S = 20.0  # a child still running then is killed, so a hang cannot outlive the test


class Teller(JsonHandler):
    """Answers a GET with the TCP connection it came on (the client's port) and who asked, after a pause:
    two processes writing on one connection would then each read the other's reply."""

    def do_GET(self) -> None:
        time.sleep(0.2)
        body = json.dumps({"conn": self.client_address[1], "asker": self.headers["x-asker"]}).encode()
        self._reply(200, body)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerPool]:
    """A pool whose requests go through a proxy (the ``Teller``, which answers them itself)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    with ThreadedServer(TrackingHTTPServer(0, Teller), "proxy") as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        made = ServerPool("http://db.example:80", 4)
        assert made.direct is None, "a proxy in the environment: requests go through httpx"
        yield made
        made.close()


def ask(pool: ServerPool, who: str) -> dict[str, Any]:
    """The proxy's answer to ``who``'s request, or the error instead (a crossed reply may not parse)."""
    try:
        _, body, _ = pool.send(
            "GET",
            "http://db.example/x",
            b"",
            {"x-asker": who},
            b"",
            where="db",
            timeout_s=3.0,
            secrets=Secrets(),
        )
        return dict(json.loads(body))
    except Exception as exc:
        return {"error": repr(exc)}


def child_asks(pool: ServerPool, trial: int) -> str:
    """In the forked child: requests from several threads at once, their answers as JSON."""
    with ThreadPoolExecutor(CHILD_THREADS) as threads:
        return json.dumps(list(threads.map(lambda n: ask(pool, f"child{trial}-{n}"), range(CHILD_THREADS))))


@pytest.mark.filterwarnings("ignore:This process:DeprecationWarning")  # 3.12+: fork() with threads
def test_a_forked_child_opens_its_own_connection_and_gets_its_own_replies(pool: ServerPool) -> None:
    first = ask(pool, "parent")
    assert first.get("asker") == "parent", first  # the parent now has a keep-alive connection
    parents: list[dict[str, Any]] = []
    children: list[list[dict[str, Any]]] = []
    for trial in range(TRIALS):
        forked = fork_child(functools.partial(child_asks, pool, trial))
        try:
            time.sleep(0.05)  # the child's requests are on their way: the parent's overlaps them
            parents.append(ask(pool, f"parent{trial}"))
        finally:
            children.append(json.loads(answer_of(forked, CHILD_LIMIT_S)))
    parent_conns = {reply["conn"] for reply in [first, *parents] if "conn" in reply}
    child_conns = {reply["conn"] for replies in children for reply in replies if "conn" in reply}
    assert not parent_conns & child_conns, f"a child sent on the parent's connection: {parents} {children}"
    assert [reply.get("asker") for reply in parents] == [f"parent{t}" for t in range(TRIALS)], parents
    assert [[reply.get("asker") for reply in replies] for replies in children] == [
        [f"child{t}-{n}" for n in range(CHILD_THREADS)] for t in range(TRIALS)
    ], children
