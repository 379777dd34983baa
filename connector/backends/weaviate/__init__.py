"""Weaviate: ``weaviate://host[:8080]/Collection``; REST for the schema, gRPC for the rows.

Data plane: ``/weaviate.v1.Weaviate/BatchObjects`` (port option ``grpc_port``, 50051, on
``grpc_host``, the URI's host unless given) with a ``BatchObjectsRequest`` encoded by hand (field
numbers in WIRE.md §2): each vector is its matrix row's float32 bytes, as the named vector
``vector_name`` (``BatchObject.vectors``; ``default`` when none is given) or, in a collection with
one unnamed vector, as ``vector_bytes``. Several vectors a row (options ``vector_columns``,
``multi_vector_columns``) go as one ``vectors`` entry per name: a dense one as its float32 bytes, a
multi-vector (``VECTOR_TYPE_MULTI_FP32``) as its vectors' length in a little-endian uint16 followed by
its block of the values buffer (the server's ``Fp32SliceOfSlicesFromBytes``), so at most 65,535 floats
a vector. Metadata columns become properties: scalars in the
Struct, lists in the typed array fields. The reply lists the objects Weaviate refused, by index and
with its reason: those rows fail, the others are written; an index outside the request cannot be
pinned on a row, and then none of the unnamed rows is counted as written.

Ids: Weaviate takes UUIDs only. A UUID id, in any spelling (upper case, 32 hex digits), is used as it
is, in its canonical form, and nothing of it is kept; any other id becomes its UUIDv5
(``connector.ids``), with the original kept in the property ``original_id_key`` (``original_id``),
so a rerun replaces the objects it wrote. An existing UUID is an upsert: the object is replaced.

Namespaces are tenants (multi-tenancy): a namespace that is no tenant name (1 to 64 letters, digits,
``_`` and ``-``) is a ``ConfigError`` as option ``namespace`` and fails its rows from
``namespace_column``, before Weaviate is asked. A multi-tenant collection takes its tenants from option
``namespace``, ``namespace_column``, the call's ``namespace`` or the rows' own (dict rows, Beam elements);
a row that names none fails alone, and a write where nothing names one is a ``ConfigError``. Into a
collection without multi-tenancy, the call's namespace is a ``ConfigError`` and a row's own fails the
row, before sending. A collection with automatic tenant creation takes a new tenant without ``create``. ``create=true`` makes a missing collection (no vectorizer,
one HNSW index with ``metric``, multi-tenancy with automatic tenant creation when a namespace is
given), creates a tenant a collection lacks, and declares the properties a batch brings that the
collection lacks, typed from the values (Arrow's types): Weaviate's auto-schema would turn whole
numbers into ``number``. Weaviate keeps no dimension in its schema; ``check_target`` learns it
from a stored object that holds the vector (the first, else up to 110 more are read), so rows of
another length fail before sending (in an empty index, the first vector sets the length, and
Weaviate may refuse the right rows of the same batch instead).

Named vectors: an existing collection must have each name in its ``vectorConfig``, with
``multivector`` enabled exactly for the multi-vector names (else a ``ConfigError`` naming the name and
its option), and the write must name every one of its vectors: an upsert replaces an object whole, so
a vector left out would be erased from every object written (a ``ConfigError`` naming them). Each
name's dimension is learnt from a stored object that holds it, as above. ``create=true`` makes a
missing collection at once (its schema needs no dimension, so a delete before any upsert finds it),
with one HNSW index per name (no vectorizer, ``metric``; multi-vectors with ``multivector`` on,
compared by MaxSim). A multi-vector's length is sent as a uint16, and Weaviate stores a dense vector's
length as one: rows whose vectors are longer than 65,535 floats fail before sending, naming the vector
and its column, and ``create=true`` with a longer dimension (stated or learnt from the rows) is a
``ConfigError``, as is an option ``dimension`` or ``vector_dimensions`` over 65,535.

Deletes: ``DELETE /v1/batch/objects`` (REST, in the rows' tenant) matching ``id ContainsAny`` the
rows' UUIDs (the same UUIDv5 rule as upserts), at most 10,000 a request (the server's default
``QUERY_MAXIMUM_RESULTS``); a server set lower deletes fewer a request than it matches, and the same
request goes again until one deletes all it matches (rows it may have left are never counted deleted).
Objects the reply lists as failed fail with its reason, an id that is not there is no error, and
neither is a tenant that does not exist (nothing in it to delete, or to clear).

Credentials: ``api_key`` as ``authorization: Bearer`` on REST and gRPC. ``consistency_level``
(``one``, ``quorum``, ``all``) goes with every batch and delete.

Modules: ``backend`` (the backend, its options, the REST+gRPC transport), ``schema`` (the
collection's definition), ``wire`` (the gRPC messages).
"""

from __future__ import annotations

from .backend import WeaviateBackend, WeaviateOptions, WeaviateTransport
from .schema import Collection, class_name, property_name
from .wire import encode_batch, encode_properties, kind_of, read_errors, rfc3339

__all__ = [
    "Collection",
    "WeaviateBackend",
    "WeaviateOptions",
    "WeaviateTransport",
    "class_name",
    "encode_batch",
    "encode_properties",
    "kind_of",
    "property_name",
    "read_errors",
    "rfc3339",
]
