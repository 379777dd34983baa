"""Optional: the same write on the Flink portable runner (embedded Flink, ``--environment_type=LOOPBACK``).

The runner starts Beam's Flink job server, a shaded jar published to Maven Central as
``org.apache.beam:beam-runners-flink-<flink>-job-server:<beam version>`` (Beam downloads it to
``~/.apache_beam/cache/jars``). ``VECTORDB_FLINK_JOB_SERVER_JAR`` names a local jar instead. The
test skips, saying why, when Java is missing or the jar can be neither found nor fetched.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.utils.subprocess_server import JavaJarServer
from apache_beam.version import __version__ as beam_version

from tests.servers.fixtures import ServerHandle
from vectordb.beam import WriteToVectorDB

from . import data
from .conftest import counters

pytestmark = [pytest.mark.flink, pytest.mark.slow]

FLINK_VERSION = "1.19"
SHARDS = 2


@pytest.fixture(scope="module")
def job_server_jar() -> str:
    """A local path or URL the FlinkRunner can start, or a skip with the reason (before any server starts)."""
    explicit = os.environ.get("VECTORDB_FLINK_JOB_SERVER_JAR")
    if explicit:
        if not Path(explicit).is_file():
            pytest.skip(f"VECTORDB_FLINK_JOB_SERVER_JAR={explicit} is not a file")
        return explicit
    if shutil.which("java") is None:
        pytest.skip("the Flink job server needs Java on PATH")
    artifact = f"beam-runners-flink-{FLINK_VERSION}-job-server"
    url = JavaJarServer.path_to_maven_jar(artifact, "org.apache.beam", beam_version)
    cached = Path(JavaJarServer.JAR_CACHE) / url.rsplit("/", 1)[1]
    if cached.is_file():
        return str(cached)
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=15):
            return url
    except urllib.error.HTTPError as exc:
        exc.close()  # an HTTPError holds the reply's socket
        reason = f"HTTP {exc.code}"
    except (urllib.error.URLError, TimeoutError) as exc:
        reason = str(exc)
    pytest.skip(
        f"no Flink job server: org.apache.beam:{artifact}:{beam_version} is not in the reachable Maven "
        f"repository ({reason}); set VECTORDB_FLINK_JOB_SERVER_JAR to a local jar"
    )


@pytest.mark.usefixtures("worker_env")
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
