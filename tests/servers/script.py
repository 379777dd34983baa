"""The fault script and the record of what arrived, shared by the REST and gRPC test servers.

A test scripts what the server answers instead of mocking calls. ``FaultScript`` says which
requests fail and how; ``ServerState`` admits each upsert under one lock, decides its fault,
records it, and keeps the final state per (namespace, id) with upsert semantics (the last
accepted write of an id wins, whole: values, sparse values and metadata).

Each request takes at most one fault, decided on arrival in this order:

1. ``api_key`` set and the request's key missing or different: unauthenticated (counts nothing down);
2. ``drop_first``: dropped without a reply. REST closes the socket. gRPC cannot close the
   connection from a servicer (and that would fail every call multiplexed on it), so it answers
   ``UNAVAILABLE`` "Socket closed", what grpc-core clients report for a lost connection; with
   ``grpc_drop="cancel"`` it cancels the stream instead (``RST_STREAM``, seen as ``CANCELLED``);
3. ``throttle_first``: throttled (429 with ``Retry-After`` / ``RESOURCE_EXHAUSTED`` with
   ``grpc-retry-pushback-ms``), both from ``retry_after_s``;
4. ``fail_first``: unavailable (503 / ``UNAVAILABLE``);
5. ``max_in_flight``: throttled while more than that many upserts are in flight (this one included).

The "first N" counters count down from the moment the script is set. A request that gets no
fault waits ``delay_s``, is decoded, and is rejected whole (400 / ``INVALID_ARGUMENT``) when
it holds an id of ``reject_ids`` (its message names the ids, or with ``reject_named=False`` no row at
all) or breaks one of Pinecone's limits (``pinecone_rules``: request size and count, id length,
metadata size and kinds, sparse lengths, and the index's dimension: ``dimension`` when scripted, else
that of the first dense vector the index accepted since the last reset), as Pinecone rejects a
request whole; otherwise it is applied, ``accept_delay_s`` later. ``noop`` skips decoding and
recording of bodies: the reply counts the vectors cheaply, for throughput runs, and only the
request's size and count are judged.

``echo_key`` makes the server quote the key each request carried in every refusal, as some servers
do: in the message (an error body, gRPC status details) and in a reply header or trailing metadata
(``ECHO_HEADER``); the connector must blank it out of everything it shows.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import numpy as np

from . import pinecone_rules as rules

__all__ = [
    "ECHO_HEADER",
    "MAX_DELETE_IDS",
    "Admission",
    "Arrived",
    "ArrivedDelete",
    "ArrivedRequest",
    "ArrivedVector",
    "Decoded",
    "FaultScript",
    "Outcome",
    "ServerState",
    "Verdict",
    "decode_arrived",
    "decode_script",
    "echoed",
    "encode_arrived",
    "encode_script",
    "rejection_message",
    "serve_upsert",
]

Outcome = Literal["ok", "rejected", "unauthenticated", "dropped", "throttled", "over_quota", "unavailable"]
Fault = Literal["unauthenticated", "dropped", "throttled", "over_quota", "unavailable"]


class FaultScript(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the server does to the upserts that arrive after it is set; the default serves every one."""

    throttle_first: int = 0
    retry_after_s: float = 0.05  # Retry-After header (fractional, for fast tests) / pushback in ms
    fail_first: int = 0
    drop_first: int = 0
    delay_s: float = 0.0
    accept_delay_s: float = 0.0  # more, for accepts only: a server that refuses faster than it accepts
    reject_ids: frozenset[str] = frozenset()
    reject_named: bool = True  # False: one message for any rejected id, naming no row (as Pinecone words its
    # rejections of an over-long id or over-size metadata), so isolation cannot lean on the message
    dimension: int | None = None  # the index's dimension; unset, the first dense vector accepted fixes it
    api_key: str | None = None  # required key, when set
    max_in_flight: int | None = None  # throttle above this many concurrent upserts
    noop: bool = False
    grpc_drop: Literal["unavailable", "cancel"] = "unavailable"  # how gRPC shows a dropped request
    echo_key: bool = False  # every refusal quotes the request's key (message and ECHO_HEADER)


