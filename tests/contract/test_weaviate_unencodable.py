"""A Weaviate row whose metadata has no ``google.protobuf.Value`` form fails alone, against a real server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
import pytest

from vectordb.connector import connect

if TYPE_CHECKING:
    from tests.integration.weaviate_server import WeaviateServer

pytestmark = pytest.mark.timeout(120)

DIM = 4


def test_a_metadata_value_with_no_property_form_fails_its_row_and_the_others_are_written(
    weaviate_server: WeaviateServer, weaviate_collection: str
) -> None:
    # orjson writes a Fragment as it is, so the rows' checks let it through; Weaviate's gRPC encoder
    # has no form for it: the TypeError stopped the whole write ('FAILED: 0/4 written')
    rows = [{"id": f"r{i}", "values": [0.5] * DIM, "n": i} for i in range(4)]
    rows[1]["raw"] = orjson.Fragment(b'{"a": 1}')
    rows[2]["deep"] = {"inner": [1, orjson.Fragment(b"2")]}
    with connect(
        weaviate_server.uri(weaviate_collection), **weaviate_server.options(), create=True, on_error="report"
    ) as client:
        report = client.write(rows)
    assert report.written == 2
    failures = {f.ids[0]: f for f in report.failures}
    assert set(failures) == {"r1", "r2"}
    assert "property 'raw'" in failures["r1"].error and "Fragment" in failures["r1"].error
    assert "property 'deep'" in failures["r2"].error and "Fragment" in failures["r2"].error
    assert all(f.error_type == "Invalid" and f.attempts == 0 for f in failures.values())
