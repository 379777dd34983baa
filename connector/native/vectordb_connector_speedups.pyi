from collections.abc import Callable

import numpy as np

def decode_base64_reply(body: bytes, count: int) -> tuple[bytes, str | None] | None:
    """The float32 bytes of an OpenAI embeddings reply to ``count`` inputs with base64 vectors, row ``i``
    for input ``i``, and the model the reply names (``None``: none, or not a string; of a repeated key the
    last); ``None`` for any reply that is not exactly that (the caller's decoder says why)."""

def encode_float32_rows(matrix: np.ndarray) -> list[bytes]:
    """Each row of a C-contiguous ``(n, d)`` float32 matrix as the bytes of its JSON array, every float
    the shortest text that parses back to it (what orjson writes for a numpy float32). Raises
    ``ValueError`` for NaN or an infinity (naming its row and column) and for a matrix of another shape
    or layout; ``BufferError``/``TypeError`` for another item type."""

def float32_from_numbers(values: object) -> bytes | None:
    """The float32 bytes (native byte order) of a list or tuple of numbers, each the nearest float32 to the
    double ``PyFloat_AsDouble`` makes of it (``struct.pack("=f")``'s rule); ``None`` for anything else, an
    item that is no number, or a finite number beyond float32 (the caller's numpy path decides those).
    Holds Python's lock."""

def frame_rows(
    field: int,
    heads: list[bytes],
    vector_head: bytes,
    matrix: np.ndarray,
    tails: list[bytes] | None = None,
    prefix: bytes = b"",
    suffix: bytes = b"",
) -> bytes:
    """``prefix``, then for each row ``i`` of a C-contiguous ``(n, d)`` float32 matrix one length-delimited
    field ``field`` holding ``heads[i] + vector_head + `` the row's little-endian bytes ``+ tails[i]``, then
    ``suffix``: one bytes object, written with Python's lock released. ``ValueError`` for a head or tail
    count that is not one a row, a field number out of range, or a matrix of another shape or layout."""

def encode_struct(
    fields: dict[str, object],
    fallback: Callable[[object], bytes],
    fallback_struct: Callable[[dict[object, object]], bytes],
) -> bytes:
    """A dict as the fields of a ``google.protobuf.Struct``, entries sorted by key: exact ``None``, ``bool``,
    ``int`` (within int64), ``float``, ``str``, ``dict``, ``list`` and ``tuple`` written natively, any other
    value as ``fallback(value)`` writes its ``Value``, a dict with a key that is no ``str`` as
    ``fallback_struct(dict)`` writes it. Holds Python's lock; raises what the fallbacks raise."""

def point_ids(ids: list[object], fallback: Callable[[object], int | str]) -> list[int | str]:
    """``[connector.ids.point_id(i) for i in ids]``: an exact ``int`` within uint64 or a canonical UUID text
    is the id itself, another UUID's text its canonical form, any other exact ``str`` its UUIDv5 in
    ``ID_NAMESPACE``; any other id is ``fallback(id)``. Holds Python's lock; raises what ``fallback``
    raises."""

def qdrant_point_heads(
    ids: list[object],
    metadata: list[dict[str, object] | None] | None,
    namespace_key: str,
    namespace: str | None,
    original_id_key: str,
    row: Callable[[object, object], bytes],
    value: Callable[[object], bytes],
    structure: Callable[[dict[object, object]], bytes],
) -> list[bytes]:
    """Each row's ``PointStruct`` fields ``id=1`` and ``payload=3`` (its metadata, ``namespace`` under
    ``namespace_key`` when given, a converted id's original under ``original_id_key``; a map entry a key,
    in key order, each value a ``qdrant.Value``). A row whose id is no exact ``int``/``str``, or whose
    metadata is no exact ``dict`` with ``str`` keys, is ``row(id, metadata)``; a value but exact ``None``,
    ``bool``, ``int`` (within int64), ``float``, ``str``, ``dict``, ``list`` and ``tuple`` is ``value(v)``'s
    ``Value``, a nested dict with a key that is no ``str`` ``structure(d)``'s ``Struct`` fields. Holds
    Python's lock; raises what the fallbacks raise."""

def pinecone_vector_parts(
    ids: list[object],
    metadata: list[dict[str, object] | None] | None,
    row: Callable[[object, object], tuple[bytes, bytes]],
    value: Callable[[object], bytes],
    structure: Callable[[dict[object, object]], bytes],
) -> tuple[list[bytes], list[bytes] | None]:
    """Each row's Pinecone ``Vector`` field ``id=1`` (the id's ``str()``) and, when ``metadata`` is given,
    each row's field ``metadata=3`` (a ``google.protobuf.Struct``, entries in key order; nothing for
    ``None`` or an empty dict). A row whose id is no exact ``str`` or ``int`` within int64, or whose
    metadata is no exact ``dict`` with ``str`` keys, is ``row(id, metadata)``'s (head, tail); a value but
    exact ``None``, ``bool``, ``int`` (within int64), ``float``, ``str``, ``dict``, ``list`` and ``tuple``
    is ``value(v)``'s ``Value``, a nested dict with a key that is no ``str`` ``structure(d)``'s ``Struct``
    fields. Holds Python's lock; raises what the fallbacks raise."""
