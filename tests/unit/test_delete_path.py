"""The delete path's shortcuts give what the general code gives: a repeated string field (Pinecone's ``DeleteRequest.ids``) in one join,
Weaviate's UUIDs told in one ``translate``, Milvus's key list as one JSON array, ids as text without a
``str()`` an id, and ``Client.delete`` of more ids than one chunk holds (repeats across chunks deleted in
input order, every id once in the report)."""

from __future__ import annotations

import re
import uuid

import hypothesis.strategies as st
import orjson
from hypothesis import given

from vectordb.connector import protowire as pw
from vectordb.connector.backends.milvus.schema import Layout
from vectordb.connector.backends.milvus.wire import expr_literal, keys_expr
from vectordb.connector.backends.weaviate.backend import uuids_of
from vectordb.connector.client import DELETE_CHUNK_REQUESTS, connect
from vectordb.connector.engine import Engine
from vectordb.connector.ids import as_uuid
from vectordb.connector.rows.types import id_sizes, text_ids
from vectordb.connector.transports.base import WireReply, WireRequest
from vectordb.connector.transports.mock import MockTransport

ID_TEXT = st.text(min_size=1, max_size=140)
UUID_TEXT = st.uuids().map(str)


@given(
    st.lists(ID_TEXT, max_size=20)
    | st.integers(0, 130).flatmap(lambda n: st.lists(st.text("ab0é", min_size=n, max_size=n), max_size=20)),
    st.sampled_from([1, 3, 15, 16, 200]),
)
def test_a_repeated_string_field_is_each_string_field_joined(ids: list[str], field: int) -> None:
    ids = [i for i in ids if i]  # the client never sends an empty id
    assert pw.string_fields(field, ids) == b"".join(pw.string_field(field, i) for i in ids)


@given(st.lists(UUID_TEXT | UUID_TEXT.map(str.upper) | ID_TEXT | st.uuids(), max_size=12))
def test_weaviate_uuids_are_as_uuid_of_each(ids: list[object]) -> None:
    assert uuids_of(ids) == [as_uuid(i) for i in ids]


def test_weaviate_canonical_uuids_come_back_as_they_are() -> None:
    ids = [str(uuid.uuid4()) for _ in range(5)]
    assert uuids_of(ids) is ids


@given(st.lists(ID_TEXT, min_size=1, max_size=12))
def test_milvus_text_keys_are_each_literal_read_back(keys: list[str]) -> None:
    layout = Layout(collection="c", dim=None, key="pk", key_int64=False)
    spelled = keys_expr(layout, keys)
    assert spelled.startswith("pk in [")
    # read as Milvus's grammar lexes a literal: \\ \" \n \t \r escaped, every other character raw
    literal = r'"((?:[^"\\\n\r]|\\[\\"ntr])*)"'
    found = re.findall(literal, spelled[len("pk in ") :])
    unescape = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
    assert [re.sub(r"\\(.)", lambda m: unescape[m[1]], f) for f in found] == keys
    assert spelled == f"pk in [{','.join(map(expr_literal, keys))}]"


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, max_size=12))
def test_milvus_integer_keys_are_one_json_array(keys: list[int]) -> None:
    layout = Layout(collection="c", dim=None, key="pk", key_int64=True)
    assert keys_expr(layout, keys) == f"pk in [{','.join(map(str, keys))}]"


def test_ids_as_text_and_their_sizes() -> None:
    ids = ["a", "bé", "ccc"]
    assert text_ids(ids) is ids
    assert text_ids([1, "x"]) == ["1", "x"]
    assert id_sizes(ids).tolist() == [1, 2, 3]
    assert id_sizes(ids, utf8=True).tolist() == [1, 3, 3]
    assert id_sizes([12, "ab"]).tolist() == [2, 2]


def test_a_delete_of_several_chunks_keeps_a_repeated_id_in_order() -> None:
    sent: list[list[str]] = []

    def handler(request: WireRequest) -> WireReply:
        sent.append(orjson.loads(request.body)["ids"])
        return WireReply(status=200, body=b"{}")

    client = connect("pinecone://index.example", api_key="k", batch_size=100, verify=False)
    client._engine = Engine(client.backend, MockTransport(handler), client.options, sleep=lambda s: None)
    step = 100 * DELETE_CHUNK_REQUESTS
    ids = [f"id-{i}" for i in range(2 * step + 50)] + ["id-7"]  # id-7 again, in the last chunk
    report = client.delete(ids)
    assert report.deleted == len(ids) and not report.failures
    assert sorted(i for request in sent for i in request) == sorted(ids)
    assert all(len(request) <= 100 for request in sent)
    holding = [k for k, request in enumerate(sent) if "id-7" in request]
    assert len(holding) == 2 and sent[holding[1]][-1] == "id-7"  # the repeat went last, in its own place
    client.close()
