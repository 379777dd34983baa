"""README: a fixed letter written again writes the same row. A Beam ``failed`` element fed back as it is
stored its reason (``error``, ``error_type``, ``retryable``, ``attempts``) as metadata and the row's own
``error`` field as ``row_error``; ``beam.Map(rows_from_letters)`` gives the elements back, and written
again, fixed, they store what a direct write of the fixed elements stores. Both kinds of letter: one the
reader refused (a NaN) and one the client refused (two dimensions, three expected)."""

from __future__ import annotations

from typing import Any

import apache_beam as beam

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB
from vectordb.connector import rows_from_letters

LETTERS: list[dict[str, Any]] = []  # filled by the in-process DirectRunner
REASON = {"error", "error_type", "retryable", "attempts"}


def _keep(letter: dict[str, Any]) -> None:
    LETTERS.append(letter)  # a module function: pickled by reference, so this process's list fills


def elements(b: list[float], c: list[float]) -> list[beam.Row]:
    return [
        beam.Row(id="a", values=[1.0, 2.0, 3.0], title="x", error="e1"),
        beam.Row(id="b", values=b, title="y", error="e2"),
        beam.Row(id="c", values=c, title="z", error="e3"),
    ]


def write(server: ServerHandle, namespace: str, items: list[Any], *, as_letters: bool = False) -> None:
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        pcoll = pipeline | beam.Create(items, reshuffle=False)
        if as_letters:
            pcoll = pcoll | beam.Map(rows_from_letters)
        result = pcoll | WriteToVectorDB(server.uri, namespace=namespace, dimension=3, on_error="report")
        _ = result.failed | beam.Map(_keep)


def test_failed_elements_fixed_and_fed_back_store_what_the_fixed_elements_store(
    rest_server: ServerHandle,
) -> None:
    fixed = {"b": [4.0, 5.0, 6.0], "c": [7.0, 8.0, 9.0]}
    LETTERS.clear()
    write(rest_server, "letters", elements([1.0, float("nan"), 3.0], [1.0, 2.0]))
    letters = sorted(LETTERS, key=lambda letter: letter["id"])
    assert [(letter["id"], letter["error_type"]) for letter in letters] == [
        ("b", "Invalid"),
        ("c", "Invalid"),
    ]
    for letter in letters:
        letter["values"] = fixed[letter["id"]]
    direct = elements(fixed["b"], fixed["c"])
    assert [rows_from_letters(letter) for letter in letters] == [row._asdict() for row in direct[1:]]

    LETTERS.clear()
    write(rest_server, "letters", letters, as_letters=True)
    write(rest_server, "direct", direct)
    write(rest_server, "as_is", letters)
    assert LETTERS == []
    stored = rest_server.arrived().namespaces
    assert stored["letters"] == stored["direct"]
    assert stored["direct"]["b"].metadata == {"title": "y", "error": "e2"}
    # the letter as it is stores its reason, and the row's own 'error' under another name
    assert set(stored["as_is"]["b"].metadata or {}) == REASON | {"title", "row_error"}
