"""An element the sink's reader refuses (not a row: a string), under ``on_error=fail``: the error names it as
having no id, "(no id)", as the client's errors do; it said "first ids: None", which reads as an id spelt None.
(A dict without an id goes to the client, whose error already said "(no id)".)"""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest

from vectordb.beam import WriteToVectorDB


def test_an_element_that_is_no_row_is_named_as_having_no_id(tmp_path: Path) -> None:
    sink = WriteToVectorDB(f"milvus+lite://{tmp_path}/x.db", collection="c", create=True, dimension=2)
    with (
        pytest.raises(Exception, match=r"1 of 1 rows failed \(first ids: \(no id\)\)") as info,
        beam.Pipeline() as pipeline,
    ):
        _ = pipeline | beam.Create(["not a row"]) | sink
    assert "None" not in str(info.value).split("first ids:")[1].split(")")[0]