class ArrivedVector(msgspec.Struct, frozen=True, kw_only=True):
    """One vector as it arrived; float fields are little-endian float32 bytes so they compare exactly."""

    id: str
    values_f32: bytes = b""
    sparse_indices: list[int] | None = None
    sparse_values_f32: bytes | None = None
    metadata: dict[str, Any] | None = None

    @property
    def values(self) -> np.ndarray:
        return np.frombuffer(self.values_f32, dtype="<f4")

    @property
    def sparse(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.sparse_indices is None:
            return None
        values = np.frombuffer(self.sparse_values_f32 or b"", dtype="<f4")
        return np.asarray(self.sparse_indices, dtype=np.uint32), values


class ArrivedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One upsert request: raw body, headers (lower-cased keys), decoded vectors and what it was answered."""

    seq: int  # 1-based arrival order since the last reset
    outcome: Outcome
    body: bytes  # empty in noop mode
    size: int  # body length in bytes, also in noop mode
    headers: dict[str, str]
    api_key: str | None
    namespace: str = ""
    vectors: list[ArrivedVector] = []
    vector_count: int = 0  # len(vectors), or the cheap count in noop mode
    message: str = ""  # the error message sent, if any
    started_s: float = 0.0  # monotonic seconds since the last reset, at arrival
    replied_s: float = 0.0  # ... when the reply was decided

    @property
    def ids(self) -> list[str]:
        return [v.id for v in self.vectors]


class ArrivedDelete(msgspec.Struct, frozen=True, kw_only=True):
    """One delete request (by ids, or ``delete_all``) and how it was answered."""

    namespace: str
    ids: list[str]
    delete_all: bool = False
    outcome: Literal["ok", "not_found", "invalid"] = "ok"


class Arrived(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of a server: every upsert request, the final vectors, and concurrency figures."""

    requests: list[ArrivedRequest] = []
    namespaces: dict[str, dict[str, ArrivedVector]] = {}  # namespace -> id -> last accepted write
    peak_in_flight: int = 0
    in_flight: int = 0
    deletes: list[ArrivedDelete] = []  # every authenticated delete request, in arrival order

    @property
    def accepted(self) -> list[ArrivedRequest]:
        return [r for r in self.requests if r.outcome == "ok"]

    @property
    def final(self) -> dict[tuple[str, str], ArrivedVector]:
        """The final state per (namespace, id)."""
        return {(ns, vid): v for ns, vectors in self.namespaces.items() for vid, v in vectors.items()}

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.requests if r.outcome == outcome)

    def ids(self, namespace: str = "") -> set[str]:
        return set(self.namespaces.get(namespace, {}))

    def vector(self, vector_id: str, namespace: str = "") -> ArrivedVector:
        return self.namespaces[namespace][vector_id]


@dataclass(frozen=True, slots=True)
class Admission:
    """The server's decision for one request on arrival."""

    seq: int
    started_s: float
    script: FaultScript
    fault: Fault | None


@dataclass(frozen=True, slots=True)
class Decoded:
    """An upsert request as a server decoded it."""

    namespace: str
    vectors: list[ArrivedVector]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to answer; each server maps it to its statuses."""

    outcome: Outcome
    upserted: int = 0
    message: str = ""
    retry_after_s: float = 0.0
    cancel_stream: bool = False  # gRPC: drop by cancelling the stream


ECHO_HEADER = "x-echo-api-key"
MAX_DELETE_IDS = 1000  # Pinecone's DeleteRequest.ids: "maxLength": 1000 (its OpenAPI schema)


def echoed(message: str, api_key: str | None) -> str:
    """A refusal's message quoting the key the request carried, as a server that echoes keys words it."""
    return f"{message} (the request's API key: {api_key or 'none'})"


