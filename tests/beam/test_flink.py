"""Optional: the same write on the Flink portable runner (embedded Flink, ``--environment_type=LOOPBACK``).

The job server jar, first found of: ``VECTORDB_FLINK_JOB_SERVER_JAR``; Beam's shaded
``beam-runners-flink-<flink>-job-server`` jar in Beam's cache; one assembled by Maven from the
runner's artifacts (``flink_job_server.py``) for this Beam version or, when the Maven repository
lacks them, for ``FALLBACK_BEAM``, the newest release whose artifacts this project's build
machines can fetch (the job server speaks the portable API, so an older one runs this SDK's
pipelines).

Beam's job and artifact services listen on every interface (they take a port, not an address).
So the write runs in a private network namespace that has only a loopback interface (and a PID
namespace, so nothing it starts outlives it):
``test_flink_in_a_private_network`` runs pytest again inside one (``unshare --net``) for
``test_flink_portable_runner_writes_everything``, which skips anywhere else. Every skip says
why: no Java, no jar and no Maven artifacts, or no way to make the namespace.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.subprocess_server import JavaJarServer
from apache_beam.version import __version__ as beam_version

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

from . import data
from .conftest import ROOT, counters
from .flink_job_server import AssemblyError, assemble, cached

pytestmark = [pytest.mark.flink, pytest.mark.slow]

FLINK_VERSION = "1.19"
FALLBACK_BEAM = "2.62.0"
SHARDS = 20  # 20,000 records, as the multi-process test
ASSEMBLY_BUDGET_S = 1200  # a first run downloads about 150 MB of jars
RUN_BUDGET_S = 900
JAR_ENV = "VECTORDB_FLINK_JOB_SERVER_JAR"
IN_NAMESPACE_ENV = "VECTORDB_FLINK_IN_PRIVATE_NETWORK"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vectordb-connector" / "flink"


@pytest.fixture(scope="module")
def job_server_jar() -> str:
    """A job server jar the FlinkRunner can start, or a skip with the reason (before any server starts)."""
    explicit = os.environ.get(JAR_ENV)
    if explicit:
        if not Path(explicit).is_file():
            pytest.skip(f"{JAR_ENV}={explicit} is not a file")
        return explicit
    if shutil.which("java") is None:
        pytest.skip("the Flink job server needs Java on PATH")
    url = JavaJarServer.path_to_maven_jar(
        f"beam-runners-flink-{FLINK_VERSION}-job-server", "org.apache.beam", beam_version
    )
    shaded = Path(JavaJarServer.JAR_CACHE) / url.rsplit("/", 1)[1]
    if shaded.is_file():
        return str(shaded)
    versions = tuple(dict.fromkeys((beam_version, FALLBACK_BEAM)))
    for version in versions:  # any version assembled before, before asking Maven for one
        found = cached(CACHE, FLINK_VERSION, version)
        if found is not None:
            return str(found)
    reasons = []
    deadline = time.monotonic() + ASSEMBLY_BUDGET_S
    for version in versions:
        try:
            return str(assemble(CACHE, FLINK_VERSION, version, timeout_s=deadline - time.monotonic()))
        except AssemblyError as exc:
            reasons.append(f"Beam {version}: {exc}")
        except subprocess.TimeoutExpired:
            reasons.append(f"Beam {version}: Maven was still fetching after {ASSEMBLY_BUDGET_S} s")
            break
    pytest.skip("no Flink job server: " + "; ".join(reasons) + f"; set {JAR_ENV} to a local jar")


def private_network() -> list[str]:
    """The command prefix that runs a command in new network and PID namespaces, or a skip saying why.

    In its own PID namespace everything the run starts (Java included) dies with it.
    """
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        pytest.skip(
            "needs unshare and ip to give Beam's job server a private network (it binds every interface)"
        )
    spawn = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    prefixes = [[unshare, *spawn]]
    if os.geteuid() != 0:
        prefixes.append([unshare, "--map-root-user", *spawn])  # a user namespace lets others do it too
    errors = []
    for prefix in prefixes:
        probe = subprocess.run([*prefix, ip, "link", "set", "lo", "up"], capture_output=True, text=True)
        if probe.returncode == 0:
            return [*prefix, "sh", "-c", f'"{ip}" link set lo up && exec "$0" "$@"']
        errors.append(probe.stderr.strip())
    pytest.skip("cannot make a private network namespace for Beam's job server: " + "; ".join(errors))


@pytest.mark.timeout(ASSEMBLY_BUDGET_S + RUN_BUDGET_S + 300)
@pytest.mark.parametrize(
    "inner_test",
    ["test_flink_portable_runner_writes_everything", "test_flink_unbounded_poison_rows_fail_alone"],
)
def test_flink_in_a_private_network(request: pytest.FixtureRequest, inner_test: str) -> None:
    """Runs a Flink write below in namespaces of its own, where every interface is loopback."""
    isolated = private_network()
    job_server = request.getfixturevalue("job_server_jar")  # after the probe: no download to skip after
    env = {**os.environ, JAR_ENV: job_server, IN_NAMESPACE_ENV: "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    inner = f"{Path(__file__).resolve().relative_to(ROOT)}::{inner_test}"
    pytest_cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        f"timeout={RUN_BUDGET_S - 60}",
    ]
    run = subprocess.Popen(
        [*isolated, *pytest_cmd, inner],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = run.communicate(timeout=RUN_BUDGET_S)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)  # the PID namespace takes Java and the sink with it
        stdout, stderr = run.communicate()
        pytest.fail(
            f"the Flink run ({job_server}) took over {RUN_BUDGET_S} s:\n{stdout[-20000:]}{stderr[-4000:]}"
        )
    output = f"job server {job_server}\n{stdout[-20000:]}{stderr[-4000:]}"
    assert run.returncode == 0, output
    assert "1 passed" in stdout and "skipped" not in stdout, output


@pytest.mark.skipif(
    os.environ.get(IN_NAMESPACE_ENV) != "1",
    reason="runs inside the private network namespace that test_flink_in_a_private_network makes",
)
@pytest.mark.usefixtures("worker_env")
# Beam's worker raises when the job server hangs up the data stream before the worker has closed it
# ("CANCELLED: Multiplexer hanging up"), which happens now and then at the end of a job that finished: on the
# thread that reads inputs, or again on the worker's own thread when it closes that stream. Any thread's
# exception of that one kind is ignored; what this test asserts is what arrived, below
@pytest.mark.filterwarnings(
    "ignore:(?s)Exception in thread .*Multiplexer hanging up:pytest.PytestUnhandledThreadExceptionWarning"
)
def test_flink_portable_runner_writes_everything(job_server_jar: str, server_process: ServerHandle) -> None:
    server_process.reset()
    options = PipelineOptions(
        [
            "--runner=FlinkRunner",
            "--flink_master=[local]",
            f"--flink_version={FLINK_VERSION}",
            f"--flink_job_server_jar={job_server_jar}",
            "--environment_type=LOOPBACK",
            "--parallelism=2",
        ]
    )
    pipeline = beam.Pipeline(options=options)
    _ = (
        pipeline
        | beam.Create(list(range(SHARDS)))
        | beam.FlatMap(data.records)
        | WriteToVectorDB(server_process.uri)
    )
    run = pipeline.run()
    run.wait_until_finish()

    want = data.expected(SHARDS)
    arrived = server_process.arrived()
    assert arrived.ids() == set(want)
    assert all(arrived.vector(i).values_f32 == want[i][0] for i in want)
    assert counters(run).get("written") == len(want)


V = [0.5, -0.25, 1.0, 2.0]
AT = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=2)))
# rows the bad-input table says fail alone, each with (a fragment of) its reason
POISON = {
    "big-int": ({"id": "big-int", "values": V, "n": 2**70}, "exceeds 64-bit range"),
    "int-key": ({"id": "int-key", "values": V, "metadata": {1: "x"}}, "key must be str"),
    "ns-5": ({"id": "ns-5", "values": V, "namespace": 5}, "namespace 5 is not a string"),
}


def poison_elements(_: int) -> list[dict[str, Any]]:
    """Good rows, rows the table says are written (an id of 2^64, an aware datetime), and the poison."""
    good = [{"id": f"good-{i}", "values": V} for i in range(20)]
    written = [{"id": 2**64, "values": V}, {"id": "at", "values": V, "at": AT}]
    return good + written + [row for row, _ in POISON.values()]


@pytest.mark.skipif(
    os.environ.get(IN_NAMESPACE_ENV) != "1",
    reason="runs inside the private network namespace that test_flink_in_a_private_network makes",
)
@pytest.mark.usefixtures("worker_env")
@pytest.mark.filterwarnings(
    "ignore:(?s)Exception in thread .*Multiplexer hanging up:pytest.PytestUnhandledThreadExceptionWarning"
)
def test_flink_unbounded_poison_rows_fail_alone(job_server_jar: str, server_process: ServerHandle) -> None:
    """``batching="unbounded"`` on Flink: rows wait in ``GroupIntoBatches`` encoded by ``RowCoder``, where
    an int beyond 64 bits, a non-text key or namespace 5 stopped the pipeline (OverflowError, a msgspec
    ValidationError) and an aware datetime came back re-zoned to UTC. Now each fails alone with its reason
    and the rest land as the bounded path writes them."""
    server_process.reset()
    server_process.script(dimension=4)
    options = PipelineOptions(
        [
            "--runner=FlinkRunner",
            "--flink_master=[local]",
            f"--flink_version={FLINK_VERSION}",
            f"--flink_job_server_jar={job_server_jar}",
            "--environment_type=LOOPBACK",
            "--parallelism=2",
        ]
    )
    reasons = {row_id: says for row_id, (_, says) in POISON.items()}
    with beam.Pipeline(options=options) as pipeline:
        result = (
            pipeline
            | beam.Create([0], reshuffle=False)
            | beam.FlatMap(poison_elements)  # made on the worker: no coder of Create's carries them
            | WriteToVectorDB(server_process.uri, api_key="k", on_error="report", batching="unbounded")
        )
        failed = result.failed | beam.Map(
            lambda d: (d["id"], reasons[d["id"]] if reasons.get(d["id"], "?") in d["error"] else d["error"])
        )
        assert_that(failed, equal_to(sorted(reasons.items())))
    arrived = server_process.arrived()
    assert arrived.ids() == {f"good-{i}" for i in range(20)} | {str(2**64), "at"}
    # the same instant: the coder keeps the zone (tests/beam/test_coders_exact.py), the rows store it in UTC
    assert arrived.vector("at").metadata == {"at": "2024-05-06T05:08:09+00:00"}
