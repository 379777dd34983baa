"""Arrow metadata columns of nested types (as Spark hands them over) become the metadata every database
stores the same way: maps as JSON objects at any depth."""

from __future__ import annotations

import pyarrow as pa
import pytest

from vectordb.connector.errors import ConfigError
from vectordb.connector.rows import ColumnSpec, DimensionState, RowRules, prepare_arrow
from vectordb.connector.rows.checks import metadata_json

V = [0.5, 1.0]
TEXT_MAP = pa.map_(pa.string(), pa.int64())


def prepare(columns: dict[str, pa.Array]) -> tuple[dict[str, dict], dict[str, str]]:
    """(metadata of each written row, reason of each failed row), by id."""
    n = len(next(iter(columns.values())))
    table = pa.table({"id": [f"r{i}" for i in range(n)], "values": [V] * n, **columns})
    prepared = prepare_arrow(table, ColumnSpec(), RowRules(), DimensionState(None))
    written = {i: md for b in prepared.batches for i, md in zip(b.ids, b.metadata, strict=True)}
    return written, {i: f.error for f in prepared.failures for i in f.ids}


def test_maps_are_objects_at_any_depth() -> None:
    """A map was stored as a list of [key, value] pairs (map('k1',1,'k.2',2) -> [["k1",1],["k.2",2]]),
    nested in a struct or list too; only a top-level map column named metadata became an object."""
    written, failed = prepare(
        {
            "m": pa.array([[("k1", 1), ("k.2", 2)]], TEXT_MAP),
            "st": pa.array([{"m": [("a", 1)]}], pa.struct([("m", TEXT_MAP)])),
            "maps": pa.array([[[("b", 2)]]], pa.list_(TEXT_MAP)),
            "metadata": pa.array([[("outer", [("inner", 3)])]], pa.map_(pa.string(), TEXT_MAP)),
        }
    )
    assert not failed
    assert written["r0"] == {
        "m": {"k1": 1, "k.2": 2},
        "st": {"m": {"a": 1}},
        "maps": [{"b": 2}],
        "outer": {"inner": 3},
    }
    assert metadata_json({"m": written["r0"]["m"]}) == b'{"m":{"k1":1,"k.2":2}}'


@pytest.mark.parametrize(
    ("column", "reason"),
    [
        (
            pa.array([[("k", 1), ("k", 2)], [("k", 1)], None], TEXT_MAP),
            "metadata 'c' holds a map with the key 'k' twice; a metadata object has a key once",
        ),
        (
            pa.array([{"m": [("k", 1), ("k", 2)]}, {"m": [("k", 1)]}, None], pa.struct([("m", TEXT_MAP)])),
            "metadata 'c' holds a map with the key 'k' twice; a metadata object has a key once",
        ),
    ],
)
def test_a_map_with_a_key_twice_fails_its_row_alone(column: pa.Array, reason: str) -> None:
    written, failed = prepare({"c": column})
    assert failed == {"r0": reason}
    assert written["r2"] == {} and written["r1"]["c"] in ({"k": 1}, {"m": {"k": 1}})


@pytest.mark.parametrize(
    "typ", [pa.map_(pa.int32(), pa.string()), pa.struct([("m", pa.map_(pa.int64(), pa.int64()))])]
)
def test_a_map_keyed_by_anything_but_text_is_refused_naming_the_column(typ: pa.DataType) -> None:
    value = [(1, "one")] if pa.types.is_map(typ) else {"m": [(1, 2)]}
    with pytest.raises(ConfigError, match=r"metadata column 'c' has type .*: a map's keys must be text"):
        prepare({"c": pa.array([value], typ)})


def test_a_zoned_timestamp_is_stored_in_utc_whatever_the_sessions_zone() -> None:
    """Spark hands a timestamp over in its session's time zone: one instant was stored as
    '2024-06-01T12:00:00+00:00' under UTC and '2024-06-01T17:30:00+05:30' under Asia/Kolkata."""
    instant = pa.array([1717243200_000000], pa.int64())  # 2024-06-01T12:00:00Z
    stored = []
    for zone in ("UTC", "Asia/Kolkata", "-03:00"):
        typ = pa.timestamp("us", tz=zone)
        ts = instant.cast(typ)
        written, failed = prepare(
            {
                "ts": ts,
                "st": pa.StructArray.from_arrays([ts], ["at"]),
                "many": pa.array([[ts[0].as_py()]], pa.list_(typ)),
            }
        )
        assert not failed
        stored.append(metadata_json(written["r0"]))
    assert (
        stored
        == [
            b'{"ts":"2024-06-01T12:00:00+00:00","st":{"at":"2024-06-01T12:00:00+00:00"},'
            b'"many":["2024-06-01T12:00:00+00:00"]}'
        ]
        * 3
    )
    naive, _ = prepare({"ts": instant.cast(pa.timestamp("us"))})  # no zone: left as given
    assert metadata_json(naive["r0"]) == b'{"ts":"2024-06-01T12:00:00"}'


def test_a_variant_column_is_refused_naming_it() -> None:
    """Spark's VARIANT (parse_json) arrives as a struct of two binaries, stored as Python's text
    "b'\\x02\\x01...'" before: unreadable, and not the JSON it holds."""
    variant = pa.struct(
        [
            pa.field("value", pa.binary(), nullable=False),
            pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
        ]
    )
    column = pa.array([{"value": b"\x02\x01\x00\x00\x02\x0c\x01", "metadata": b"\x01\x01\x00\x01a"}], variant)
    with pytest.raises(ConfigError, match=r"metadata column 'v' is a VARIANT .*to_json\(\)"):
        prepare({"v": column})


@pytest.mark.parametrize("metadata_first", [True, False])
def test_a_metadata_struct_field_named_as_a_column_is_refused_naming_both(metadata_first: bool) -> None:
    """title='top' and metadata.title='nested': one was dropped silently, which one by column order."""
    title = pa.array(["top"])
    metadata = pa.array([{"title": "nested", "k": 1}])
    columns = (
        {"metadata": metadata, "title": title} if metadata_first else {"title": title, "metadata": metadata}
    )
    with pytest.raises(ConfigError, match="column 'title' and from field 'title' of column 'metadata'"):
        prepare(columns)


@pytest.mark.parametrize("metadata_first", [True, False])
def test_a_json_metadata_key_named_as_a_column_gives_the_columns_value_in_any_order(
    metadata_first: bool,
) -> None:
    """A JSON or map metadata column's keys are known row by row only: the column's value wins, as for
    dict rows, whatever the column order."""
    title = pa.array(["top", None])
    metadata = pa.array(['{"title": "nested", "k": 1}', '{"title": "nested"}'])
    columns = (
        {"metadata": metadata, "title": title} if metadata_first else {"title": title, "metadata": metadata}
    )
    written, failed = prepare(columns)
    assert not failed and written == {"r0": {"title": "top", "k": 1}, "r1": {"title": "nested"}}
