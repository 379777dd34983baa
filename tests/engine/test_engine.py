"""The engine against scripted transports: what it sends, how often, and what it reports."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pinecone_upsert_pb2 as pb
import pytest

from tests.forks import in_forked_child
from vectordb.connector import (
    AuthError,
    Client,
    ConnectError,
    Rejected,
    Throttled,
    Unavailable,
    WriteFailed,
    connect,
)
from vectordb.connector.engine import Engine
from vectordb.connector.errors import SystemicRejection
from vectordb.connector.rows.chunks import DICT_CHUNK_ROWS
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

# an UpsertResponse counting more rows than any batch holds: every row upserted (proto3 leaves a count of 0
# off the wire, so an empty reply is "none upserted")
OK = WireReply(pb.UpsertResponse(upserted_count=10_000).SerializeToString())


def rows(n: int, dim: int = 4, prefix: str = "r") -> list[dict]:
    return [{"id": f"{prefix}{i}", "values": [float(i) + 0.5] * dim} for i in range(n)]  # none all zeros


def ids_in(request: WireRequest) -> list[str]:
    return [v.id for v in pb.UpsertRequest.FromString(request.body).vectors]


def client_with(
    handler: Callable[[WireRequest], WireReply], sleeps: list[float] | None = None, **options
) -> tuple[Client, MockTransport]:
    client = connect("pinecone+grpc://127.0.0.1:1", **{"batch_size": 10, "verify": False, **options})
    transport = MockTransport(handler)
    record = sleeps.append if sleeps is not None else (lambda s: None)
    client._engine = Engine(client.backend, transport, client.options, sleep=record, rand=lambda: 0.5)
    return client, transport


def test_every_row_is_sent_once_in_batches() -> None:
    client, transport = client_with(lambda r: OK)
    report = client.upsert(rows(95))
    assert report.ok and report.written == 95 and report.requests == 10
    sent = [i for r in transport.requests for i in ids_in(r)]
    assert sorted(sent) == sorted(f"r{i}" for i in range(95))
    assert report.bytes_sent == sum(len(r.body) for r in transport.requests)


def test_in_flight_reaches_but_never_exceeds_max_concurrency() -> None:
    def slow(request: WireRequest) -> WireReply:
        time.sleep(0.02)
        return OK

    client, transport = client_with(slow, max_concurrency=4)
    client.upsert(rows(200))
    assert transport.peak_in_flight == 4


def test_input_is_pulled_only_when_a_slot_is_free() -> None:
    release = threading.Event()
    pulled = 0

    def blocked(request: WireRequest) -> WireReply:
        release.wait(5)
        return OK

    def source() -> Iterator[dict]:
        nonlocal pulled
        for row in rows(10_000):
            pulled += 1
            yield row

    client, _ = client_with(blocked, max_concurrency=2, batch_size=10)
    worker = threading.Thread(target=client.upsert, args=(source(),))
    worker.start()
    time.sleep(0.3)
    pulled_while_blocked = pulled
    release.set()
    worker.join(10)
    # two requests in flight, the next chunk of dict rows being prepared: far from all 10,000
    assert pulled_while_blocked <= 4096 * 2
    assert pulled == 10_000


def test_throttling_is_retried_with_the_servers_hint_and_halves_the_limit() -> None:
    calls = {"n": 0}
    lock = threading.Lock()

    def throttle_first_three(request: WireRequest) -> WireReply:
        with lock:
            calls["n"] += 1
            if calls["n"] <= 3:
                raise Throttled("slow down", status=429, retry_after_s=0.2)
        return OK

    sleeps: list[float] = []
    client, _ = client_with(throttle_first_three, sleeps, max_concurrency=8)
    report = client.upsert(rows(100))
    assert report.ok and report.written == 100
    assert (report.throttled, report.retries, report.requests) == (3, 3, 13)
    # none accepted yet: the throttle backoff at rand 0.5 (0.75, 1.5, 3 s for retries 1-3), longer than the
    # hint; the hint itself once some are (tests/engine/test_throttle_window.py)
    assert len(sleeps) == 3 and set(sleeps) <= {0.2, 0.75, 1.5, 3.0}, sleeps
    assert client.engine.limit.limit < 8


def test_retryable_failures_end_as_failed_rows_after_max_retries() -> None:
    def down(request: WireRequest) -> WireReply:
        if "r0" in ids_in(request):
            raise Unavailable("503 service unavailable", status=503)
        return OK

    client, _ = client_with(down, max_retries=2, on_error="report")
    report = client.upsert(rows(30))
    assert report.written == 20 and report.failed == 10
    (failure,) = report.failures
    assert failure.retryable and failure.attempts == 3 and failure.error_type == "Unavailable"
    assert set(failure.ids) == {f"r{i}" for i in range(10)}


def test_retry_budget_stops_a_retry_storm() -> None:
    state = {"ok_once": False}

    def mostly_down(request: WireRequest) -> WireReply:
        if not state["ok_once"]:
            state["ok_once"] = True
            return OK
        raise Unavailable("down", status=503)

    client, transport = client_with(mostly_down, max_retries=5, on_error="report")
    report = client.upsert(rows(500))
    assert report.written == 10 and report.failed == 490
    # without the budget: 49 × 6 = 294 attempts; with it: 49 first attempts + about 21 retries
    assert report.retries <= 22
    assert len(transport.requests) == report.requests <= 50 + 22


def test_a_write_after_a_retry_storm_has_its_retries_again() -> None:
    """The budget a storm spent is the storm's write's: the next write on the client, the outage over,
    retries its first transient error instead of failing the rows unretried."""
    state = {"down": True, "flaky": 0}

    def handler(request: WireRequest) -> WireReply:
        if state["down"]:
            raise Unavailable("down", status=503)
        state["flaky"] += 1
        if state["flaky"] <= 2:  # the outage's last two errors, at the next write's start
            raise Unavailable("still waking up", status=503)
        return OK

    client, _ = client_with(handler, max_retries=5, on_error="report")
    assert client.upsert(rows(500)).failed == 500  # the storm: the budget spent
    state["down"] = False
    report = client.upsert(rows(10))
    assert (report.written, report.failed, report.retries) == (10, 0, 2), report


def test_the_first_burst_of_throttles_at_high_concurrency_loses_no_row() -> None:
    # until AIMD finds a quota, up to about 2 x max_concurrency requests are throttled; with 16 in
    # flight that is more than a fixed 20-token budget holds, before any success refills it
    throttles = {"left": 32}
    lock = threading.Lock()

    def throttled_at_first(request: WireRequest) -> WireReply:
        with lock:
            throttles["left"] -= 1
            if throttles["left"] >= 0:
                raise Throttled("RESOURCE_EXHAUSTED: slow down", status="RESOURCE_EXHAUSTED")
        return OK

    client, _ = client_with(throttled_at_first, max_retries=40, max_concurrency=16)
    report = client.upsert(rows(100))
    assert report.ok and report.written == 100
    assert report.throttled == 32 and report.retries == 32


def test_a_quota_spent_for_good_fails_rows_fast_instead_of_retrying_each() -> None:
    def quota_spent(request: WireRequest) -> WireReply:
        raise Throttled("RESOURCE_EXHAUSTED: monthly write limit reached", status="RESOURCE_EXHAUSTED")

    client, transport = client_with(quota_spent, max_retries=5, on_error="report")
    report = client.upsert(rows(500))
    assert report.written == 0 and report.failed == 500
    # every request throttled and none accepted: the throttles spend the retry budget as errors do.
    # Without it: 50 batches x 6 attempts = 300, each batch waiting out 15-31 s of throttle backoff
    assert report.retries == 20
    assert len(transport.requests) == report.requests == 70


def test_a_rate_limit_that_accepts_some_requests_fails_no_row_however_many_throttles() -> None:
    # two requests in three throttled: 100 throttles for 50 batches, far more than the budget's 20
    # tokens, but the server accepts requests between them, so the throttles spend none
    sent = {"n": 0}
    lock = threading.Lock()

    def rate_limited(request: WireRequest) -> WireReply:
        with lock:
            sent["n"] += 1
            if sent["n"] % 3:
                raise Throttled("RESOURCE_EXHAUSTED: slow down", status="RESOURCE_EXHAUSTED")
        return OK

    client, _ = client_with(rate_limited, max_retries=10, on_error="report")
    report = client.upsert(rows(500))
    assert report.ok and report.written == 500, report.summary()
    assert report.throttled >= 90


def test_whole_batch_rejection_is_bisected_to_the_bad_rows() -> None:
    bad = {"r3", "r17", "r18"}

    def reject_bad(request: WireRequest) -> WireReply:
        found = bad & set(ids_in(request))
        if found:
            raise Rejected(f"INVALID_ARGUMENT: bad vector {sorted(found)[0]}", status="INVALID_ARGUMENT")
        return OK

    client, transport = client_with(reject_bad, batch_size=20, on_error="report")
    report = client.upsert(rows(40))
    assert report.written == 37
    assert sorted(report.failed_ids) == sorted(bad)
    by_id = {f.ids[0]: f for f in report.failures}
    assert "bad vector r3" in by_id["r3"].error and not by_id["r3"].retryable
    arrived = {i for r in transport.requests if not (bad & set(ids_in(r))) for i in ids_in(r)}
    assert arrived == {f"r{i}" for i in range(40)} - bad


def test_auth_error_stops_at_once_without_retries() -> None:
    def unauthorized(request: WireRequest) -> WireReply:
        raise AuthError("UNAUTHENTICATED: bad api key", status=401)

    client, transport = client_with(unauthorized, max_concurrency=1)
    with pytest.raises(AuthError, match="bad api key"):
        client.upsert(rows(1000))
    assert len(transport.requests) == 1


def test_unreachable_host_is_fatal_after_retries() -> None:
    def refused(request: WireRequest) -> WireReply:
        raise ConnectError("127.0.0.1:1: cannot connect: connection refused")

    sleeps: list[float] = []
    client, transport = client_with(refused, sleeps, max_concurrency=1, max_retries=3)
    with pytest.raises(ConnectError, match="cannot connect"):
        client.upsert(rows(1000))
    assert len(transport.requests) == 4 and len(sleeps) == 3


def test_connect_errors_after_success_are_failed_rows_not_fatal() -> None:
    state = {"n": 0}

    def dies(request: WireRequest) -> WireReply:
        state["n"] += 1
        if state["n"] > 1:
            raise ConnectError("cannot connect: connection refused")
        return OK

    client, _ = client_with(dies, max_concurrency=1, max_retries=1, on_error="report")
    report = client.upsert(rows(30))
    assert report.written == 10 and report.failed == 20
    assert all(f.retryable and f.error_type == "ConnectError" for f in report.failures)


def test_row_larger_than_a_request_fails_alone() -> None:
    client, _ = client_with(lambda r: OK, max_batch_bytes=2048, on_error="report")
    data = [*rows(5), {"id": "huge", "values": [1.0] * 4, "metadata": {"text": "x" * 4000}}]
    report = client.upsert(data)
    assert report.written == 5 and report.failed_ids == ["huge"]
    assert "a request takes at most 2048 (option max_batch_bytes)" in report.failures[0].error


def test_on_error_fail_raises_with_the_report() -> None:
    client, _ = client_with(lambda r: OK)
    with pytest.raises(WriteFailed) as info:
        client.upsert([*rows(3), {"id": "bad", "values": [1.0]}])
    assert info.value.report.written == 3 and info.value.report.failed_ids == ["bad"]
    assert "vector has 1 dimensions" in str(info.value)


def test_a_bug_in_a_sender_is_raised_not_swallowed() -> None:
    def broken(request: WireRequest) -> WireReply:
        raise RuntimeError("boom")

    client, _ = client_with(broken)
    with pytest.raises(RuntimeError, match="boom"):
        client.upsert(rows(5))


def test_rate_budget_paces_the_write() -> None:
    sleeps: list[float] = []
    client, _ = client_with(lambda r: OK, sleeps, max_rows_per_second=50, max_concurrency=1)
    client.upsert(rows(100))
    assert sum(sleeps) >= 1.8  # 100 rows at 50/s after a 5-row burst: about two seconds of waiting


def test_arrow_input_reaches_the_wire_as_the_same_float32_bytes() -> None:
    import pyarrow as pa

    matrix = np.random.default_rng(3).standard_normal((25, 16)).astype(np.float32)
    table = pa.table({"id": [f"a{i}" for i in range(25)], "values": list(matrix)})
    client, transport = client_with(lambda r: OK)
    assert client.upsert(table).written == 25
    got = {
        v.id: np.asarray(v.values, np.float32)
        for r in transport.requests
        for v in pb.UpsertRequest.FromString(r.body).vectors
    }
    for i in range(25):
        assert got[f"a{i}"].tobytes() == matrix[i].tobytes()


def test_a_rejection_of_every_row_stops_the_write_after_a_bounded_number_of_requests() -> None:
    def wrong_dimension(request: WireRequest) -> WireReply:
        raise Rejected("INVALID_ARGUMENT: Vector dimension 4 does not match the dimension of the index 8")

    client, transport = client_with(wrong_dimension, batch_size=64, on_error="report", max_concurrency=1)
    with pytest.raises(SystemicRejection, match="refused each of the first 32 rows") as info:
        client.upsert(rows(10_000))
    assert "Vector dimension 4 does not match" in str(info.value)
    # one batch of 64 split depth first: 32 single rows refused, plus the halves above them
    assert len(transport.requests) < 80


def test_a_failed_write_gives_back_its_slots_so_the_next_write_runs() -> None:
    calls = {"n": 0}

    def unauthorized_once(request: WireRequest) -> WireReply:
        calls["n"] += 1
        if calls["n"] == 1:
            raise AuthError("UNAUTHENTICATED: key not yet active", status=401)
        return OK

    client, _ = client_with(unauthorized_once, max_concurrency=1)
    with pytest.raises(AuthError):
        client.upsert(rows(30))
    with pytest.raises(Exception, match="no column"):
        client.upsert(iter([pa_batch_without_values()]))
    report = client.upsert(rows(30))  # would block forever if either failure had kept its slot
    assert report.ok and report.written == 30


def pa_batch_without_values():
    import pyarrow as pa

    return pa.record_batch({"id": ["a"], "vec": [[1.0]]})


def test_writes_from_several_threads_on_one_client_each_get_their_own_exact_report() -> None:
    """The engine keeps one write's account at a time: two threads sharing a client must not count
    each other's rows (their reports and dead letters would name rows of the other write)."""

    def refuse_bad(request: WireRequest) -> WireReply:
        time.sleep(0.002)
        if any(i.endswith("-bad") for i in ids_in(request)):
            raise Rejected("invalid vector", status=400)
        return OK

    client, transport = client_with(refuse_bad, max_concurrency=4, on_error="report")
    sizes = {"a": 300, "b": 500, "c": 700}
    reports: dict[str, object] = {}

    def write(prefix: str) -> None:
        data = rows(sizes[prefix], prefix=prefix)
        data[7]["id"] = f"{prefix}-bad"
        reports[prefix] = client.write(data)

    threads = [threading.Thread(target=write, args=(p,)) for p in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for prefix, size in sizes.items():
        report = reports[prefix]
        assert (report.written, report.failed) == (size - 1, 1), prefix
        assert [f.ids for f in report.failures] == [(f"{prefix}-bad",)], prefix
    sent = {i for r in transport.requests for i in ids_in(r)}
    assert len(sent) == sum(sizes.values())


def test_a_write_started_from_inside_a_write_of_the_same_client_is_an_error_not_a_hang() -> None:
    client, _ = client_with(lambda r: OK)

    def source() -> Iterator[dict]:
        yield from rows(5)
        client.write(rows(5, prefix="inner"))  # waits for the outer write, which waits for this input
        yield from rows(5, prefix="later")

    with pytest.raises(RuntimeError, match="from inside a write of the same client"):
        client.write(source())
    assert client.upsert(rows(3)).written == 3  # the client is usable afterwards


def test_close_from_another_thread_waits_for_the_write_under_way() -> None:
    def slow(request: WireRequest) -> WireReply:
        time.sleep(0.02)
        return OK

    client, transport = client_with(slow, max_concurrency=2)
    dispatch = client.engine.dispatch
    out: dict[str, object] = {}
    writer = threading.Thread(target=lambda: out.setdefault("report", client.write(rows(200))))
    writer.start()
    time.sleep(0.1)
    client.close()  # returns once the write has ended, with its report whole
    assert not writer.is_alive()
    writer.join()
    report = out["report"]
    assert report.ok and report.written == 200 and len(transport.requests) == 20
    assert dispatch.in_flight == 0


def test_a_write_interrupted_while_its_requests_are_in_flight_does_not_count_them_in_the_next() -> None:
    """Ctrl-C in a notebook while the last requests are on the wire: they finish on their own threads;
    what they account goes to the interrupted write's report, never the next write's."""

    def slow(request: WireRequest) -> WireReply:
        time.sleep(0.4)
        return OK

    client, _ = client_with(slow, max_concurrency=4)
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.15)
        with pytest.raises(KeyboardInterrupt) as info:
            client.write(rows(30, prefix="old"))  # 3 requests, all in flight when interrupted
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    stopped = info.value.report  # type: ignore[attr-defined]  # the interrupted write's own account
    assert "3 requests still in flight" in "".join(info.value.__notes__)
    deadline = time.monotonic() + 10
    while stopped.written < 30 and time.monotonic() < deadline:  # they end on their own threads
        time.sleep(0.02)
    assert (stopped.written, stopped.requests) == (30, 3)
    report = client.write(rows(10, prefix="new"))
    assert (report.written, report.requests) == (10, 1)


