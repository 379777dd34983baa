"""A collection's schema: DescribeCollection read into a ``Layout``, and the quick-setup schema ``create=true`` makes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ... import protowire as pw
from ...errors import ConfigError

__all__ = [
    "Layout",
    "ScalarField",
    "encode_create_index",
    "encode_schema",
    "kv_pair",
    "layout_from_schema",
    "type_name",
]

KEY_MAX_LENGTH = 512

# schema.DataType values (schema.proto of milvus-io/milvus-proto)
BOOL, INT8, INT16, INT32, INT64, FLOAT, DOUBLE, STRING, VARCHAR, ARRAY, JSON = (
    1,
    2,
    3,
    4,
    5,
    10,
    11,
    20,
    21,
    22,
    23,
)
FLOAT_VECTOR, SPARSE_FLOAT_VECTOR = 101, 104
VECTOR_TYPES = frozenset({100, 101, 102, 103, 104, 105, 106})
SCALAR_TYPES = frozenset({BOOL, INT8, INT16, INT32, INT64, FLOAT, DOUBLE, STRING, VARCHAR, JSON})
ARRAY_ELEMENTS = frozenset(
    {BOOL, INT8, INT16, INT32, INT64, FLOAT, DOUBLE, VARCHAR}
)  # what an Array field holds
INT_RANGES = {INT8: 7, INT16: 15, INT32: 31, INT64: 63}
# as Milvus's own messages and pymilvus's DataType name them
TYPE_NAMES = {
    BOOL: "Bool",
    INT8: "Int8",
    INT16: "Int16",
    INT32: "Int32",
    INT64: "Int64",
    FLOAT: "Float",
    DOUBLE: "Double",
    STRING: "String",
    VARCHAR: "VarChar",
    ARRAY: "Array",
    JSON: "JSON",
    24: "Geometry",
    25: "Text",
    26: "Timestamptz",
    100: "BinaryVector",
    FLOAT_VECTOR: "FloatVector",
    102: "Float16Vector",
    103: "BFloat16Vector",
    SPARSE_FLOAT_VECTOR: "SparseFloatVector",
    105: "Int8Vector",
}


def type_name(dtype: int) -> str:
    """A data type as users read it in Milvus's schemas (``VarChar``), never a bare enum number."""
    return TYPE_NAMES.get(dtype, f"data type {dtype}")


@dataclass(frozen=True, slots=True)
class ScalarField:
    """A declared scalar field that metadata keys of the same name fill."""

    name: str
    dtype: int
    required: bool  # not nullable and no default: every row needs a value
    element: int | None = None  # an Array field's element type
    max_length: int | None = None  # characters of a VarChar value, or of each VarChar element of an Array
    max_capacity: int | None = None  # elements of an Array value

    def describe(self) -> str:
        """``field 'tags' (Array of VarChar)``: how a row's failure names the field."""
        of = f" of {type_name(self.element)}" if self.element is not None else ""
        return f"field {self.name!r} ({type_name(self.dtype)}{of})"


@dataclass(frozen=True, slots=True)
class Layout:
    """What an upsert into one collection needs: field names and types, learnt from DescribeCollection."""

    collection: str
    dim: int | None
    key: str = "id"
    key_int64: bool = False
    key_max_length: int | None = None  # characters a VarChar key holds
    vector: str = "vector"
    sparse: str | None = None
    dynamic: bool = True
    scalars: tuple[ScalarField, ...] = ()
    partition_key: str | None = None  # a scalar field (also in ``scalars``) that takes the namespace
    # named vectors (option vector_columns): each name's FloatVector field and its dimension, in the
    # write's order; ``vector`` and ``dim`` are then unused
    named: tuple[tuple[str, int | None], ...] = ()
    # every vector field and function output, filled or not: a metadata key of one of these names would
    # be taken by the server for that field (a FloatVector stored and searched that nobody sent as one)
    vector_fields: tuple[str, ...] = ()
    # nullable vector fields the write does not fill, with their data type: Milvus Lite stores no null
    # vector, so a row leaving one out gets a vector of zeros (``MilvusBackend._check_unfilled``)
    unfilled: tuple[tuple[str, int], ...] = ()