def rejection_message(
    script: FaultScript, vectors: list[ArrivedVector], index_dimension: int | None = None
) -> str | None:
    """Why a request is rejected whole, naming the ids at fault unless ``reject_named`` is off (then the
    same message whatever the row); ``None`` when it is accepted.

    Past the scripted ids, Pinecone's limits (``pinecone_rules``), whose messages name no row. The
    index's dimension is the script's, else ``index_dimension`` (learnt from earlier upserts), else
    that of the request's first dense vector.
    """
    bad = sorted({v.id for v in vectors if v.id in script.reject_ids})
    if bad and not script.reject_named:
        return "Invalid vector: request rejected"
    if bad:
        more = " (and more)" if len(bad) > 10 else ""
        return f"Vector ID {', '.join(repr(i) for i in bad[:10])}{more} rejected"
    too_many = rules.count_problem(len(vectors))
    if too_many is not None:
        return too_many
    dimension = script.dimension or index_dimension
    for v in vectors:
        dense = len(v.values_f32) // 4
        dimension = dimension or dense or None
        problem = (
            rules.id_problem(v.id)
            or (rules.metadata_problem(v.metadata) if v.metadata is not None else None)
            or rules.sparse_problem(v.sparse_indices, len(v.sparse_values_f32 or b"") // 4)
            or rules.dimension_problem(dense, dimension)
        )
        if problem is not None:
            return problem
    return None


class ServerState:
    """Thread-safe: the script, its countdowns, in-flight figures, the requests and the final vectors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self.reset()

    def reset(self) -> None:
        """Forget every request and vector and go back to the default script."""
        with self._lock:
            self._t0 = time.monotonic()
            self._requests: list[ArrivedRequest] = []
            self._deletes: list[ArrivedDelete] = []
            self._namespaces: dict[str, dict[str, ArrivedVector]] = {}
            self._seq = 0
            self._dimension: int | None = None  # the index's, fixed by the first dense vector accepted
            self._peak = self._in_flight  # requests still in flight keep counting: they will leave
            self._set_script(FaultScript())

    def set_script(self, script: FaultScript) -> None:
        """Replace the script; its "first N" countdowns start now."""
        with self._lock:
            self._set_script(script)

    def _set_script(self, script: FaultScript) -> None:
        self._script = script
        self._left = {
            "dropped": script.drop_first,
            "throttled": script.throttle_first,
            "unavailable": script.fail_first,
        }

    @property
    def script(self) -> FaultScript:
        return self._script

    @property
    def dimension(self) -> int | None:
        """The index's dimension as its accepted upserts fixed it (the script's ``dimension`` aside)."""
        return self._dimension

    def admit(self, api_key: str | None) -> Admission:
        """Count the request in flight and decide its fault; pair every call with ``leave``."""
        with self._lock:
            self._seq += 1
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            script = self._script
            return Admission(self._seq, time.monotonic() - self._t0, script, self._fault(script, api_key))

    def _fault(self, script: FaultScript, api_key: str | None) -> Fault | None:
        if script.api_key is not None and api_key != script.api_key:
            return "unauthenticated"
        for fault in ("dropped", "throttled", "unavailable"):
            if self._left[fault] > 0:
                self._left[fault] -= 1
                return fault  # type: ignore[return-value]
        if script.max_in_flight is not None and self._in_flight > script.max_in_flight:
            return "over_quota"
        return None

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def record(
        self,
        admission: Admission,
        verdict: Verdict,
        *,
        body: bytes,
        headers: dict[str, str],
        api_key: str | None,
        decoded: Decoded | None,
    ) -> None:
        """Keep the request; an accepted one overwrites its vectors in the final state."""
        vectors = decoded.vectors if decoded is not None else []
        request = ArrivedRequest(
            seq=admission.seq,
            outcome=verdict.outcome,
            body=b"" if admission.script.noop else body,
            size=len(body),
            headers=headers,
            api_key=api_key,
            namespace=decoded.namespace if decoded is not None else "",
            vectors=vectors,
            vector_count=verdict.upserted if admission.script.noop else len(vectors),
            message=verdict.message,
            started_s=admission.started_s,
            replied_s=time.monotonic() - self._t0,
        )
        with self._lock:
            self._requests.append(request)
            if verdict.outcome == "ok" and vectors:
                space = self._namespaces.setdefault(request.namespace, {})
                for vector in vectors:
                    space[vector.id] = vector
                    if self._dimension is None and vector.values_f32:
                        self._dimension = len(vector.values_f32) // 4

    def describe(self, api_key: str | None) -> tuple[Fault | None, dict[str, int], int]:
        """``describe_index_stats``: (fault, vectors per namespace, dimension); only the api key is checked.

        The dimension is the script's, else the one the first accepted dense vector fixed (0 for an
        index that never took one).
        """
        with self._lock:
            script = self._script
            if script.api_key is not None and api_key != script.api_key:
                return "unauthenticated", {}, 0
            counts = {ns: len(vectors) for ns, vectors in self._namespaces.items()}
            return None, counts, script.dimension or self._dimension or 0

    def delete(
        self, api_key: str | None, namespace: str, *, delete_all: bool, ids: list[str]
    ) -> Literal["ok", "unauthenticated", "not_found", "invalid"]:
        """Pinecone's ``delete``: every vector of the namespace, or the given ids (at most
        ``MAX_DELETE_IDS``, as Pinecone's ``DeleteRequest.ids``; more, or none without ``delete_all``, is
        "invalid"); "not_found" for a namespace that holds nothing, as Pinecone answers 404 to it. An id
        that is not there is no error."""
        with self._lock:
            script = self._script
            if script.api_key is not None and api_key != script.api_key:
                return "unauthenticated"
            outcome: Literal["ok", "not_found", "invalid"] = "ok"
            space = self._namespaces.get(namespace)
            if len(ids) > MAX_DELETE_IDS or (not ids and not delete_all) or (ids and delete_all):
                outcome = "invalid"
            elif not space:
                outcome = "not_found"
            record = ArrivedDelete(namespace=namespace, ids=ids, delete_all=delete_all, outcome=outcome)
            self._deletes.append(record)
            if outcome != "ok" or space is None:
                return outcome
            if delete_all:
                del self._namespaces[namespace]
            for vector_id in ids:
                space.pop(vector_id, None)
            return "ok"

    def snapshot(self) -> Arrived:
        with self._lock:
            return Arrived(
                deletes=list(self._deletes),
                requests=list(self._requests),
                namespaces={ns: dict(vectors) for ns, vectors in self._namespaces.items()},
                peak_in_flight=self._peak,
                in_flight=self._in_flight,
            )


def serve_upsert(
    state: ServerState,
    body: bytes,
    *,
    headers: dict[str, str],
    api_key: str | None,
    decode: Callable[[bytes], Decoded],
    count: Callable[[bytes], int],
) -> Verdict:
    """Admit, fault, delay, decode, judge and record one upsert; the in-flight window spans all of it.

    ``decode`` raises ``ValueError`` for a malformed body (answered as a rejection); ``count`` is
    the cheap vector count of noop mode.
    """
    admission = state.admit(api_key)
    decoded: Decoded | None = None
    try:
        script = admission.script
        if admission.fault is not None:
            verdict = _fault_verdict(admission.fault, script)
            if not script.noop:
                decoded = _try_decode(decode, body)
        else:
            if script.delay_s > 0:
                time.sleep(script.delay_s)
            if script.noop:
                verdict = _judge_noop(count, body)
            else:
                verdict, decoded = _judge(script, decode, body, state.dimension)
                if verdict.outcome == "ok" and script.accept_delay_s > 0:
                    time.sleep(script.accept_delay_s)
        if admission.script.echo_key and verdict.outcome != "ok":
            verdict = dataclasses.replace(verdict, message=echoed(verdict.message, api_key))
        state.record(admission, verdict, body=body, headers=headers, api_key=api_key, decoded=decoded)
        return verdict
    finally:
        state.leave()


def _fault_verdict(fault: Fault, script: FaultScript) -> Verdict:
    if fault == "unauthenticated":
        return Verdict("unauthenticated", message="Invalid API Key")
    if fault == "dropped":
        return Verdict(
            "dropped", message="Socket closed (fault script)", cancel_stream=script.grpc_drop == "cancel"
        )
    if fault == "unavailable":
        return Verdict("unavailable", message="The service is temporarily unavailable (fault script)")
    message = "Too many concurrent requests" if fault == "over_quota" else "Request rate limit exceeded"
    return Verdict(fault, message=f"{message} (fault script)", retry_after_s=script.retry_after_s)


def _try_decode(decode: Callable[[bytes], Decoded], body: bytes) -> Decoded | None:
    try:
        return decode(body)
    except ValueError:
        return None


def _judge_noop(count: Callable[[bytes], int], body: bytes) -> Verdict:
    """Noop mode judges only what costs no decoding: the request's size and vector count."""
    upserted = count(body)
    reason = rules.size_problem(len(body)) or rules.count_problem(upserted)
    if reason is not None:
        return Verdict("rejected", message=reason)
    return Verdict("ok", upserted=upserted)


