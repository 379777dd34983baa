"""OpenAI's embeddings wire format: request bodies, replies decoded into one float32 matrix, error bodies.

A base64 reply is decoded by the native decoder where it is installed (``vectordb-connector-speedups``,
built from ``connector/native``; ``speedups``): JSON and base64 in Rust with Python's lock released, about
1.6 µs per 768-d vector, so replies decode on several cores at once. Otherwise, and for any reply it
does not take (it takes only exact ones), msgspec decodes it against the shape it must have: a base64
embedding goes from the JSON string straight to its little-endian float32 bytes (no Python ``str``
made), and the vectors are joined into one buffer viewed as an ``(n, d)`` matrix, with no Python float
made: about 2.3 µs per 768-d vector here, against 3.8 µs through orjson and pybase64 and 28 µs for a
float reply, which makes Python floats and one ``numpy.array`` call (parsing the numbers with
``numpy.fromstring`` or pyarrow's JSON reader measured two to three times slower). Items are placed by
their ``index``, whatever order they come in; a reply that does not hold exactly one item per input,
indexed ``0..n-1``, is ``MalformedReply``, and so is one whose items are not vectors of one form and
length. The client sends such a request again once; malformed again, it is fatal while no reply was
well-formed (a server that does not speak the protocol will not start to), and after well-formed ones it
fails that request's inputs alone.

Where the reply is whole and only some items are no vector like the reply's others (a ``null``, a
number, a list holding a string, bad base64, a list of another length or form), the others are taken
and those items are the reply's ``faults``, each naming its ``$.data[k]``, its index and why; the client
fails those inputs alone, as it does a vector holding NaN. The reply's form and length are those of most
of its vectors: a tie between two (one vector of 768 numbers and one of 767) names no item at fault, and
a reply with no vector at all is malformed whole. The native decoder takes no such reply (it gives
``None``): these rules are the Python decoder's alone, so both give the same outcome.

A reply names its ``model`` (OpenAI's, and every gateway's): both decoders hand it back with the matrix
(``Decoded``), ``None`` where there is none or it is not a string, so the client can refuse a reply from
another model than the earlier ones (a gateway's fallback: two models of one length would mix two vector
spaces in one index, which no dimension check sees).

Error replies carry OpenAI's body, ``{"error": {"message", "type", "param", "code"}}``; the transport
quotes that message in the connector's error (``transports.http.error_for_status``). Whatever is quoted
of a reply, an error's or a malformed one's, has the credentials in use blanked out (``redaction``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NamedTuple

import msgspec
import numpy as np
import orjson

from .. import speedups
from ..errors import MalformedReply
from ..redaction import Secrets

_native_decode: Callable[[bytes, int], tuple[bytes, str | None] | None] | None = speedups.native(
    "decode_base64_reply"
)

__all__ = [
    "Decoded",
    "MalformedReply",
    "decode",
    "decode_reply",
    "native_decoder",
    "not_utf8",
    "request_body",
]

REASON_CHARS = 200  # of a malformed reply quoted in its error: enough to see what the server sent


def request_body(model: str, texts: Sequence[str], encoding_format: str, dimensions: int | None) -> bytes:
    """The JSON body; ``orjson.JSONEncodeError`` (a ``TypeError``) for a text JSON cannot carry (``not_utf8``)."""
    doc: dict[str, Any] = {"model": model, "input": texts, "encoding_format": encoding_format}
    if dimensions is not None:
        doc["dimensions"] = dimensions
    return orjson.dumps(doc)


def not_utf8(text: str) -> str | None:
    """Why ``text`` cannot be sent, or ``None``: a Python string may hold a lone surrogate (a JSON
    ``"\\ud800"``, a file read with ``surrogateescape``), which UTF-8, so a request body, cannot carry."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"not valid UTF-8: a lone surrogate at position {exc.start}"
    return None


def native_decoder() -> bool:
    """True when base64 replies are decoded natively, with Python's lock released."""
    return _native_decode is not None


class _Item(msgspec.Struct):
    index: int
    embedding: bytes | list[float]  # base64, or numbers


class _Reply(msgspec.Struct):
    data: list[_Item]
    model: object = None  # a name, if a string: anything else is none, as a missing one is


