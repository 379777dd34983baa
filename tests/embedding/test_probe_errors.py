"""The driver's probe (one short text, before a job starts) raises a failure that may pass (a throttle, a
503) as what it was, for the job to retry; it was a ``ConfigError`` blaming ``embed_model``. A refusal
still blames the model, and an ``AuthError`` names the key's option once."""

from __future__ import annotations

import pytest

from tests.embedding.fixtures import embedding_options
from tests.servers.embeddings import EmbeddingsServer, Fault
from tests.servers.fixtures import ServerHandle
from vectordb.connector import connect
from vectordb.connector.errors import AuthError, ConfigError, Throttled, Unavailable
from vectordb.connector.planner import DriverPlan


def probe_through(server: EmbeddingsServer, pinecone: ServerHandle) -> None:
    with connect(
        pinecone.uri,
        **embedding_options(server),
        max_retries=0,
    ) as client:
        options = client.options
    with DriverPlan(options) as plan:
        plan.learn_model_dimension()


@pytest.mark.parametrize(("fault", "kind"), [(Fault.throttle(), Throttled), (Fault.error(503), Unavailable)])
def test_the_probe_raises_a_passing_failure_as_itself(
    pinecone: ServerHandle, fault: Fault, kind: type[Exception]
) -> None:
    with EmbeddingsServer() as server:
        server.script(fault)
        with pytest.raises(kind, match="did not embed a one-line probe text") as caught:
            probe_through(server, pinecone)
    assert not isinstance(caught.value, ConfigError)


def test_the_probe_blames_the_model_for_a_refusal(pinecone: ServerHandle) -> None:
    with EmbeddingsServer() as server:
        server.script(Fault.error(400), Fault.error(400))  # base64, then floats
        with pytest.raises(ConfigError, match=r"^option embed_model: the embedding endpoint refused"):
            probe_through(server, pinecone)


def test_the_probe_names_the_key_option_once(pinecone: ServerHandle) -> None:
    with (
        EmbeddingsServer(out_of_quota=True) as server,
        pytest.raises(
            AuthError, match=r"^option embed_api_key: POST .*the account of this key is out of quota"
        ),
    ):
        probe_through(server, pinecone)
