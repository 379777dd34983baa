"""Metadata values are made plain once, in the rows' checks, for every database and transport: a numpy or
pandas value as the Python value the Arrow reader gives for a column of it, so a dict row and an Arrow row
store one value, and no encoder writes a value it does not know as its ``str()``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from vectordb.connector import protowire as pw
from vectordb.connector.rows import (
    ColumnSpec,
    DimensionState,
    InstantText,
    RowRules,
    prepare_arrow,
    prepare_dicts,
)
from vectordb.connector.rows.checks import metadata_json

RULES = RowRules(max_metadata_bytes=40_960)
V = [0.5, 1.0]


def stored(rows: list[dict]) -> list[dict]:
    prepared = prepare_dicts(rows, ColumnSpec(), RULES, DimensionState(None))
    assert not prepared.failures, prepared.failures
    return [md for batch in prepared.batches for md in batch.metadata]


def reasons(rows: list[dict]) -> dict[str | None, str]:
    prepared = prepare_dicts(rows, ColumnSpec(), RULES, DimensionState(None))
    return {i: f.error for f in prepared.failures for i in f.ids}


def same(a: object, b: object) -> bool:
    """Equal, and of one type at every depth."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_numpy_and_pandas_values_become_python_values_at_any_depth() -> None:
    (md,) = stored(
        [
            {
                "id": "a",
                "values": V,
                "flag": np.bool_(True),
                "n": np.int64(3),
                "s": np.str_("x"),
                "f32": np.float32(0.1),
                "f16": np.float16(0.1),
                "tags": np.array(["x", "y"]),
                "big": np.array([2**63 + 1], dtype=np.uint64),
                "nested": {"a": [np.int32(1), {"b": np.float64(0.5)}], "t": (np.bool_(False),)},
                "at": pd.Timestamp("2024-05-06 07:08:09"),
                "at64": np.datetime64("2024-05-06T07:08:09"),
                "day": np.datetime64("2024-05-06"),
                "paris": pd.Timestamp("2024-01-02T03:04:05", tz="Europe/Paris"),
                "nanos": pd.Timestamp("2024-05-06 07:08:09.123456789"),
                "nanos64": np.datetime64("2024-05-06T07:08:09.123456789"),
                "took": np.timedelta64(5, "s"),
                "took_pd": pd.Timedelta(1500, "ms"),
                "price": decimal.Decimal("10.25"),
            }
        ]
    )
    assert same(
        md,
        {
            "flag": True,
            "n": 3,
            "s": "x",
            "f32": 0.10000000149011612,  # the float32's own value, as a float32 Arrow column gives it
            "f16": 0.0999755859375,
            "tags": ["x", "y"],
            "big": [2**63 + 1],
            "nested": {"a": [1, {"b": 0.5}], "t": [False]},
            "at": dt.datetime(2024, 5, 6, 7, 8, 9),
            "at64": dt.datetime(2024, 5, 6, 7, 8, 9),
            "day": dt.date(2024, 5, 6),
            "paris": pd.Timestamp("2024-01-02T03:04:05", tz="Europe/Paris").to_pydatetime(),
            "nanos": InstantText("2024-05-06T07:08:09.123456789"),  # finer than a datetime: its ISO 8601 text
            "nanos64": InstantText("2024-05-06T07:08:09.123456789"),
            "took": "PT5S",  # ISO 8601, the same text in every database
            "took_pd": "PT1.5S",
            "price": decimal.Decimal("10.25"),  # kept: each database writes it as its text or refuses it
        },
    )
    assert type(md["paris"]) is dt.datetime and md["paris"].isoformat() == "2024-01-02T02:04:05+00:00"  # UTC