class _LooseItem(msgspec.Struct):
    index: int
    embedding: msgspec.Raw = msgspec.Raw()  # read on its own: one item's fault is that item's


class _LooseReply(msgspec.Struct):
    data: list[_LooseItem]
    model: object = None


_REPLY = msgspec.json.Decoder(_Reply)
_LOOSE_REPLY = msgspec.json.Decoder(_LooseReply)
_EMBEDDING = msgspec.json.Decoder(bytes | list[float])


class Decoded(NamedTuple):
    """A reply's ``(count, d)`` float32 matrix, the model it names (``None``: none named), and its
    ``faults``: the inputs whose item was no vector like the others (their rows are NaN), and why."""

    matrix: np.ndarray
    model: str | None
    faults: Mapping[int, str] = {}  # read only: the default is shared


def decode(
    body: bytes,
    count: int,
    where: str,
    python_lock: AbstractContextManager[object] | None = None,
    *,
    secrets: Secrets,
) -> Decoded:
    """The ``(count, d)`` float32 matrix of a reply to ``count`` inputs, row ``i`` for input ``i``, and
    the model it names: the native decoder's where it takes the reply, else the Python decoder's, under
    ``python_lock`` (it holds Python's lock anyway: threads that wait on a lock of their own sleep
    meanwhile). A malformed reply's error quotes its start with ``secrets`` blanked out."""
    decoded = _decode_native(body, count)
    if decoded is not None:
        return decoded
    with python_lock or nullcontext():
        return _decode_python(body, count, where, secrets)


def decode_reply(
    body: bytes,
    count: int,
    where: str,
    python_lock: AbstractContextManager[object] | None = None,
    *,
    secrets: Secrets,
) -> np.ndarray:
    """``decode``'s matrix alone (the rows of its faults are NaN)."""
    return decode(body, count, where, python_lock, secrets=secrets).matrix


def _decode_native(body: bytes, count: int) -> Decoded | None:
    """The native decoder's matrix and model, with Python's lock released; ``None`` where it is not
    installed or does not take the reply (then ``_decode_python`` decodes it or says what is wrong)."""
    if _native_decode is None or (decoded := _native_decode(body, count)) is None:
        return None
    if not isinstance(decoded, tuple):  # a build older than the model's check: the Python decoder reads it
        return None
    rows, model = decoded
    return Decoded(_as_matrix(rows, count), model)


def _decode_python(body: bytes, count: int, where: str, secrets: Secrets) -> Decoded:
    """msgspec's decoding, holding Python's lock: every reply, and the one place that says why a
    reply, or an item of it, is malformed."""
    try:
        reply = _REPLY.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:  # not JSON, not an embeddings list, too deep
        whole = MalformedReply(
            f"{where}: the reply is not an embeddings list ({secrets.blank(str(exc))}): {_start(body, secrets)}"
        )
    else:
        model = reply.model if isinstance(reply.model, str) else None
        try:
            return Decoded(_matrix(reply.data, count, where, body, secrets), model)
        except MalformedReply as exc:
            whole = exc
    return _with_faults(body, count, where, whole, secrets)  # or raises ``whole``


def _with_faults(body: bytes, count: int, where: str, whole: MalformedReply, secrets: Secrets) -> Decoded:
    """A reply whose items are one per input, indexed ``0..count-1``, most of them vectors of one form
    and length: those vectors, and the other items as faults (their rows NaN). Raises ``whole`` (the
    strict decoder's error) for any other reply: one malformed as a whole, none of whose items is a
    vector, or whose vectors tie between two lengths (no item can be named at fault)."""
    try:
        reply = _LOOSE_REPLY.decode(body)
    except (msgspec.DecodeError, RecursionError):
        raise whole from None
    if len(reply.data) != count or sorted(item.index for item in reply.data) != list(range(count)):
        raise whole
    vectors: dict[int, tuple[str, np.ndarray]] = {}  # by index: form ("base64" or "numbers") and vector
    faults: dict[int, str] = {}
    for item in reply.data:
        read = _vector(item.embedding)
        if isinstance(read, str):
            faults[item.index] = read
        else:
            vectors[item.index] = read
    shapes = collections.Counter((form, len(vector)) for form, vector in vectors.values())
    ranked = shapes.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        raise whole
    (form, d), _ = ranked[0]
    matrix = np.full((count, d), np.nan, dtype=np.float32)
    for index, (its_form, vector) in vectors.items():
        if its_form != form:
            faults[index] = f"{_FORMS[its_form]}, where the reply's others are {_FORMS[form]}"
        elif len(vector) != d:
            faults[index] = f"a vector of {len(vector)} numbers, where the reply's others have {d}"
        else:
            matrix[index] = vector
    if not faults:  # every item a vector: the reply's fault is not one of its items'
        raise whole
    at = {item.index: k for k, item in enumerate(reply.data)}
    model = reply.model if isinstance(reply.model, str) else None
    said = {
        index: f"{where}: the reply's $.data[{at[index]}] (index {index}) is no vector: {secrets.blank(why)}"
        for index, why in sorted(faults.items())
    }
    return Decoded(matrix, model, said)


