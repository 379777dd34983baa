"""An embedding endpoint's refusals in a plain client's write name the option at fault, as Spark's and Beam's
probe does: a 404 (no such model, or no endpoint at that path) names ``embed_model (or embed_url)``, and a key
HTTP cannot carry names ``embed_api_key``, never quoting the key. The client's write read ``NotFound: POST
.../v1/embeddings: HTTP 404 ...`` and ``Authorization: a line break ...``, naming no option."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.errors import ConfigError, NotFound

ROWS = pa.table({"id": ["a", "b"], "text": ["x", "y"]})


@pytest.mark.parametrize("wrong", ["embed_model", "embed_url"])
def test_a_404_names_the_model_and_the_url(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, wrong: str
) -> None:
    given = (
        {"embed_model": "no-such-model"}
        if wrong == "embed_model"
        else {"embed_url": embeddings_server.url + "/v9/"}
    )
    with (
        connect(pinecone.uri, on_error="report", **embedding_options(embeddings_server, **given)) as client,
        pytest.raises(NotFound) as caught,
    ):
        client.upsert(ROWS)
    text = str(caught.value)
    assert text.startswith("option embed_model (or embed_url): POST ") and "HTTP 404" in text, text
    assert text.count("option embed_model") == 1, text
    assert pinecone.arrived().ids() == set()


@pytest.mark.parametrize(
    "key", ["sk-bad\nkey-0123456789abcdef", "sk-bad\x00key-0123456789abcdef", "sk-€uro-0123456789ab"]
)
def test_a_key_http_cannot_carry_names_its_option(
    embeddings_server: EmbeddingsServer, pinecone: ServerHandle, key: str
) -> None:
    with (
        pytest.raises(ConfigError) as caught,
        connect(pinecone.uri, **embedding_options(embeddings_server, embed_api_key=key)) as client,
    ):
        client.upsert(ROWS)
    text = str(caught.value)
    assert text.startswith("option embed_api_key: Authorization: "), text
    assert "0123456789" not in text and "bad" not in text, text
    assert embeddings_server.stats.requests == 0
