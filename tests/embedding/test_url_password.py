"""A password in ``embed_url`` (``http://user:password@host``) is a credential: no repr, error or log
line of the embedding stage shows it, as none shows the password of option ``uri``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.embeddings import EmbeddingsServer
from tests.servers.fixtures import start_server
from vectordb.connector.embedding import EmbeddingClient, parse_embed_options
from vectordb.connector.embedding.stage import EmbeddingStage
from vectordb.connector.errors import ConfigError
from vectordb.connector.options import BackendOptions
from vectordb.connector.planner import DriverPlan
from vectordb.connector.transports.base import forget_shared

PASSWORD = "Url-Pass-4711"
MODEL = "test-embed-64"


@pytest.fixture
def url_with_password() -> Iterator[str]:
    with EmbeddingsServer(api_key=None) as server:
        yield server.url.replace("http://", f"http://user:{PASSWORD}@")


def test_the_embedding_options_client_and_stage_show_no_url_password(url_with_password: str) -> None:
    options = parse_embed_options({"url": url_with_password, "model": MODEL})
    shown = [repr(options), str(options), repr(EmbeddingStage(options, None, "text"))]  # type: ignore[arg-type]
    with EmbeddingClient(options) as client:
        shown.append(repr(client))
        stream = client.stream([["a text"]])
        next(stream)
        with pytest.raises(RuntimeError, match="another stream") as second:
            client.embed(["another"])
        shown.append(str(second.value))
        stream.close()  # type: ignore[attr-defined]
    for text in shown:
        assert PASSWORD not in text and "user:***@" in text, text


def test_a_url_refused_as_not_http_is_quoted_without_its_password() -> None:
    with pytest.raises(Exception, match="is not an http") as refused:
        parse_embed_options({"url": f"ftp://user:{PASSWORD}@host/v1", "model": MODEL})
    assert PASSWORD not in str(refused.value) and "user:***@" in str(refused.value)


def test_backend_options_show_no_embed_url_password() -> None:
    options = BackendOptions(
        uri="chroma://127.0.0.1:1/c",
        embed_url=f"http://bob:{PASSWORD}@127.0.0.1:9/v1",
        embed_model="m",
        text_column="t",
    )
    for text in (repr(options), str(options)):
        assert PASSWORD not in text and "embed_url='http://bob:***@127.0.0.1:9/v1'" in text, text


def test_the_drivers_embedding_line_shows_no_url_password(url_with_password: str) -> None:
    lines: list[str] = []
    with start_server("rest") as pinecone:
        options = BackendOptions(
            uri=pinecone.uri, embed_url=url_with_password, embed_model=MODEL, text_column="text"
        )
        with DriverPlan(options) as plan:
            assert plan.learn_model_dimension(say=lines.append) == 64
        forget_shared()
    assert len(lines) == 1 and PASSWORD not in lines[0] and "user:***@" in lines[0], lines


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{PASSWORD}@host/v1",
        f"https://user:p@{PASSWORD}@host:8443/v1",  # an unescaped @ in the password
        f"http:/user:{PASSWORD}@host/v1",  # one slash short: refused, and quoted
        f"user:{PASSWORD}@host",
        "http://user@host/v1",
        "http://host:8080/v1@x",
    ],
)
def test_embedding_options_blank_a_url_as_without_password_blanks_a_uri(url: str) -> None:
    """The embedding options' repr, or their refusal, blank a URL with the one ``without_password``."""
    from vectordb.connector.embedding.options import EmbedOptions

    try:
        shown = repr(EmbedOptions(url=url, model="m"))
    except ConfigError as exc:
        shown = str(exc)
    assert PASSWORD not in shown
