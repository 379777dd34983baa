"""Float32 rows as JSON arrays, by the native writer and by orjson alike: for any finite float32 bit pattern
(subnormals, -0.0, the largest and the smallest) the text parses back to the same bits, through a double
too, both writers give the same bytes (orjson's own, but for the one float32 whose shortest text a double
parser misreads), and NaN or an infinity is refused by both with the same message. The official clients'
own models reading these bodies: ``tests/e2e/test_json_vectors.py``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import orjson
import pytest
from hypothesis import given, settings

from tests.float32_cases import ENCODERS, SPECIAL_BITS, encoder, matrices
from vectordb.connector import jsonvec, speedups
from vectordb.connector.embedding import wire


def body(matrix: np.ndarray) -> bytes:
    return orjson.dumps(jsonvec.json_rows(matrix), option=orjson.OPT_SERIALIZE_NUMPY)


def parsed_bits(text: bytes, parse: str, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 bits of the rows in ``text``, parsed as a double first, as JSON parsers do."""
    rows = orjson.loads(text) if parse == "orjson" else json.loads(text)
    return np.array(rows, dtype=np.float64).astype(np.float32).reshape(shape).view(np.uint32)


def test_the_native_speedups_are_built_wherever_rust_is() -> None:
    if shutil.which("cargo") is None:
        pytest.skip(
            "no Rust toolchain (cargo) here: the native speedups are optional; with Rust installed, "
            "`python3 -m uv pip install ./connector/native` builds them"
        )
    assert speedups.installed(), (
        f"cargo is here but {speedups.MODULE} is not importable: was ./connector/native installed?"
    )
    assert wire.native_decoder(), "the native speedups are installed but the embeddings decoder is not in use"
    assert jsonvec.native_encoder(), (
        "the native speedups are installed but the JSON vector writer is not in use"
    )


@pytest.mark.parametrize("parse", ["orjson", "json"])
@pytest.mark.parametrize("name", ENCODERS)
@settings(max_examples=200, deadline=None)
@given(matrix=matrices())
def test_any_finite_float32_parses_back_to_its_own_bits(name: str, parse: str, matrix: np.ndarray) -> None:
    with encoder(name):
        text = body(matrix)
    assert np.array_equal(parsed_bits(text, parse, matrix.shape), matrix.view(np.uint32))


@settings(max_examples=300, deadline=None)
@given(matrix=matrices())
def test_both_writers_give_the_same_bytes(matrix: np.ndarray) -> None:
    with encoder("native"):
        native_rows = jsonvec.json_rows(matrix)
        native = body(matrix)
    with encoder("python"):
        python = body(matrix)
    with encoder("python"):
        python_rows = jsonvec.json_rows(matrix)
    assert native == python
    # row by row too, as Pinecone's body takes them
    native_texts, python_texts = (
        [orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) for row in rows]
        for rows in (native_rows, python_rows)
    )
    assert native_texts == python_texts


@pytest.mark.parametrize("name", ENCODERS)
@settings(max_examples=100, deadline=None)
@given(matrix=matrices())
def test_the_text_is_orjsons_but_for_the_double_rounded_float(name: str, matrix: np.ndarray) -> None:
    orjsons = orjson.dumps(matrix, option=orjson.OPT_SERIALIZE_NUMPY)
    with encoder(name):
        assert body(matrix) == orjsons.replace(b"7.038531e-26", b"7.0385307e-26")


@pytest.mark.parametrize("name", ENCODERS)
def test_texts_are_the_shortest_float32_ones(name: str) -> None:
    bits = np.array([SPECIAL_BITS], dtype=np.uint32)
    with encoder(name):
        text = body(bits.view(np.float32))
    assert text == (
        b"[[0.0,-0.0,1e-45,-1e-45,1.1754942e-38,1.1754944e-38,3.4028235e+38,-3.4028235e+38,"
        b"1.0,16777216.0,1e+16,0.00001,7.0385307e-26,-7.0385307e-26]]"
    )
    with encoder(name):
        assert body(np.array([[0.1, 1 / 3]], np.float32)) == b"[[0.1,0.33333334]]"  # not the doubles


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize(
    ("bad", "shown"), [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")], ids=["nan", "inf", "-inf"]
)
def test_nan_and_infinities_are_refused_where_they_are(name: str, bad: float, shown: str) -> None:
    matrix = np.zeros((3, 4), np.float32)
    matrix[2, 1] = bad
    matrix[2, 3] = np.nan  # only the first is named
    with (
        encoder(name),
        pytest.raises(ValueError, match=f"^row 2 column 1 is {shown}: JSON has no such number$"),
    ):
        jsonvec.json_rows(matrix)


@pytest.mark.parametrize("name", ENCODERS)
@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (3, 0), (1, 1)])
def test_empty_matrices_and_rows(name: str, shape: tuple[int, int]) -> None:
    matrix = np.ones(shape, np.float32)
    with encoder(name):
        assert body(matrix) == orjson.dumps(matrix, option=orjson.OPT_SERIALIZE_NUMPY)


@pytest.mark.parametrize("name", ENCODERS)
def test_views_and_other_dtypes_are_written_as_their_float32_values(name: str) -> None:
    base = np.arange(24, dtype=np.float64).reshape(4, 6) / 7
    with encoder(name):
        assert body(base[::2, 1:4]) == body(np.ascontiguousarray(base[::2, 1:4], dtype=np.float32))
        with pytest.raises(ValueError, match="expected an"):
            jsonvec.json_rows(np.zeros(3, np.float32))


def test_the_native_writer_takes_only_c_contiguous_float32_matrices() -> None:
    native = speedups.native("encode_float32_rows")
    if native is None:
        pytest.skip("the native speedups are not installed (pip install ./connector/native)")
    matrix = np.ones((4, 6), np.float32)
    assert native(matrix) == [b"[1.0,1.0,1.0,1.0,1.0,1.0]"] * 4
    with pytest.raises(ValueError, match="C-contiguous"):
        native(matrix[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        native(np.ones(3, np.float32))
    with pytest.raises((BufferError, TypeError, ValueError)):
        native(np.ones((2, 2), np.float64))
