"""The Spark adapter's own options, and the split of Spark's option map into them and the connector's.

Spark hands a data source one case-insensitive map of strings (keys lower-cased). Most keys are
the connector's (``BackendOptions`` and the backend's Struct, validated by the core); the few in
``SparkOptions`` only make sense for a Spark job. ``path`` is what ``save(x)`` passes: it is taken
as ``uri`` when no ``uri`` option is given. Keys Spark itself adds to streaming writes are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from vectordb.connector.backends.registry import canonical_uri
from vectordb.connector.errors import ConfigError

__all__ = ["SparkOptions", "parse_spark_options", "split_options"]

# keys Spark passes along with the user's options; none of them is the connector's business
SPARK_OWN_KEYS = frozenset({"checkpointlocation", "queryname", "__checkpointlocation__"})


class SparkOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of the Spark adapter; the connector's options are in ``BackendOptions``."""

    allow_overwrite: bool = False  # mode("overwrite") may replace the target's contents
    budget_tasks: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None
    report_path: str | None = None  # a directory: commit() writes the job's report there as JSON


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def split_options(raw: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the connector's options, the adapter's options); ``path`` becomes ``uri``."""
    connector: dict[str, str] = {}
    adapter: dict[str, str] = {}
    for key, value in raw.items():
        name = key.lower()
        if name in SPARK_OWN_KEYS:
            continue
        if name in SparkOptions.__struct_fields__:
            adapter[name] = value
        else:
            connector[name] = value
    path = connector.pop("path", None)
    if path:
        if connector.get("uri") and connector["uri"] != path:
            raise ConfigError(
                f"save({path!r}) and option uri={connector['uri']!r} both name the target: give one"
            )
        connector["uri"] = path
    uri = connector.get("uri")
    if uri:
        connector["uri"] = canonical_uri(uri)  # a path is made absolute here, on the driver
    return connector, adapter


def parse_spark_options(raw: Mapping[str, str]) -> SparkOptions:
    """Validate the adapter's options; ``ConfigError`` names the option at fault."""
    values: dict[str, Any] = {}
    for key, value in raw.items():
        text = value.strip().lower() if isinstance(value, str) else value
        if key == "allow_overwrite" and isinstance(text, str) and text in _TRUE | _FALSE:
            values[key] = text in _TRUE
        else:
            values[key] = value
    try:
        return msgspec.convert(values, SparkOptions, strict=False)
    except msgspec.ValidationError as exc:
        message = str(exc)
        if " - at `$." in message:
            text, _, where = message.partition(" - at `$.")
            raise ConfigError(f"option {where.rstrip('`')}: {text}") from None
        raise ConfigError(f"invalid options: {message}") from None
