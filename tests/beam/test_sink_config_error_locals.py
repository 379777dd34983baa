"""A bad option given to ``WriteToVectorDB`` raised from a frame whose locals held the key (its
``**options``), and ``repr`` of the half-built transform raised ``AttributeError``, which made
``TracebackException(capture_locals=True)`` (Sentry, rich, ``pytest --showlocals``) fail on any error of
the constructor."""

from __future__ import annotations

import traceback

import pytest

from vectordb.beam import WriteToVectorDB
from vectordb.connector.errors import ConfigError


@pytest.mark.parametrize(
    ("uri", "options", "secret"),
    [
        ("pinecone://127.0.0.1:1", {"api_key": "sk-BEAMLOCALS-hunter41", "batch_size": 0}, "hunter41"),
        ("postgresql://u:hunter42@127.0.0.1:1/db?table=t", {"batch_size": 0}, "hunter42"),
    ],
)
def test_a_bad_option_leaves_no_key_in_the_tracebacks_locals(uri: str, options: dict, secret: str) -> None:
    with pytest.raises(ConfigError) as caught:
        WriteToVectorDB(uri, **options)
    error = caught.value
    assert error.__traceback__ is not None
    below_the_call = error.__traceback__.tb_next  # this test's own frame holds what it passed
    shown = "".join(
        traceback.TracebackException(type(error), error, below_the_call, capture_locals=True).format()
    )
    assert "batch_size" in shown  # the error is there, with the frames' locals
    assert "self = WriteToVectorDB(…)" in shown
    assert secret not in shown