def test_a_dict_row_and_an_arrow_row_from_one_dataframe_give_the_same_metadata() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "values": [V, V],
            "score": np.array([0.1, 0.7], dtype=np.float32),
            "flag": [True, False],
            "count": np.array([1, 2], dtype=np.int64),
            "tags": [["x", "y"], ["z"]],
            "at": [pd.Timestamp("2024-05-06 07:08:09"), pd.Timestamp("2024-05-07")],
            "took": [pd.Timedelta(5, "s"), pd.Timedelta(1, "D")],
            "when": pd.Series([pd.Timestamp("2024-05-06 07:08:09.5")] * 2).astype("datetime64[us]"),
            "zoned": pd.to_datetime(["2024-05-06 07:08:09.00", "2024-05-06 07:08:09.25"]).tz_localize(
                "Asia/Kolkata"
            ),
        }
    )
    table = pa.Table.from_pandas(frame, preserve_index=False)
    from_arrow = [
        md
        for batch in table.to_batches()
        for b in prepare_arrow(batch, ColumnSpec(), RULES, DimensionState(None)).batches
        for md in b.metadata
    ]
    records = frame.to_dict("records")
    records[0]["tags"] = np.array(records[0]["tags"])  # as pd.read_parquet(...).to_dict("records") gives them
    records[1]["tags"] = np.array(records[1]["tags"])
    from_dicts = stored(records)
    assert same(from_dicts, from_arrow)
    assert same(from_dicts[0]["score"], float(np.float32(0.1))) and same(
        from_dicts[0]["at"], dt.datetime(2024, 5, 6, 7, 8, 9)
    )
    # a zoned timestamp in UTC, as the Arrow reader gives it: one text whichever the input
    texts = [[md["zoned"].isoformat() for md in rows] for rows in (from_dicts, from_arrow)]
    assert texts == [["2024-05-06T01:38:09+00:00", "2024-05-06T01:38:09.250000+00:00"]] * 2


class Kind(enum.Enum):
    A = 1
    B = "b"


@dataclasses.dataclass
class Point:
    x: int
    kind: Kind = Kind.B
    _hidden: int = 0


def test_an_enum_or_a_dataclass_is_made_plain_as_orjson_writes_it_at_any_depth() -> None:
    """orjson writes both (an Enum as its value, a dataclass as its fields), so the rows' fast path let
    them through raw: stored as 1 and {'x': 1} over Qdrant REST, as 'Kind.A' and 'Point(x=1)' over gRPC,
    and protowire (Weaviate, Pinecone gRPC) raised out of the write."""
    zone = dt.timezone(dt.timedelta(hours=2))
    rows = [
        {"id": "plain", "values": V, "metadata": {"k": 1}},
        {"id": "enum", "values": V, "metadata": {"k": Kind.A, "tags": ["a", Kind.B]}},
        {"id": "dc", "values": V, "metadata": {"p": Point(1), "o": {"q": [Point(2, Kind.A)]}}},
        {
            "id": "deep",
            "values": V,
            "metadata": {"p": Point(np.int64(3), dt.datetime(2024, 1, 1, 2, tzinfo=zone))},
        },
    ]
    got = stored(rows)
    assert same(
        got,
        [
            {"k": 1},
            {"k": 1, "tags": ["a", "b"]},
            {"p": {"x": 1, "kind": "b"}, "o": {"q": [{"x": 2, "kind": 1}]}},
            {"p": {"x": 3, "kind": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}},
        ],
    )
    for md in got:  # every protowire-based encoder can write what the rows' checks hand on
        pw.encode_struct(md)
    assert isinstance(rows[1]["metadata"]["k"], Kind)  # the caller's rows are left as they were


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ({"at": pd.NaT}, "metadata 'at' is NaT (not a time), which JSON cannot hold (it would be null)"),
        (
            {"o": {"p": [1, np.datetime64("NaT")]}},
            "metadata 'o'['p'][1] is NaT (not a time), which JSON cannot hold (it would be null)",
        ),
        (
            {"span": np.timedelta64(1, "Y")},
            "metadata 'span' is 1 years: months and years have no fixed length",
        ),
        ({"far": np.datetime64("20000-01-01")}, "metadata 'far' is 20000-01-01, outside the years 1 to 9999"),
        (
            {"tick": pd.Timedelta(5, "ns")},
            "metadata 'tick' is 0 days 00:00:00.000000005, finer than the microseconds",
        ),
        ({"tags": {"only"}}, "metadata 'tags' cannot be written as JSON: Type is not JSON serializable: set"),
        ({"z": np.complex64(1j)}, "metadata 'z' cannot be written as JSON"),
        ({"b": np.bytes_(b"x")}, "metadata 'b' is binary"),
        ({"v": np.array([0.5, np.nan], dtype=np.float32)}, "metadata 'v'[1] is NaN or infinity"),
    ],
)
def test_a_value_with_no_stored_form_fails_its_row_naming_the_key(metadata: dict, reason: str) -> None:
    got = reasons(
        [{"id": "bad", "values": V, "metadata": metadata}, {"id": "good", "values": V, "n": np.int8(1)}]
    )
    assert list(got) == ["bad"] and got["bad"].startswith(reason), got