_FORMS = {"base64": "base64", "numbers": "a list of numbers"}


def _vector(raw: msgspec.Raw) -> tuple[str, np.ndarray] | str:
    """One item's embedding as its form and float32 vector, or why it is none."""
    if not len(raw):
        return 'no "embedding" field'
    try:
        value = _EMBEDDING.decode(raw)
    except msgspec.DecodeError as exc:
        return "null" if bytes(raw) == b"null" else str(exc)
    if isinstance(value, bytes):
        if not value or len(value) % 4:
            return f"base64 of {len(value)} bytes, not whole float32s"
        return "base64", np.frombuffer(value, dtype="<f4")
    if not value:
        return "an empty list"
    with np.errstate(over="ignore"):  # a number over float32's range is infinity: the client fails its input
        return "numbers", np.array(value, dtype=np.float32)


def _matrix(data: list[_Item], count: int, where: str, body: bytes, secrets: Secrets) -> np.ndarray:
    """The items' vectors as one matrix in input order; ``MalformedReply`` says what is wrong."""
    if len(data) != count:
        raise MalformedReply(
            f"{where}: the reply has {len(data)} items for {count} inputs: {_start(body, secrets)}"
        )
    order = [item.index for item in data]
    if order != list(range(count)):
        if sorted(order) != list(range(count)):
            raise MalformedReply(f"{where}: the reply's indices are not 0..{count - 1}: {order[:10]}")
        data = sorted(data, key=lambda item: item.index)
    encoded = [item.embedding for item in data if isinstance(item.embedding, bytes)]
    if len(encoded) == count:
        return _from_bytes(encoded, where)
    numbers = [item.embedding for item in data if isinstance(item.embedding, list)]
    if len(numbers) == count:
        return _from_floats(numbers, where)
    raise MalformedReply(f"{where}: embeddings are neither all base64 strings nor all lists of numbers")


def _from_bytes(vectors: list[bytes], where: str) -> np.ndarray:
    size = len(vectors[0]) if vectors else 0
    if any(len(vector) != size for vector in vectors):
        raise MalformedReply(f"{where}: base64 embeddings of unequal lengths")
    if size % 4 or not size:
        raise MalformedReply(f"{where}: base64 embeddings that are not whole, non-empty float32 vectors")
    return _as_matrix(b"".join(vectors), len(vectors))


def _as_matrix(rows: bytes, count: int) -> np.ndarray:
    """``count`` rows of little-endian float32 bytes as an ``(count, d)`` float32 matrix, no copy."""
    matrix = np.frombuffer(rows, dtype="<f4").reshape(count, -1)
    return matrix if matrix.dtype == np.float32 else matrix.astype(np.float32)  # big-endian hosts


def _from_floats(vectors: list[list[float]], where: str) -> np.ndarray:
    try:
        with np.errstate(
            over="ignore"
        ):  # a number over float32's range is infinity: the client fails its input
            matrix = np.array(vectors, dtype=np.float32)
    except ValueError:
        raise MalformedReply(f"{where}: embeddings of unequal lengths") from None
    if not matrix.shape[1]:
        raise MalformedReply(f"{where}: empty embeddings")
    return matrix


def _start(body: bytes, secrets: Secrets) -> str:
    """The reply's first characters, blanked before they are cut (a cut key would not match)."""
    return secrets.blank(body.decode("utf-8", "replace")).strip()[:REASON_CHARS]
