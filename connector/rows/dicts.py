"""Dict input: rows as mappings (``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .checks import assemble
from .types import BAD_JSON, Columns, ColumnSpec, DimensionState, Prepared, RowRules, as_mapping, derive_id

__all__ = ["prepare_columns", "prepare_dicts"]


def prepare_dicts(
    rows: Sequence[Mapping[str, Any]],
    spec: ColumnSpec,
    rules: RowRules,
    dim: DimensionState,
    namespace: str | None = None,
) -> Prepared:
    """Check and convert dicts ``{"id", "values", "sparse_values"?, "metadata"?, "namespace"?}``."""
    n = len(rows)
    id_key, vec_key = spec.id_column, spec.vector_column
    sparse_key = spec.sparse_column or "sparse_values"
    ns_key = spec.namespace_column or "namespace"
    if spec.id_from:
        ids = [derive_id([r.get(c) for c in spec.id_from]) for r in rows]
    else:
        ids = [_dict_id(r.get(id_key), rules) for r in rows]
    lengths = np.zeros(n, dtype=np.int64)
    nulls = np.zeros(n, dtype=bool)
    parts: list[np.ndarray] = []
    bad_type: set[int] = set()
    for i, r in enumerate(rows):
        v = r.get(vec_key)
        if v is None:
            nulls[i] = True
            continue
        try:
            arr = np.asarray(v, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError):
            nulls[i] = True
            bad_type.add(i)
            continue
        lengths[i] = arr.size
        parts.append(arr)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    has_sparse = any(sparse_key in r for r in rows)
    sparse = [_dict_sparse(r.get(sparse_key)) for r in rows] if has_sparse else None
    used = {vec_key, sparse_key, ns_key} if spec.id_from else {id_key, vec_key, sparse_key, ns_key}
    metadata = [_dict_metadata(r, spec, used) for r in rows]
    has_ns = spec.namespace_column is not None or any(ns_key in r for r in rows)
    namespaces = [r.get(ns_key, namespace) for r in rows] if has_ns else None
    cols = Columns(n, ids, flat, offsets, nulls, sparse, metadata, namespaces)
    return assemble(cols, rules, dim, namespace, bad_type)


def prepare_columns(
    cols: Columns, rules: RowRules, dim: DimensionState, namespace: str | None = None
) -> Prepared:
    """Check column-major rows; ids are normalised as dict ids are."""
    if not all(type(i) is str for i in cols.ids):
        cols.ids = [_dict_id(i, rules) for i in cols.ids]
    return assemble(cols, rules, dim, namespace)


def _dict_id(value: Any, rules: RowRules) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return value if rules.numeric_ids else str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value  # refused in _assemble: ids must be strings or integers


def _dict_sparse(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    indices, values = getattr(value, "indices", None), getattr(value, "values", None)
    return {"indices": indices, "values": values}


def _dict_metadata(row: Mapping[str, Any], spec: ColumnSpec, used: set[str]) -> dict[str, Any] | None:
    base = row.get("metadata")
    out: dict[str, Any] = {}
    if base is not None:
        merged = as_mapping(base, False)
        if merged is BAD_JSON:
            return None
        out.update(merged or {})
    names = spec.metadata_columns if spec.metadata_columns is not None else [k for k in row if k not in used]
    for key in names:
        if key != "metadata" and row.get(key) is not None:
            out[key] = row[key]
    return out
