"""``jobs/beam_ingest.py`` end to end: Parquet and JSON Lines files in, the server and dead-letter files out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.utils.secret import GcpSecret

from jobs.beam_ingest import IngestOptions, connector_options, main
from tests.embedding.fixtures import embeddings_server, expected_vectors, too_long, words
from tests.servers.embeddings import DEFAULT_KEY, DEFAULT_MODEL, EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import ConfigError

__all__ = ["embeddings_server"]  # a fixture, used by name

N, DIM = 300, 8


def vectors() -> np.ndarray:
    return np.random.default_rng(11).standard_normal((N, DIM)).astype(np.float32)


def write_parquet(path: Path) -> None:
    offsets = pa.array(np.arange(0, (N + 1) * DIM, DIM, dtype=np.int32))
    table = pa.table(
        {
            "doc_id": [f"p{i}" for i in range(N)],
            "embedding": pa.ListArray.from_arrays(offsets, pa.array(vectors().reshape(-1))),
            "title": [f"title {i}" for i in range(N)],
        }
    )
    pq.write_table(table, path)


def write_jsonl(path: Path) -> None:
    rows = [
        {"doc_id": f"j{i}", "embedding": v.tolist(), "title": f"title {i}"} for i, v in enumerate(vectors())
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_files_to_the_database_with_dead_letters(
    kind: str, grpc_server: ServerHandle, tmp_path: Path
) -> None:
    prefix = kind[0]
    source = tmp_path / f"records.{kind}"
    (write_parquet if kind == "parquet" else write_jsonl)(source)
    grpc_server.script(reject_ids=frozenset({f"{prefix}7", f"{prefix}123"}))
    dead = tmp_path / "dead"
    result = main(
        [
            "--runner=FnApiRunner",
            f"--input={source}",
            f"--uri={grpc_server.uri}",
            "--option=id_column=doc_id",
            "--option=vector_column=embedding",
            "--option=namespace=docs",
            f"--dead_letters={dead}",
        ]
    )
    assert result.state == "DONE"

    arrived = grpc_server.arrived()
    assert arrived.ids("docs") == {f"{prefix}{i}" for i in range(N)} - {f"{prefix}7", f"{prefix}123"}
    stored = arrived.vector(f"{prefix}5", "docs")
    assert stored.values_f32 == vectors()[5].tobytes() and stored.metadata == {"title": "title 5"}
    letters = [
        json.loads(line) for f in dead.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert sorted(letter["id"] for letter in letters) == [f"{prefix}123", f"{prefix}7"]
    assert all(letter["error_type"] == "Rejected" for letter in letters)


def test_a_bad_option_fails_before_the_pipeline_runs(grpc_server: ServerHandle, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="bach_size"):
        main(
            [
                "--runner=FnApiRunner",
                f"--input={tmp_path}/x.jsonl",
                f"--uri={grpc_server.uri}",
                "--option=bach_size=5",
            ]
        )
    assert grpc_server.arrived().requests == []


def test_api_key_secret_becomes_a_beam_secret_the_sink_fetches_on_workers() -> None:
    spec = "type:GcpSecret;version_name:projects/p/secrets/pinecone/versions/3"
    options = connector_options(PipelineOptions([f"--api_key_secret={spec}"]).view_as(IngestOptions))
    assert options["api_key"] == GcpSecret("projects/p/secrets/pinecone/versions/3")
    with pytest.raises(ConfigError, match=r"--api_key_secret: .*type"):
        connector_options(PipelineOptions(["--api_key_secret=projects/p/secrets/s"]).view_as(IngestOptions))


def test_input_and_uri_are_required() -> None:
    with pytest.raises(ConfigError, match="--input and --uri"):
        main(["--runner=FnApiRunner"])


def test_text_files_to_the_database_through_the_embedding_options(
    grpc_server: ServerHandle, tmp_path: Path, embeddings_server: EmbeddingsServer
) -> None:
    """The embedding options go through ``--option`` like any other: JSON Lines text in, the model's
    vectors stored, the text the model refused a dead letter with its reason."""
    texts = [words(i) for i in range(60)]
    texts[17] = too_long(17)
    source = tmp_path / "texts.jsonl"
    source.write_text("".join(json.dumps({"doc_id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    dead = tmp_path / "dead"
    result = main(
        [
            "--runner=FnApiRunner",
            f"--input={source}",
            f"--uri={grpc_server.uri}",
            "--option=id_column=doc_id",
            "--option=text_column=text",
            f"--option=embed_url={embeddings_server.url}",
            f"--option=embed_model={DEFAULT_MODEL}",
            f"--option=embed_api_key={DEFAULT_KEY}",
            "--option=embed_batch_size=8",
            f"--dead_letters={dead}",
        ]
    )
    assert result.state == "DONE"
    arrived = grpc_server.arrived()
    good = [i for i in range(60) if i != 17]
    assert arrived.ids() == {f"t{i}" for i in good}
    expected = expected_vectors([texts[i] for i in good])
    for k, i in enumerate(good):
        assert arrived.vector(f"t{i}").values_f32 == expected[k].tobytes()
    (letter,) = [
        json.loads(line) for f in dead.glob("dead-letters-*.jsonl") for line in f.read_text().splitlines()
    ]
    assert letter["id"] == "t17" and "maximum context length" in letter["error"]