class _InputBroke(Exception):
    pass


def test_an_error_of_the_input_is_raised_as_it_is_with_the_account_of_the_rows_sent_before_it() -> None:
    """A generator that fails part way: the caller gets its own error (its type, for its ``except``),
    and, as a connector error gives it, the account of what is stored, to resume from."""

    def source() -> Iterator[dict]:
        yield from rows(DICT_CHUNK_ROWS + 5)
        raise _InputBroke(f"row {DICT_CHUNK_ROWS + 6} could not be read")

    client, transport = client_with(lambda r: OK, max_concurrency=2, batch_size=500)
    with pytest.raises(_InputBroke) as info:
        client.write(source())
    stored = [i for r in transport.requests for i in ids_in(r)]
    report = info.value.report  # type: ignore[attr-defined]
    assert report.written == len(stored) == DICT_CHUNK_ROWS and report.failed == 0
    assert stored == [f"r{i}" for i in range(DICT_CHUNK_ROWS)]  # the rows read in whole before the error
    assert f"before it: OK: {DICT_CHUNK_ROWS}/{DICT_CHUNK_ROWS} written" in "".join(info.value.__notes__)


def test_rows_handed_over_before_an_input_error_are_still_retried_and_isolated() -> None:
    """The input breaks while earlier batches are on the wire, one meeting a 503 and one refused whole for
    one bad row: the 503 is retried and the refusal isolated, so only the bad row fails. The input's error
    used to stop the write as fatal: 15 good rows failed with "not retried: the write stopped"."""
    blipped = threading.Event()

    def server(request: WireRequest) -> WireReply:
        ids = ids_in(request)
        if int(ids[0][1:]) >= 4040:
            time.sleep(0.05)  # still on the wire when the input breaks
        if "r4090" in ids and not blipped.is_set():
            blipped.set()
            raise Unavailable("503 blip", status=503)
        if "r4080" in ids:
            raise Rejected("a row has bad metadata", status=400)
        return OK

    def source() -> Iterator[dict]:
        yield from rows(DICT_CHUNK_ROWS)
        raise _InputBroke(f"row {DICT_CHUNK_ROWS + 1} could not be read")

    client, _ = client_with(server, max_concurrency=4, batch_size=10, on_error="report")
    with pytest.raises(_InputBroke) as info:
        client.write(source())
    report = info.value.report  # type: ignore[attr-defined]
    assert blipped.is_set()
    assert report.failed_ids == ["r4080"], report.failures
    assert report.written == DICT_CHUNK_ROWS - 1


