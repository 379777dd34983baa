"""pgvector's own options."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from ...options import BackendOptions

__all__ = ["MAX_DIMENSION", "PgvectorOptions"]

MAX_DIMENSION = 16_000  # pgvector's vector and halfvec


class PgvectorOptions(BackendOptions, kw_only=True, forbid_unknown_fields=True):
    id_type: Literal["text", "bigint"] = "text"  # create=true: the id column's type
    vector_type: Literal["vector", "halfvec"] = "vector"  # create=true: halfvec stores 2 bytes per value
    sparse_dimension: Annotated[int, msgspec.Meta(ge=1, le=1_000_000_000)] | None = None