def _judge(
    script: FaultScript, decode: Callable[[bytes], Decoded], body: bytes, index_dimension: int | None
) -> tuple[Verdict, Decoded | None]:
    too_big = rules.size_problem(len(body))
    if too_big is not None:  # Pinecone refuses it before reading a row
        return Verdict("rejected", message=too_big), None
    try:
        decoded = decode(body)
    except ValueError as exc:
        return Verdict("rejected", message=f"Invalid request: {exc}"), None
    reason = rejection_message(script, decoded.vectors, index_dimension)
    if reason is not None:
        return Verdict("rejected", message=reason), decoded
    return Verdict("ok", upserted=len(decoded.vectors)), decoded


# The control API's wire format: msgpack keeps bytes and ints exact and is fast for large snapshots.
_ARRIVED_DECODER = msgspec.msgpack.Decoder(Arrived)
_SCRIPT_DECODER = msgspec.json.Decoder(FaultScript)


def encode_arrived(arrived: Arrived) -> bytes:
    return msgspec.msgpack.encode(arrived)


def decode_arrived(data: bytes) -> Arrived:
    return _ARRIVED_DECODER.decode(data)


def encode_script(script: FaultScript) -> bytes:
    return msgspec.json.encode(script)


def decode_script(data: bytes) -> FaultScript:
    return _SCRIPT_DECODER.decode(data)