def test_an_input_error_with_a_report_of_its_own_keeps_it() -> None:
    class Mine(Exception):
        report = "the caller's own"

    def source() -> Iterator[dict]:
        yield from rows(DICT_CHUNK_ROWS)
        raise Mine

    client, _ = client_with(lambda r: OK, batch_size=500)
    with pytest.raises(Mine) as info:
        client.write(source())
    assert info.value.report == "the caller's own"
    assert f"before it: OK: {DICT_CHUNK_ROWS}/{DICT_CHUNK_ROWS} written" in "".join(info.value.__notes__)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def test_a_request_that_cannot_be_handed_to_a_sender_gives_its_slot_back_once() -> None:
    client, _ = client_with(lambda r: OK, max_concurrency=2)
    dispatch = client.engine.dispatch
    real_submit = dispatch.pool.submit

    def refuse_once(*args: object, **kwargs: object) -> object:
        dispatch.pool.submit = real_submit  # type: ignore[method-assign]
        raise RuntimeError("cannot schedule new futures")

    dispatch.pool.submit = refuse_once  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="cannot schedule"):
        client.write(rows(30))
    assert dispatch.in_flight == 0  # not -1: one slot more than max_concurrency from then on
    assert client.upsert(rows(30)).written == 30


def test_a_client_that_wrote_before_a_fork_writes_in_the_child() -> None:
    """multiprocessing's default on Linux: the child has the parent's client but not its sender
    threads; a write there once waited for them for good."""
    from tests.servers.fixtures import start_server_process

    with start_server_process("grpc") as server, connect(server.uri, batch_size=10, verify=False) as client:
        assert client.upsert(rows(40, prefix="parent")).written == 40

        def write_in_child() -> str:
            report = client.write(rows(30, prefix="child"))
            return f"{report.written} {report.failed}"

        assert in_forked_child(write_in_child) == "30 0"
        assert client.upsert(rows(20, prefix="again")).written == 20  # the parent's client goes on
        ids = {v.id for r in server.arrived().requests for v in r.vectors}
        assert sum(i.startswith("child") for i in ids) == 30


