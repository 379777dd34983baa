"""The Spark adapter's own options, and the split of Spark's option map into them and the connector's.

Spark hands a data source one case-insensitive map of strings (keys lower-cased). Most keys are
the connector's (``BackendOptions`` and the backend's Struct, validated by the core); the few in
``SparkOptions`` only make sense for a Spark job. ``path`` is what ``save(x)`` passes: it is taken
as ``uri`` when no ``uri`` option is given. Keys Spark itself adds to streaming writes are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec

from vectordb.connector.backends.registry import canonical_uri
from vectordb.connector.errors import ConfigError
from vectordb.connector.options import convert_options, without_password

__all__ = ["SparkOptions", "parse_spark_options", "split_options"]

# keys Spark passes along with the user's options; none of them is the connector's business
SPARK_OWN_KEYS = frozenset({"checkpointlocation", "queryname", "__checkpointlocation__"})


class SparkOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of the Spark adapter; the connector's options are in ``BackendOptions``."""

    allow_overwrite: bool = False  # mode("overwrite") may replace the target's contents
    budget_tasks: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None
    report_path: str | None = None  # a directory: commit() writes the job's report there as JSON


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
                f"save({without_password(path)!r}) and option uri={without_password(connector['uri'])!r} "
                "both name the target: give one"
            )
        connector["uri"] = path
    uri = connector.get("uri")
    if uri:
        connector["uri"] = canonical_uri(uri)  # a path is made absolute here, on the driver
    return connector, adapter


def parse_spark_options(raw: Mapping[str, str]) -> SparkOptions:
    """Validate the adapter's options with the core's parser; ``ConfigError`` names the option at fault."""
    return convert_options(raw, SparkOptions)
