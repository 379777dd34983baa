"""An element without an id, under ``on_error=fail``: the error names it as having none, "(no id)", as the
plain client's does; it said "first ids: None", which reads as an id spelt None."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest

from vectordb.beam import WriteToVectorDB


def test_an_element_without_an_id_is_named_as_having_none(tmp_path: Path) -> None:
    sink = WriteToVectorDB(f"milvus+lite://{tmp_path}/x.db", collection="c", create=True, dimension=2)
    with (
        pytest.raises(Exception, match=r"1 of 1 rows failed \(first ids: \(no id\)\)") as info,
        beam.Pipeline() as pipeline,
    ):
        _ = pipeline | beam.Create([{"values": [0.1, 0.2]}]) | sink
    assert "None" not in str(info.value).split("first ids:")[1].split(")")[0]