def test_a_stop_wakes_a_sender_waiting_out_a_servers_retry_after_and_nothing_is_sent_after_it() -> None:
    # batch r0 is told to come back in 10 s; batch r10 then fails on a bad key: the write stops at
    # once, and r0 is not sent again after the stop (it waited the full hint, then sent again)
    b_sent, a_told = threading.Event(), threading.Event()
    sent: list[str] = []

    def handler(request: WireRequest) -> WireReply:
        first = ids_in(request)[0]
        sent.append(first)
        if first == "r0" and not a_told.is_set():
            b_sent.wait(5)
            a_told.set()
            raise Unavailable("503 back in a bit", status=503, retry_after_s=10)
        if first == "r10":
            b_sent.set()
            a_told.wait(5)
            raise AuthError("401 bad key", status=401)
        return OK

    client = connect("pinecone+grpc://127.0.0.1:1", batch_size=10, verify=False, max_concurrency=2)
    client._engine = Engine(client.backend, MockTransport(handler), client.options)  # the real sleep
    started = time.monotonic()
    with pytest.raises(AuthError, match="bad key"):
        client.upsert(rows(20))
    assert time.monotonic() - started < 5
    assert sorted(sent) == ["r0", "r10"]
    client.close()


def waiting_for_senders(thread_id: int) -> None:
    """Return once the thread waits in concurrent.futures.wait (the engine's wait for its senders)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread_id)
        while frame is not None:
            if frame.f_code.co_name == "wait" and frame.f_code.co_filename.endswith("_base.py"):
                return
            frame = frame.f_back
        time.sleep(0.005)


def test_ctrl_c_while_the_last_requests_are_on_the_wire_wakes_a_sender_waiting_out_a_retry_after() -> None:
    # the only batch is told to come back in 10 s, and Ctrl-C comes while the caller waits for it
    sent: list[str] = []
    main = threading.get_ident()
    signalled: list[float] = []

    def handler(request: WireRequest) -> WireReply:
        sent.append(ids_in(request)[0])
        if len(sent) == 1:
            waiting_for_senders(main)
            signalled.append(time.monotonic())
            signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C: KeyboardInterrupt on the caller's thread
            raise Unavailable("503 back in a bit", status=503, retry_after_s=120)
        return OK

    client = connect("pinecone+grpc://127.0.0.1:1", batch_size=10, verify=False)
    client._engine = Engine(client.backend, MockTransport(handler), client.options)  # the real sleep
    # Python's own Ctrl-C: a SparkContext made earlier in this process (other tests) leaves its handler,
    # which first asks a gone JVM to cancel its jobs (seconds) before raising KeyboardInterrupt
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            client.upsert(rows(10))
            time.sleep(120)  # (a signal handled after the write: still raised here)
    finally:
        signal.signal(signal.SIGINT, previous)
    client.close()
    # woken by the stop, not after the server's 120 s (a loaded machine may be slow, never that slow)
    assert time.monotonic() - signalled[0] < 60
    assert sent == ["r0"]
