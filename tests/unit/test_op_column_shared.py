"""Option ``op_column`` names a column of its own: not the id's, the namespace's or the text's.

A column read both as the op and as a namespace (or an id) deleted the rows of namespace (or id)
``delete``; the options are refused where they are parsed, naming both.
"""

from __future__ import annotations

import pytest

from vectordb.connector import ConfigError
from vectordb.connector.options import BackendOptions, parse_options

URI = "pinecone://127.0.0.1:1"


@pytest.mark.parametrize(
    ("raw", "other"),
    [
        ({"op_column": "op", "namespace_column": "op"}, "namespace_column"),
        ({"op_column": "id"}, "id_column"),
        ({"op_column": "key", "id_column": "key"}, "id_column"),
        ({"op_column": "tenant", "id_from": "tenant,doc"}, "id_from"),
        (
            {"op_column": "op", "text_column": "op", "embed_url": "http://127.0.0.1:1", "embed_model": "m"},
            "text_column",
        ),
    ],
)
def test_op_column_naming_another_options_column_is_refused_naming_both(raw: dict, other: str) -> None:
    with pytest.raises(ConfigError, match=rf"options op_column and {other} both name column "):
        parse_options({"uri": URI, **raw}, BackendOptions)


def test_op_column_of_its_own_is_taken() -> None:
    options = parse_options({"uri": URI, "op_column": "op", "namespace_column": "tenant"}, BackendOptions)
    assert (options.op_column, options.namespace_column) == ("op", "tenant")
    # with id_from, id_column's default names no column that is read
    assert parse_options({"uri": URI, "op_column": "id", "id_from": "a,b"}, BackendOptions).op_column == "id"
