"""The bad-input catalogue's per-row cases (tests/badinput/cases.py) as dict elements of one Beam
pipeline: ``.failed`` holds exactly the rows the catalogue says fail, each with its reason, and every
other row reaches the index."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.badinput.cases import CASES, V
from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

# Beam's own coders cannot carry these elements to the sink at all (before any of ours runs)
BEAM_CANNOT_CARRY = {
    "metadata text that is not UTF-8 (a lone surrogate)",
    "an id that is not UTF-8 (a lone surrogate)",
    "a namespace that is not UTF-8 (a lone surrogate)",
}
ROWS = [
    c
    for c in CASES
    if c.row is not None and c.row.get("id", "bad") not in (None, "") and c.name not in BEAM_CANNOT_CARRY
]


def element(i: int, row: dict[str, Any]) -> dict[str, Any]:
    given = row.get("id", "bad")
    keep = not isinstance(given, str) or len(given) > 100  # a float, an integer, an over-long id: as given
    return {**row, "id": given if keep else f"case-{i}"}


def test_the_catalogues_rows_in_one_pipeline(grpc_server: ServerHandle) -> None:
    grpc_server.script(dimension=4)
    elements = [element(i, c.row) for i, c in enumerate(ROWS) if c.row is not None]
    elements += [{"id": f"good-{i}", "values": V} for i in range(100)]
    # a letter's id is the element's own (1.5 and True as given); the report names them as text
    fails = {elements[i]["id"]: c.says for i, c in enumerate(ROWS) if c.outcome == "fails alone"}
    with beam.Pipeline(runner=FnApiRunner()) as pipeline:
        result = (
            pipeline
            | beam.Create(elements)
            | WriteToVectorDB(grpc_server.uri, api_key="k", on_error="report")
        )
        failed = result.failed | beam.Map(
            lambda d: (d["id"], next((s for s in fails.values() if s in d["error"]), d["error"]))
        )
        assert_that(failed, equal_to(list(fails.items())))
    written = {f"good-{i}" for i in range(100)} | {
        str(elements[i]["id"]) for i, c in enumerate(ROWS) if c.outcome == "written"
    }
    assert grpc_server.arrived().ids() == written