def test_plain_metadata_is_not_copied_and_the_callers_values_are_left_as_they_were() -> None:
    plain = {"genre": "drama", "year": 1999, "tags": ["a"], "at": dt.datetime(2024, 1, 1)}
    tags = [np.str_("a"), np.int64(2)]
    given = {"tags": tags}
    first, second = stored(
        [{"id": "a", "values": V, "metadata": plain}, {"id": "b", "values": V, "metadata": given}]
    )
    assert first is not None and first == plain and all(first[k] is plain[k] for k in plain)
    assert same(second, {"tags": ["a", 2]}) and type(tags[1]) is np.int64 and given == {"tags": tags}


def test_metadata_json_writes_no_value_as_its_str() -> None:
    assert metadata_json({"price": decimal.Decimal("10.25"), "took": dt.timedelta(seconds=5)}) == (
        b'{"price":"10.25","took":"PT5S"}'
    )
    with pytest.raises(TypeError):
        metadata_json({"tags": {"only"}})


def test_protowire_values_numpy_as_python_and_refuses_the_unknown() -> None:
    assert pw.encode_value(np.bool_(True)) == pw.encode_value(True)
    assert pw.encode_value(np.int64(3)) == pw.encode_value(3)
    assert pw.encode_value(np.array(["x", "y"])) == pw.encode_value(["x", "y"])
    assert pw.encode_value(decimal.Decimal("10.25")) == pw.encode_value("10.25")
    assert pw.encode_value(dt.time(7, 8, 9)) == pw.encode_value("07:08:09")
    with pytest.raises(TypeError, match="set"):
        pw.encode_value({"only"})
    with pytest.raises(TypeError, match="set"):
        pw.encode_struct({"a": {"only"}})


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (dt.timedelta(days=1, hours=2, minutes=3, seconds=4.5), "P1DT2H3M4.5S"),
        (dt.timedelta(0), "PT0S"),
        (dt.timedelta(days=2), "P2D"),
        (dt.timedelta(hours=1, seconds=1), "PT1H1S"),
        (dt.timedelta(microseconds=1), "PT0.000001S"),
        (dt.timedelta(seconds=-90), "-PT1M30S"),
    ],
)
def test_a_duration_is_written_as_iso_8601_not_as_pythons_text(duration: dt.timedelta, text: str) -> None:
    """A day-time interval (Spark) or duration column (Arrow) gives a timedelta: its text was Python's
    ``str()``, '1 day, 2:03:04.500000', which no database or reader parses as a duration."""
    assert metadata_json({"took": duration}) == b'{"took":"' + text.encode() + b'"}'
    table = pa.table({"id": ["a"], "values": [V], "took": pa.array([duration], pa.duration("us"))})
    prepared = prepare_arrow(table, ColumnSpec(), RULES, DimensionState(None))
    # the text itself is what every database's encoder gets (each wrote its own str() of a timedelta)
    assert prepared.batches[0].metadata == [{"took": text}]
    assert stored([{"id": "a", "values": V, "took": duration, "np": np.timedelta64(duration)}]) == [
        {"took": text, "np": text}
    ]


def test_bytes_at_any_depth_fail_their_row_naming_the_key_path() -> None:
    """A struct's or a list's binary value failed its row as 'cannot be written as JSON' naming only the
    column (before the normalisation, it was stored as Python's text "b'\\xde\\xad'"); now as a
    top-level binary column does, with the key path."""
    table = pa.table(
        {
            "id": ["st", "list", "fine"],
            "values": [V, V, V],
            "st": pa.array([{"blob": b"\xde\xad"}, None, None]),
            "blobs": pa.array([None, [b"\x00\xff"], None]),
        }
    )
    prepared = prepare_arrow(table, ColumnSpec(), RULES, DimensionState(None))
    got = {i: f.error for f in prepared.failures for i in f.ids}
    assert got == {
        "st": "metadata 'st'['blob'] is binary; no database here stores bytes as metadata: "
        "convert the column (base64, hex) or leave it out (option metadata_columns)",
        # bytes that are not UTF-8 fail as a text column of them does (a letter cannot tell the two apart)
        "list": "column 'blobs': text is not valid UTF-8; if the column holds bytes, no database here stores "
        "them as metadata: convert it (base64, hex) or leave it out (option metadata_columns)",
    }
    assert [md for b in prepared.batches for md in b.metadata] == [{}]
    assert reasons([{"id": "d", "values": V, "o": {"p": [1, bytearray(b"x")]}}])["d"].startswith(
        "metadata 'o'['p'][1] is binary"
    )
