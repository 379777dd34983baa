"""Elements in ``Sessions`` windows: until a ``GroupByKey`` merges them each element is alone in its window
[t, t + gap), and the sink batched per window, so it sent one request a row (500 rows in 10 sessions: 500
requests). Rows are batched per session, merged as they gather (10 sessions: about 10 requests), each row
is written once, and each session's reports and dead letters land in that session.

Run on the in-memory ``FnApiRunner`` (what the ``DirectRunner`` runs batch pipelines on) and on Prism
(``PrismRunner`` with a local ``prism`` binary: ``go install
github.com/apache/beam/sdks/v2/go/cmd/prism@v<apache-beam's version>``; without it those cases skip).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms import window

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

SESSIONS, PER_SESSION, GAP_S = 10, 50, 10


def _timed(sessions: int = SESSIONS) -> list[window.TimestampedValue]:
    """``PER_SESSION`` rows 0.1 s apart per session, sessions 1000 s apart, listed interleaved (a row of
    each session in turn) so that the windows of one bundle are many at once."""
    return [
        window.TimestampedValue({"id": f"s{s}-{i}", "values": [1.0, 2.0, float(i)]}, s * 1000 + i / 10)
        for i in range(PER_SESSION)
        for s in range(sessions)
    ]


def _prism_binary() -> str | None:
    found = shutil.which("prism") or os.path.join(os.path.expanduser("~"), "go", "bin", "prism")
    return found if os.path.exists(found) else None


def _runner(name: str) -> tuple[Any, Any]:
    """(runner, options) for ``name``."""
    from apache_beam.options.pipeline_options import PipelineOptions

    if name == "fnapi":
        return FnApiRunner(), PipelineOptions([])
    binary = _prism_binary()
    if binary is None:
        pytest.skip("no prism binary: go install github.com/apache/beam/sdks/v2/go/cmd/prism@v<beam version>")
    from apache_beam.runners.portability.prism_runner import PrismRunner

    # not Beam's shared Prism job server: a DirectRunner earlier in the process (tests/beam/test_direct.py) made
    # it without prism_location, and it would try to download the binary
    options = PipelineOptions(
        [], prism_location=binary, environment_type="LOOPBACK", experiments=["disable_prism_server_singleton"]
    )
    return PrismRunner(), options


class _PerSession(beam.DoFn):
    """A session's summed (written, failed) as a JSON line naming the session's start."""

    def process(self, keyed: tuple[Any, tuple[int, int]], w: Any = beam.DoFn.WindowParam) -> Any:
        yield json.dumps({"start": float(w.start), "end": float(w.end), "counts": list(keyed[1])})


class _Located(beam.DoFn):
    def process(self, letter: dict[str, Any], w: Any = beam.DoFn.WindowParam) -> Any:
        yield json.dumps({"id": letter["id"], "start": float(w.start), "end": float(w.end)})


def _sum_pairs(pairs: Any) -> tuple[int, int]:
    written = failed = 0
    for a, b in pairs:
        written, failed = written + a, failed + b
    return written, failed


def _lines(folder: Path, prefix: str) -> list[dict[str, Any]]:
    return [json.loads(line) for p in folder.glob(f"{prefix}*") for line in p.read_text().splitlines()]


@pytest.mark.parametrize("runner", ["fnapi", "prism"])
@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_rows_in_sessions_are_batched_per_session_each_written_once(
    grpc_server: ServerHandle, tmp_path: Path, batching: str, runner: str
) -> None:
    beam_runner, options = _runner(runner)
    pipeline = beam.Pipeline(runner=beam_runner, options=options)
    _ = (
        pipeline
        | beam.Create(_timed(), reshuffle=False)
        | beam.WindowInto(window.Sessions(GAP_S))
        | WriteToVectorDB(
            grpc_server.uri, api_key="k", dimension=3, batch_size=100, batching=batching, on_error="report"
        )
    )
    pipeline.run().wait_until_finish()
    arrived = grpc_server.arrived()
    sent = [row_id for request in arrived.requests for row_id in request.ids]
    assert sorted(sent) == sorted(f"s{s}-{i}" for s in range(SESSIONS) for i in range(PER_SESSION))
    requests = len(arrived.requests)
    assert requests <= 2 * SESSIONS  # a request per session (bundles may split one in two), not one a row


@pytest.mark.parametrize("runner", ["fnapi", "prism"])
# bounded only: with unbounded batching a session's reports come at its end, which the watermark may have passed
# on a loaded machine: late data a windowed CombinePerKey drops under allowed lateness 0 (the README says so)
@pytest.mark.parametrize("batching", ["bounded"])
def test_each_session_has_its_rows_reports_and_letters(
    grpc_server: ServerHandle, tmp_path: Path, batching: str, runner: str
) -> None:
    grpc_server.script(reject_ids=frozenset({"s3-7"}))
    elements = [*_timed(), window.TimestampedValue({"id": "s5-bad", "values": "not a vector"}, 5000.5)]
    beam_runner, options = _runner(runner)
    pipeline = beam.Pipeline(runner=beam_runner, options=options)
    result = (
        pipeline
        | beam.Create(elements, reshuffle=False)
        | beam.WindowInto(window.Sessions(GAP_S))
        | WriteToVectorDB(grpc_server.uri, api_key="k", dimension=3, batching=batching, on_error="report")
    )
    _ = (
        result.written
        | beam.Map(lambda report: ("all", (report.written, report.failed)))
        | beam.CombinePerKey(_sum_pairs)
        | beam.ParDo(_PerSession())
        | "Global" >> beam.WindowInto(window.GlobalWindows())
        | beam.io.WriteToText(str(tmp_path / "sessions"), file_name_suffix=".jsonl")
    )
    _ = (
        result.failed
        | beam.ParDo(_Located())
        | "Global letters" >> beam.WindowInto(window.GlobalWindows())
        | "Letters" >> beam.io.WriteToText(str(tmp_path / "letters"), file_name_suffix=".jsonl")
    )
    pipeline.run().wait_until_finish()

    sessions = sorted(_lines(tmp_path, "sessions"), key=lambda s: s["start"])
    want = [[PER_SESSION - (s == 3), s == 3] for s in range(SESSIONS)]
    assert [s["counts"] for s in sessions] == want
    assert [s["start"] for s in sessions] == [s * 1000.0 for s in range(SESSIONS)]
    ends = [s * 1000 + (PER_SESSION - 1) / 10 + GAP_S for s in range(SESSIONS)]
    assert [s["end"] for s in sessions] == pytest.approx(ends)
    # each letter in a window of its row's session (the refused row's own: it was never batched)
    letters = sorted(_lines(tmp_path, "letters"), key=lambda letter: letter["id"])
    assert [letter["id"] for letter in letters] == ["s3-7", "s5-bad"]
    assert 3000.0 <= letters[0]["start"] <= 3000.7 <= letters[0]["end"] <= ends[3]
    assert (letters[1]["start"], letters[1]["end"]) == (5000.5, 5000.5 + GAP_S)
    assert sorted(grpc_server.arrived().ids()) == sorted(
        f"s{s}-{i}" for s in range(SESSIONS) for i in range(PER_SESSION) if (s, i) != (3, 7)
    )


@pytest.mark.parametrize("batching", ["bounded", "unbounded"])
def test_a_row_that_joins_two_sessions_keeps_input_order(grpc_server: ServerHandle, batching: str) -> None:
    """x at 0 s and y at 15 s are two sessions until z at 8 s joins them; x again at 9 s: one batch, in input
    order, so the later x is the one stored."""
    timed = [
        window.TimestampedValue({"id": row_id, "values": [1.0, 2.0, value]}, at)
        for row_id, value, at in [("x", 1.0, 0), ("y", 2.0, 15), ("z", 3.0, 8), ("x", 4.0, 9)]
    ]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = (
        pipeline
        | beam.Create(timed, reshuffle=False)
        | beam.WindowInto(window.Sessions(GAP_S))
        | WriteToVectorDB(grpc_server.uri, api_key="k", dimension=3, batching=batching, on_error="report")
    )
    pipeline.run().wait_until_finish()
    arrived = grpc_server.arrived()
    # one batch, in input order (the client sends a second x after the first)
    assert [request.ids for request in arrived.requests] == [["x", "y", "z"], ["x"]]
    assert arrived.vector("x").values.tolist() == [1.0, 2.0, 4.0]
