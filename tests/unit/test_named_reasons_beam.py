"""Beam: an element its reader refuses under several vector names has every name's reason in its dead
letter, joined by "; " in the columns' order (the sink refuses such an element as it reads it)."""

from __future__ import annotations

import pytest

pytest.importorskip("apache_beam")

from vectordb.beam.elements import ElementReader, Refusal
from vectordb.connector.client import resolve_options


def test_an_elements_letter_names_every_unreadable_vector() -> None:
    options = resolve_options(
        {
            "uri": "qdrant://127.0.0.1:1/c",
            "vector_columns": "title:t,body:b",
            "multi_vector_columns": "colbert:c",
        }
    )
    read = ElementReader.from_options(options).read(
        {"id": "x", "t": ["a", "b"], "b": [1.0, 2.0], "c": "[[1.0, 2.0"}
    )
    assert type(read) is Refusal
    assert read.dead_letter["error"] == (
        "vector 'title' (column 't') is not a sequence of numbers; multi-vector 'colbert' (column 'c') "
        "text is not a JSON list of lists of numbers: '[[1.0, 2.0'"
    )
    assert type(read.dead_letter["error"]) is str
