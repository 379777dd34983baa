"""A driver's probe hands the model its reply named to the workers (option ``embed_model_answered``, as the
model's dimension goes as option ``dimension``): a worker whose first replies come from a gateway's
fallback model fails those rows, where it would have taken the fallback's name as the model's."""

from __future__ import annotations

from tests.embedding.fixtures import EMBED_MODEL, embedding_options
from tests.embedding.test_embedding_model_switch import FALLBACK, Gateway, table
from tests.servers.fixtures import ServerHandle
from vectordb.connector import Client
from vectordb.connector.client import resolve_options
from vectordb.connector.planner import DriverPlan


def test_the_probes_model_reaches_the_workers(pinecone: ServerHandle) -> None:
    with Gateway(good=1) as server:  # the probe's reply names the model; every later one the fallback
        raw = {"uri": pinecone.uri, "on_error": "report"} | embedding_options(server, embed_batch_size=20)
        with DriverPlan(resolve_options(raw)) as plan:
            plan.learn_model_dimension()
            options = plan.options
        assert options.embed_model_answered == EMBED_MODEL
        with Client(options) as worker:
            report = worker.write(table())
    assert report.written == 0
    assert {f.error_type for f in report.failures} == {"MalformedReply"}
    assert f"names model {FALLBACK!r}; the driver's probe named {EMBED_MODEL!r}" in report.failures[0].error