def layout_from_schema(
    collection: str,
    schema: pw.FieldReader,
    vector_field: str | None = None,
    names: tuple[str, ...] = (),
) -> Layout:
    """Read ``schema.CollectionSchema`` (name 1, autoID 3, fields 4, enable_dynamic_field 5).

    ``names``: a write of named vectors (option ``vector_columns``), each name a FloatVector field of
    that name; a name that is missing, or a field of another type, is a ``ConfigError`` naming it, and so
    is a required FloatVector field the names leave out (an upsert must fill it)."""
    key: tuple[str, int] | None = None
    key_max_length = None
    dense: list[tuple[str, int | None, bool]] = []
    sparse: list[tuple[str, bool]] = []
    vector_fields: list[str] = []
    unfilled: list[tuple[str, int]] = []
    scalars: list[ScalarField] = []
    partition_key = None
    for raw in schema.fields.get(4, []):
        f = pw.FieldReader(raw)
        # FieldSchema: name 2, is_primary_key 3, data_type 5, type_params 6, autoID 8,
        # default_value 11, is_dynamic 12, is_partition_key 13, nullable 15, is_function_output 16
        name, dtype = f.str(2), f.int(5)
        optional = bool(f.int(15)) or 11 in f.fields
        if f.int(3):
            if f.int(8) or schema.int(3):
                raise ConfigError(
                    f"milvus collection {collection!r} generates its own ids (autoID); the connector upserts by id: "
                    "use a collection whose primary key is not autoID"
                )
            key = (name, dtype)
            key_max_length = _param(f, "max_length")
        elif f.int(12):
            continue  # the dynamic $meta field
        elif f.int(16):
            vector_fields.append(name)  # an output of a function (e.g. BM25): the server fills it
        elif dtype == FLOAT_VECTOR:
            dense.append((name, _param(f, "dim"), optional))
        elif dtype == SPARSE_FLOAT_VECTOR:
            sparse.append((name, optional))
        elif dtype in SCALAR_TYPES or (dtype == ARRAY and f.int(10) in ARRAY_ELEMENTS):
            # FieldSchema element_type 10; type_params max_length, max_capacity
            element = f.int(10) if dtype == ARRAY else None
            length, capacity = _param(f, "max_length"), _param(f, "max_capacity")
            scalars.append(ScalarField(name, dtype, not optional, element, length, capacity))
            if f.int(13):
                partition_key = name
        elif not optional:
            kind = "vector" if dtype in VECTOR_TYPES else "field"
            raise ConfigError(
                f"milvus collection {collection!r} has a required {kind} {name!r} of type {type_name(dtype)}, "
                "which the connector cannot fill"
            )
        elif dtype in VECTOR_TYPES:
            vector_fields.append(name)
            unfilled.append((name, dtype))
    if key is None or key[1] not in (INT64, VARCHAR):
        raise ConfigError(f"milvus collection {collection!r} has no INT64 or VarChar primary key")
    named: tuple[tuple[str, int | None], ...] = ()
    if names:
        named = _named_fields(collection, schema, dense, names)
        vector: tuple[str, int | None] = ("", None)
    else:
        vector = _pick_vector(collection, dense, vector_field)
    filled = {name for name, _ in named} if names else {vector[0]}
    unfilled += [(name, FLOAT_VECTOR) for name, _, _ in dense if name not in filled]
    chosen = _pick_sparse(collection, sparse)
    unfilled += [(name, SPARSE_FLOAT_VECTOR) for name, _ in sparse if name != chosen]
    vector_fields += [name for name, _, _ in dense] + [name for name, _ in sparse]
    return Layout(
        collection=collection,
        dim=vector[1],
        key=key[0],
        key_int64=key[1] == INT64,
        key_max_length=key_max_length if key[1] == VARCHAR else None,
        vector=vector[0],
        sparse=chosen,
        dynamic=bool(schema.int(5)),
        scalars=tuple(scalars),
        partition_key=partition_key,
        named=named,
        vector_fields=tuple(vector_fields),
        unfilled=tuple(unfilled),
    )


def _pick_sparse(collection: str, sparse: list[tuple[str, bool]]) -> str | None:
    """The one sparse field a write fills: the required one, else the first. A write has one sparse
    vector per row, so a second required sparse field would never be sent: every request was refused
    (about 84 requests for 300 rows, then SystemicRejection) before this ``ConfigError``."""
    required = [name for name, optional in sparse if not optional]
    if len(required) > 1:
        listed = ", ".join(repr(name) for name in required)
        raise ConfigError(
            f"milvus collection {collection!r} requires SparseFloatVector fields {listed}; a write fills one "
            f"sparse field ({required[0]!r}), so {', '.join(repr(n) for n in required[1:])} cannot be filled"
        )
    if required:
        return required[0]
    return sparse[0][0] if sparse else None


