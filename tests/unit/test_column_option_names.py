"""Column options name columns: an empty name, or an id_from column given twice, is a ConfigError naming
the option, before any row is read (an empty vector_column made every row fail as "null vector")."""

from __future__ import annotations

import pytest

from vectordb.connector import ConfigError
from vectordb.connector.client import resolve_options

URI = "pinecone+grpc://127.0.0.1:5081"


@pytest.mark.parametrize(
    "option", ["id_column", "vector_column", "sparse_column", "namespace_column", "op_column", "text_column"]
)
def test_an_empty_column_name_is_a_config_error_naming_the_option(option: str) -> None:
    with pytest.raises(ConfigError, match=f"option {option}: a column name cannot be empty"):
        resolve_options({"uri": URI, option: ""})


@pytest.mark.parametrize("option", ["id_from", "metadata_columns"])
def test_an_empty_name_in_a_column_list_is_a_config_error(option: str) -> None:
    with pytest.raises(ConfigError, match=f"option {option}: a column name cannot be empty"):
        resolve_options({"uri": URI, option: ["a", ""]})


def test_an_id_from_column_given_twice_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="option id_from: column 'a' is given twice"):
        resolve_options({"uri": URI, "id_from": "a,a"})


def test_sound_column_options_are_kept() -> None:
    opts = resolve_options({"uri": URI, "id_from": "a,b", "vector_column": "emb", "metadata_columns": "x,y"})
    assert (opts.id_from, opts.vector_column, opts.metadata_columns) == (["a", "b"], "emb", ["x", "y"])
