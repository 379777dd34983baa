"""Milvus over gRPC: ``milvus://host:19530/[db/]collection``, and Milvus Lite (``milvus+lite://PATH``, a file path).

Data plane: ``/milvus.proto.milvus.MilvusService/Upsert`` with an ``UpsertRequest`` encoded by
hand (field numbers from milvus.proto and schema.proto of milvus-io/milvus-proto): the key as VarChar ``string_data`` or Int64 ``long_data``, the
dense vectors as one packed FloatVector copied straight from the matrix buffer, sparse vectors as
SparseFloatVector rows of little-endian (uint32 index, float32 value) pairs, metadata keys that
name declared scalar fields into those fields and the rest into the dynamic ``$meta`` JSON field.
Rows the collection cannot hold (a non-integer id for an INT64 key, a required field missing, a
key with no field and no dynamic field, a key named ``$meta``, a JSON value over Milvus's 65,536 bytes:
``$meta`` or a JSON field, each counted alone) fail alone before sending. Milvus applies or rejects an
upsert whole: a rejection is raised as ``Rejected`` with the server's reason, and the engine
bisects it down to the rows at fault.

Control plane (``check_target``): HasCollection and DescribeCollection learn the key, vector and
scalar field names and check the dimension, so collections made elsewhere with other field
names work. ``create=true`` makes a missing collection the way pymilvus's quick setup does (key
``id``, FloatVector ``vector``, dynamic field on, AUTOINDEX with the option's metric, loaded);
option ``index_type`` is one Milvus has for a float vector (trimmed, any case), else a ``ConfigError``.
The key type follows the data (the first batch's ids all integers → INT64, else VarChar(512)) unless option ``id_type``
fixes it, so a missing collection is created with the first batch, when ids and dimension are known. Those field
names are the quick setup's whatever options id_column and vector_column say: metadata named ``id``, ``vector``
(or ``sparse``, when it makes one) is a ``ConfigError`` before anything is made (option metadata_columns, or the
first batch's metadata when it is made with that batch). The collection's name must follow Milvus's documented
rule (a letter or ``_``, then letters, digits or ``_``; at most 255), else a ``ConfigError`` naming option
collection (or uri) before any call: Milvus Lite took names a Milvus refuses. Option ``sparse_column`` into a
collection with no sparse field is a ``ConfigError`` listing its vector fields.

Named vectors (option ``vector_columns``): each name is a FloatVector field of that name, each encoded
from its name's float32 matrix as the single vector is. ``check_named_target`` checks each name's field
(a missing name, another type, another dim than option ``vector_dimensions`` states, or a required
FloatVector field no name fills: ``ConfigError`` naming it); each field's dim is the write's, so rows of
another length fail alone, as with the single vector; ``create=true`` makes the quick-setup collection with a FloatVector
field per name instead of ``vector``, each with its own index (``index_type``, ``metric``). Option
``vector_field`` names the single vector's field and is refused beside them. Multi-vectors are refused
(``ConfigError`` before any row): Milvus 2.6 keeps them as ArrayOfVector fields of a struct array, which
Milvus Lite 3.2, the embedded server, does not store (it drops struct array fields from a schema).

Namespaces: if the collection has a partition-key field, the namespace is written into it (a row whose
own value differs fails alone; option ``namespace`` longer than a VarChar key's max_length is a
``ConfigError``, a longer per-call or per-row namespace fails its rows, saying it is the namespace);
otherwise it names a partition, if it follows the rule every Milvus takes (letters, digits and ``_``, at
most 255: Milvus Lite checks none and makes a directory of it; option ``namespace`` otherwise is a
``ConfigError``, a ``namespace_column`` value fails its rows alone, as does a CreatePartition refusal), created the first time it is seen (Milvus allows 1024 partitions
per collection by default: for many tenants give the collection a partition key). Creating the
collection and new partitions are the only calls outside ``check_target``; they run on the
encoding thread, once, before the first request that needs them.

Deletes: a Delete by ``key in [...]`` (an INT64 key's text id that is no integer fails alone), with
``partition_name`` for a namespace that names a partition (a partition that does not exist holds
nothing to delete), or ``and field == "namespace"`` in a partition-key field. Milvus keeps one row
per key across partitions (an upsert in another partition moves it); Milvus Lite deletes matching
keys in every partition, so there the keys the partition holds are queried first and only those
deleted. A key that is not there is no error.

Clearing (``clear_target``, behind ``Client.clear`` and Spark's overwrite) keeps the collection, its
indexes and partitions. The whole collection: TruncateCollection (Milvus ≥ 2.6.16), or on a server
without it a Delete whose expression every key satisfies. A namespace in a partition-key field: a
Delete by ``field == "namespace"``. A namespace that names a partition (``""``, the default namespace:
the ``_default`` partition, where rows without one are written): the partition's keys are
queried a page at a time and deleted by key with ``partition_name`` set, because Milvus Lite
ignores ``partition_name`` in a Delete by expression (it deletes matching rows of every partition):
a server keeps each delete in the partition, and on Lite the keys themselves come from it. Deletes
and queries are Strong (the proto default), so rows written just before are seen and removed.

Milvus Lite: the URI's path is the data directory; ``lite.ensure_server`` starts (or finds) the
one server for it, and released collections are loaded so what was written can be queried (also when a
delete's query finds one released: a Lite restarted mid-write comes back so).
Credentials: option ``api_key`` is the token (``user:password`` or an API key), sent base64 in
``authorization`` metadata; option ``db_name`` (or ``milvus://host/db/collection``) in ``dbname``, a
``ConfigError`` when no such database exists.

Modules: ``backend`` (the backend and its options), ``schema`` (DescribeCollection → ``Layout``, the
quick-setup schema), ``wire`` (the upsert and clearing messages), ``status`` (status codes → errors),
``lite`` (the embedded Milvus Lite server).
"""

from __future__ import annotations

from .backend import MilvusBackend, MilvusOptions
from .schema import Layout, ScalarField, layout_from_schema
from .status import error_for, status_of
from .wire import all_rows_expr, encode_delete, encode_query_keys, encode_upsert, keys_of

__all__ = [
    "Layout",
    "MilvusBackend",
    "MilvusOptions",
    "ScalarField",
    "all_rows_expr",
    "encode_delete",
    "encode_query_keys",
    "encode_upsert",
    "error_for",
    "keys_of",
    "layout_from_schema",
    "status_of",
]
