"""Options only a bulk import reads, given to a write that upserts: refused, naming the option, never ignored.

Before, ``import_uri`` (or ``import_timeout_s``, ...) without ``write_mode=import`` upserted every row
quietly, which is the write the user did not ask for; ``dead_letter_path`` without ``on_error=dead_letter``
is refused the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.pinecone_control import PineconeImportServer, store_opener
from vectordb.connector import ConfigError, connect

ROWS = [{"id": "a", "values": [1.0, 2.0, 3.0, 4.0]}]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("import_uri", "file:///tmp/imports"),
        ("import_source_uri", "s3://bucket/imports"),
        ("import_integration_id", "integration-1"),
        ("import_timeout_s", 60),
        ("import_poll_s", 0.5),
    ],
)
@pytest.mark.parametrize("write_mode", [None, "upsert"])
def test_an_import_option_without_write_mode_import_is_refused_naming_it(
    option: str, value: object, write_mode: str | None
) -> None:
    mode = {} if write_mode is None else {"write_mode": write_mode}
    with PineconeImportServer(store_opener()) as server:
        options = {"api_key": "k", "namespace": "docs", **mode, option: value}
        with pytest.raises(ConfigError) as info, connect(server.uri, **options) as client:  # type: ignore[arg-type]
            client.upsert(ROWS)
        assert server.state.snapshot().namespaces == {}  # nothing upserted
    message = str(info.value)
    assert f"option {option}: is read only by a bulk import" in message, message
    assert "set write_mode=import" in message


def test_the_default_poll_interval_and_an_import_with_its_options_are_accepted(tmp_path: Path) -> None:
    with PineconeImportServer(store_opener()) as server:
        with connect(server.uri, api_key="k", namespace="docs", import_poll_s=15) as client:
            assert client.upsert(ROWS).written == 1
        with connect(
            server.uri,
            api_key="k",
            namespace="fresh",
            write_mode="import",
            import_uri=str(tmp_path),
            import_timeout_s=60,
            import_poll_s=0.5,
            import_integration_id="integration-1",
        ) as client:
            assert client.options.write_mode == "import"  # type: ignore[attr-defined]
