"""``WriteToVectorDB``'s own parameters are read as the connector's options are: strings or values, one
``ConfigError`` naming the parameter; ``check_target="false"`` asks nothing of the database."""

from __future__ import annotations

import pytest

from vectordb.beam import WriteToVectorDB
from vectordb.connector.errors import ConfigError

NOWHERE = "pinecone+grpc://127.0.0.1:1"  # nothing listens: a check of the target would fail


@pytest.mark.parametrize("value", ["false", " False ", "no", "0", False])
def test_check_target_false_in_any_spelling_asks_nothing(value: object) -> None:
    WriteToVectorDB(NOWHERE, check_target=value, max_retries=0, timeout_s=1)


def test_parameters_given_as_strings_are_read_as_values() -> None:
    sink = WriteToVectorDB(
        NOWHERE, verify=False, rows_per_batch="100", max_buffering_s=" 2.5", batching="Bounded"
    )
    assert (sink.rows_per_batch, sink.max_buffering_s, sink.batching) == (100, 2.5, "bounded")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"rows_per_batch": "many"}, "option rows_per_batch"),
        ({"rows_per_batch": 0}, "option rows_per_batch"),
        ({"max_buffering_s": float("nan")}, "option max_buffering_s"),
        ({"max_buffering_s": float("inf")}, "option max_buffering_s"),
        ({"max_buffering_s": "0"}, "option max_buffering_s"),
        ({"batching": "sometimes"}, "option batching"),
        ({"check_target": "maybe"}, "option check_target"),
    ],
)
def test_a_bad_parameter_is_a_config_error_naming_it(given: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        WriteToVectorDB(NOWHERE, verify=False, **given)  # type: ignore[arg-type]


@pytest.mark.parametrize("content_key", [5, "", b"content", ["content"]])
def test_a_content_key_that_is_no_metadata_key_is_a_config_error(content_key: object) -> None:
    with pytest.raises(ConfigError, match=r"option content_key: .* is not a metadata key"):
        WriteToVectorDB(NOWHERE, verify=False, content_key=content_key)  # type: ignore[arg-type]


def test_content_key_none_or_text_is_taken() -> None:
    assert WriteToVectorDB(NOWHERE, verify=False, content_key=None).reader.content_key is None
    assert WriteToVectorDB(NOWHERE, verify=False, content_key="text").reader.content_key == "text"
