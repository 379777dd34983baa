"""A write that embeds, with a dimension the target does not have, stated by option ``embed_dimensions``
(or ``dimension``): one ``ConfigError`` naming that option, before any row is embedded or written, from
the client's early check as from a planned (Spark) write. The client raised a bare ``DimensionMismatch``
that named no option."""

from __future__ import annotations

from typing import Any

import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.qdrant_grpc import QdrantServer
from vectordb.connector import ConfigError, connect


@pytest.mark.parametrize(
    ("stated", "option"), [({"embed_dimensions": 32}, "embed_dimensions"), ({"dimension": 32}, "dimension")]
)
def test_a_stated_dimension_the_target_lacks_names_its_option(
    embeddings_server: EmbeddingsServer, qdrant_server: QdrantServer, stated: dict[str, Any], option: str
) -> None:
    uri = qdrant_server.rest_uri("d")
    with connect(uri, create=True, dimension=64) as client:
        assert client.upsert([{"id": 1, "values": [0.1] * 64}]).ok
    options = embedding_options(embeddings_server, embed_model="test-embed-768", on_error="report") | stated
    with (
        connect(uri, **options) as client,
        pytest.raises(ConfigError, match=rf"^option {option}: .* 32-dimensional .*'test-embed-768'") as info,
    ):
        client.upsert([{"id": 2, "text": "hello"}])
    assert "dimension 64" in str(info.value)
    assert embeddings_server.stats.inputs == 0
    assert set(qdrant_server.store.points("d")) == {1}
