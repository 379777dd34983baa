"""``vectordb-beam``'s summary says the embedding endpoint's traffic (an ``embedded:`` line: rows,
requests, retries, throttled), as ``vectordb-load``'s does and the README says both do: the job's totals
(the sink's counters and the per-bundle totals files) held only the database's counts, so a load slowed
by a throttling embedding endpoint said nothing of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_embed_report_traffic import ROWS, faulty
from tests.embedding.fixtures import embedding_options
from tests.servers.fixtures import ServerHandle
from vectordb.beam.load import main


@pytest.mark.parametrize("runner", ["DirectRunner", "FnApiRunner"])
def test_the_summary_says_the_embedding_endpoints_traffic(
    runner: str,
    grpc_server: ServerHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = tmp_path / "texts.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS.to_pylist()))
    with faulty() as server:  # two 429s and a 503 before it answers
        options = embedding_options(server, embed_batch_size=50, batch_size=200)
        monkeypatch.setenv(
            "VDB_TEST_EMBED_KEY", options.pop("embed_api_key")
        )  # a key is refused in the command line
        options["embed_api_key_env"] = "VDB_TEST_EMBED_KEY"
        argv = [f"--input={source}", f"--uri={grpc_server.uri}", "--no_create", f"--runner={runner}"]
        assert main([*argv, *(f"--option={k}={v}" for k, v in options.items())]) == 0
        statuses = dict(server.stats.statuses)
    out = capsys.readouterr().out.splitlines()
    assert "written:  200 of 200 rows (0 failed)" in out
    assert statuses == {429: 2, 503: 1, 200: 4}  # 4 batches of 50, 3 of them sent again
    assert "embedded: 200 rows in 7 requests, 3 retries, 2 throttled" in out


def test_the_sinks_counters_count_it_too(grpc_server: ServerHandle) -> None:
    """The counters the job reads where no totals file is kept (an import, ``write_mode=import``)."""
    from vectordb.beam.load import counters

    from .conftest import run_sink

    with faulty() as server:
        options = embedding_options(server, embed_batch_size=50, batch_size=200)
        found = counters(run_sink(grpc_server.uri, ROWS.to_pylist(), **options))
    embed = {name: found[name] for name in ("embedded", "embed_requests", "embed_retries", "embed_throttled")}
    assert embed == {"embedded": 200, "embed_requests": 7, "embed_retries": 3, "embed_throttled": 2}