def _named_fields(
    collection: str, schema: pw.FieldReader, dense: list[tuple[str, int | None, bool]], names: tuple[str, ...]
) -> tuple[tuple[str, int | None], ...]:
    """Each name's FloatVector field and dimension; ``ConfigError`` naming a name the collection lacks."""
    types = {pw.FieldReader(raw).str(2): pw.FieldReader(raw).int(5) for raw in schema.fields.get(4, [])}
    by_name = {name: dim for name, dim, _ in dense}
    out = []
    for name in names:
        if name not in by_name:
            listed = ", ".join(by_name) or "none"
            found = f"a field of type {type_name(types[name])}" if name in types else "no field"
            raise ConfigError(
                f"option vector_columns: name {name!r}: milvus collection {collection!r} has {found} "
                f"{name!r}, where a FloatVector field is needed (its FloatVector fields: {listed})"
            )
        out.append((name, by_name[name]))
    required = [name for name, _, optional in dense if name not in names and not optional]
    if required:
        raise ConfigError(
            f"option vector_columns: milvus collection {collection!r} also requires FloatVector field "
            f"{required[0]!r}, which no name fills"
        )
    return tuple(out)


def _param(f: pw.FieldReader, key: str) -> int | None:
    """An integer type parameter of a field (``dim``, ``max_length``, ``max_capacity``), or ``None``."""
    for raw in f.fields.get(6, []):
        kv = pw.FieldReader(raw)
        if kv.str(1) == key:
            return int(kv.str(2))
    return None


def _pick_vector(
    collection: str, dense: list[tuple[str, int | None, bool]], wanted: str | None
) -> tuple[str, int | None]:
    if wanted is not None:
        for name, dim, _ in dense:
            if name == wanted:
                others = [n for n, _, optional in dense if n != name and not optional]
                if others:
                    raise ConfigError(
                        f"milvus collection {collection!r} also requires vector field {others[0]!r}"
                    )
                return name, dim
        raise ConfigError(
            f"option vector_field: collection {collection!r} has no FloatVector field {wanted!r}"
        )
    if not dense:
        raise ConfigError(f"milvus collection {collection!r} has no FloatVector field")
    if len(dense) > 1:
        names = ", ".join(n for n, _, _ in dense)
        raise ConfigError(
            f"milvus collection {collection!r} has several FloatVector fields ({names}): set option vector_field"
        )
    return dense[0][0], dense[0][1]


# --------------------------------------------------------------------------------------------------
# encoding: control-plane messages


def kv_pair(key: str, value: str) -> bytes:
    return pw.string_field(1, key) + pw.string_field(2, value)


def encode_schema(
    collection: str,
    dimension: int | None,
    *,
    key_int64: bool,
    sparse: bool,
    named: Mapping[str, int] | None = None,
) -> bytes:
    """``CollectionSchema`` of a quick-setup collection: key ``id``, FloatVector ``vector`` of ``dimension``
    (a write of named vectors: a FloatVector field per name of ``named``, name -> dimension, instead), and
    ``sparse``; dynamic field on."""
    vectors = dict(named) if named else {"vector": dimension}
    key_field = (
        pw.string_field(2, "id") + pw.varint_field(3, 1) + pw.varint_field(5, INT64 if key_int64 else VARCHAR)
    )
    if not key_int64:
        key_field += pw.len_field(6, kv_pair("max_length", str(KEY_MAX_LENGTH)))
    fields = [key_field]
    for name, dim in vectors.items():
        fields.append(
            pw.string_field(2, name)
            + pw.varint_field(5, FLOAT_VECTOR)
            + pw.len_field(6, kv_pair("dim", str(dim)))
        )
    if sparse:
        fields.append(pw.string_field(2, "sparse") + pw.varint_field(5, SPARSE_FLOAT_VECTOR))
    return (
        pw.string_field(1, collection) + b"".join(pw.len_field(4, f) for f in fields) + pw.varint_field(5, 1)
    )


def encode_create_index(collection: str, field_name: str, index_type: str, metric_type: str) -> bytes:
    """``CreateIndexRequest{collection_name 3, field_name 4, extra_params 5, index_name 6}``."""
    params = [("index_type", index_type), ("metric_type", metric_type), ("params", "{}")]
    return (
        pw.string_field(3, collection)
        + pw.string_field(4, field_name)
        + b"".join(pw.len_field(5, kv_pair(k, v)) for k, v in params)
        + pw.string_field(6, field_name)
    )
