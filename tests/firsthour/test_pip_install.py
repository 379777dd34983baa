"""A pip user gets the whole product: the wheel ``uv build`` makes, installed with its extras into a fresh
environment, used from a directory that holds no checkout.

The two commands (``vectordb-load``, Spark; ``vectordb-beam``, Beam) run as the installed console scripts,
into their default target, the embedded Milvus Lite ``./vectors.db``; ``vectordb-load`` embeds text
through the project's embeddings server (started here, in this process). Then one Python script of the
user's does a Spark ``df.write.format("vectordb")`` with no ``register()`` (Spark finds
``pyspark_vectordb`` in a regular install by itself) and a Beam pipeline with ``WriteToVectorDB`` on the
DirectRunner, and reads every collection back with pymilvus. Packages come from uv's cache when it has
them all (``--offline``, as the README test does), else from the index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.embedding.fixtures import embeddings_server, expected_vectors, words
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.uv import uv_command

__all__ = ["embeddings_server"]  # a fixture, used by name

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = "spark,beam,milvus"
MODEL = "test-embed-64"
TEXTS = 40

pytestmark = pytest.mark.slow

# the user's own script, run in the fresh environment
USER_SCRIPT = """
import json

import apache_beam as beam
from pymilvus import MilvusClient
from pyspark.sql import SparkSession

import vectordb.connector
from vectordb.beam import WriteToVectorDB
from vectordb.connector.backends.milvus import lite

spark = SparkSession.builder.master("local[2]").getOrCreate()
df = spark.createDataFrame(
    [(f"s{i}", [i / 100, 1.0, 0.5, -0.25], f"title {i}") for i in range(500)],
    "id string, values array<float>, title string",
)
(
    df.write.format("vectordb")
    .option("uri", "./vectors.db")
    .option("collection", "spark")
    .option("create", "true")
    .option("dimension", "4")
    .mode("append")
    .save()
)
spark.stop()

with beam.Pipeline() as pipeline:  # the DirectRunner
    _ = (
        pipeline
        | beam.Create([{"id": f"b{i}", "values": [1.0, i / 100, 0.0, 0.5], "title": f"b {i}"} for i in range(300)])
        | WriteToVectorDB("./vectors.db", collection="beam", create="true", dimension="4")
    )

client = MilvusClient(uri="http://" + lite.ensure_server("./vectors.db"))
counts = {}
for name in ("load", "beamjob", "spark", "beam"):
    client.load_collection(name)
    rows = client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")
    counts[name] = rows[0]["count(*)"]
embedded = client.get("load", ids=["t7"], output_fields=["vector"])[0]["vector"]
beam_row = client.get("beam", ids=["b7"], output_fields=["vector", "title"])[0]
lite.stop("./vectors.db")
print(json.dumps({
    "counts": counts,
    "embedded": [float(x) for x in embedded],
    "beam_row": [[float(x) for x in beam_row["vector"]], beam_row["title"]],
    "connector": vectordb.connector.__file__,
}))
"""


def run(
    args: list[str], cwd: Path, env: dict[str, str], timeout_s: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)


def install_offline_first(command: list[str]) -> None:
    if subprocess.run([*command, "--offline"], capture_output=True, timeout=900).returncode != 0:
        subprocess.run(command, check=True, timeout=900)


@pytest.mark.timeout(1500)
def test_the_wheel_alone_gives_the_commands_spark_beam_and_embeddings(
    tmp_path: Path, embeddings_server: EmbeddingsServer
) -> None:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17 or later")
    uv = uv_command()
    dist = tmp_path / "dist"
    build = [*uv, "build", "--quiet", "--out-dir", str(dist), str(ROOT)]  # the sdist, then the wheel from it
    install_offline_first(build)
    (wheel,) = dist.glob("vectordb_connector-*.whl")
    (sdist,) = dist.glob("vectordb_connector-*.tar.gz")
    with tarfile.open(sdist) as tar:  # the license travels with the source and the wheel built from it
        member = tar.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/LICENSE")
        assert member is not None and b"Apache License" in member.read()
    with zipfile.ZipFile(wheel) as whl:
        assert [n for n in whl.namelist() if n.endswith(".dist-info/licenses/LICENSE")], whl.namelist()
    venv = tmp_path / "venv"
    subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    constraints = str(ROOT / ".ci" / "constraints.txt")
    install_offline_first(
        [*uv, "pip", "install", "--quiet", "--python", python, "-c", constraints, f"{wheel}[{EXTRAS}]"]
    )

    # a user's shell: the environment activated, nothing of the checkout or of this test run
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "EMBED_KEY": DEFAULT_KEY,
    }
    work = tmp_path / "work"
    work.mkdir()

    helped = run(["vectordb-load", "--help"], work, env)
    assert helped.returncode == 0, helped.stderr[-4000:]
    assert "usage: vectordb-load" in helped.stdout and "--sample N" in helped.stdout
    helped = run(["vectordb-beam", "--help"], work, env)
    assert helped.returncode == 0, helped.stderr[-4000:]
    assert "--sample N" in helped.stdout and "--runner RUNNER" in helped.stdout

    typo = run(["vectordb-load", "--uri", "my-index.svc.pinecone.io", "--sample", "5"], work, env)
    assert typo.returncode == 2
    assert typo.stderr.strip().splitlines() == [
        "vectordb-load: ConfigError: option uri: 'my-index.svc.pinecone.io' is not SCHEME://host[:port][/collection] "
        "nor a path for the embedded database (./vectors.db) (--debug shows the trace)"
    ]

    # the main job: text in, embedded by the model, into the default ./vectors.db
    texts = [words(i) for i in range(TEXTS)]
    (work / "docs.jsonl").write_text(
        "".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    embedding = [
        "--embed-url",
        embeddings_server.url,
        "--embed-model",
        MODEL,
        "--embed-api-key-env",
        "EMBED_KEY",
    ]
    load = [
        "vectordb-load",
        "--input",
        "docs.jsonl",
        "--collection",
        "load",
        "--text-column",
        "text",
        *embedding,
    ]
    loaded = run(load, work, env)
    assert loaded.returncode == 0, loaded.stdout[-2000:] + loaded.stderr[-4000:]
    assert f"written:  {TEXTS} of {TEXTS} rows (0 failed)" in loaded.stdout

    # the Beam job: a generated sample, into the same default
    beamed = run(["vectordb-beam", "--sample", "300", "--dim", "8", "--collection", "beamjob"], work, env)
    assert beamed.returncode == 0, beamed.stdout[-2000:] + beamed.stderr[-4000:]
    assert "written:  300 of 300 rows (0 failed)" in beamed.stdout and "rows/s" in beamed.stdout

    (work / "user.py").write_text(USER_SCRIPT)
    used = run(["python", "user.py"], work, env)
    assert used.returncode == 0, used.stderr[-4000:]
    result = json.loads(used.stdout.strip().splitlines()[-1])
    assert result["counts"] == {"load": TEXTS, "beamjob": 300, "spark": 500, "beam": 300}
    assert result["embedded"] == expected_vectors([texts[7]], model=MODEL)[0].tolist()
    assert result["beam_row"] == [[1.0, float(np.float32(0.07)), 0.0, 0.5], "b 7"]
    assert result["connector"].startswith(str(venv))  # the installed package, not the checkout
