"""Point ids for databases that take only UUIDs (or unsigned integers): one rule for Qdrant and Weaviate.

A UUID id is used as it is (in its canonical lower-case, hyphenated text); an unsigned 64-bit
integer stays an integer where the database takes them (Qdrant); any other id becomes the
UUIDv5 of its text in ``ID_NAMESPACE``. The same id gives the same UUID on every run,
machine and retry, so a rerun replaces the rows it wrote instead of duplicating them. The
original id is kept beside the row (``ORIGINAL_ID_KEY``, a payload key or property) so it
can still be read and searched.

The namespace is fixed here for good: changing it would give every converted id a new UUID,
and reruns would duplicate. ``str(uuid.uuid5(ID_NAMESPACE, "doc-1"))`` computes the UUID of
id ``doc-1`` anywhere, without this package.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

__all__ = [
    "ID_NAMESPACE",
    "MAX_UINT64",
    "ORIGINAL_ID_KEY",
    "as_uuid",
    "canonical_uuid",
    "converted",
    "point_id",
    "uuid5_text",
]

# Fixed for good (see above): ids that are neither a UUID nor an unsigned integer map into it.
ID_NAMESPACE = uuid.UUID("5e85dbc1-191f-4ec4-9f59-dc30e8685b42")
ORIGINAL_ID_KEY = "original_id"  # default payload key / property that keeps a converted id
MAX_UINT64 = (1 << 64) - 1
_NAMESPACE_BYTES = ID_NAMESPACE.bytes
_HEX = frozenset("0123456789abcdefABCDEF")
# canonical text already, the common case: one match in C instead of a set test a character
CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def canonical_uuid(text: str) -> str | None:
    """``text`` as a canonical UUID (``8-4-4-4-12`` lower-case hex) if it is one, hyphenated or as
    32 hex digits, in any case; else ``None``. Braces, ``urn:uuid:`` and stray hyphens are not UUIDs
    here: such an id is converted like any other text."""
    if CANONICAL_UUID.fullmatch(text) is not None:
        return text
    if len(text) == 36:
        if text[8] != "-" or text[13] != "-" or text[18] != "-" or text[23] != "-":
            return None
        digits = text[:8] + text[9:13] + text[14:18] + text[19:23] + text[24:]
    elif len(text) == 32:
        digits = text
    else:
        return None
    if not _HEX.issuperset(digits):
        return None
    if len(text) == 36 and text == text.lower():
        return text  # canonical already: no UUID object to build
    return str(uuid.UUID(hex=digits))


def as_uuid(value: Any) -> str:
    """The UUID for an id: itself if it is a UUID (canonical text), else its UUIDv5 in ``ID_NAMESPACE``."""
    if isinstance(value, uuid.UUID):
        return str(value)
    text = value if isinstance(value, str) else str(value)
    return canonical_uuid(text) or uuid5_text(text)


def converted(raw: Any) -> bool:
    """Whether ``as_uuid(raw)`` is a UUIDv5 made from the id, whose original is then kept beside the row
    (``ORIGINAL_ID_KEY``), rather than the id's own UUID. A UUID in any spelling (upper case, 32 hex
    digits, a ``uuid.UUID``) is the id itself: keeping it too made what is stored depend on how the id
    was spelt. Qdrant keeps an unsigned integer as it is, which this rule does not decide."""
    if isinstance(raw, uuid.UUID):
        return False
    return canonical_uuid(raw if isinstance(raw, str) else str(raw)) is None


def uuid5_text(text: str) -> str:
    """``str(uuid.uuid5(ID_NAMESPACE, text))`` without the ``UUID`` object (a third of the time: this
    runs once a row on the write path)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + text.encode(), usedforsecurity=False).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def point_id(value: Any) -> int | str:
    """Qdrant's rule: an unsigned 64-bit integer (``bool`` is not one) stays an ``int``; any other id
    is ``as_uuid(value)``. A digit string is text, not an integer: ``"7"`` is converted."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_UINT64:
        return value
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu":  # numpy integer scalars
        return point_id(int(value))
    return as_uuid(value)
