"""Through the data source: option ``embed_dimensions`` the target does not have fails on the driver,
naming that option (the client's own early check words it the same way), and no job runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.embedding.fixtures import embeddings_server
from tests.servers.embeddings import DEFAULT_KEY, EmbeddingsServer
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import connect

from .conftest import job_ids

__all__ = ["embeddings_server"]


def test_embed_dimensions_the_target_lacks_names_the_option(
    spark: Any, embeddings_server: EmbeddingsServer, qdrant_server: QdrantServer
) -> None:
    uri = qdrant_server.rest_uri("d")
    with connect(uri, create=True, dimension=64) as client:
        assert client.upsert([{"id": 1, "values": [0.1] * 64}]).ok
    options = {
        "uri": uri,
        "text_column": "text",
        "embed_url": embeddings_server.url,
        "embed_model": "test-embed-768",
        "embed_api_key": DEFAULT_KEY,
        "embed_dimensions": "32",
    }
    frame = spark.createDataFrame([(2, "hello")], "id long, text string").coalesce(1)
    before = job_ids(spark)
    with pytest.raises(Exception, match=r"option embed_dimensions: .* 32-dimensional .*dimension 64"):
        frame.write.format("vectordb").options(**options).mode("append").save()
    assert job_ids(spark) == before
    assert set(qdrant_server.store.points("d")) == {1}
