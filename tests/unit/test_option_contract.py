"""One option contract for every database and engine: what the review found uneven, held even.

The target named once (a URI's collection and option ``collection`` agree, Pinecone's index is its
host); one credential source at a time; Spark's own options known to the connector's parser (a typo
matched, Beam and ``connect()`` told where they belong); a rate budget with a floor, and a pace that
never overflows a sleep; strings read alike for every type, and refusals that quote the value (never a
key) and say what is accepted.
"""

from __future__ import annotations

import msgspec
import pytest

from vectordb.connector import ConfigError, connect
from vectordb.connector.client import load_backend, resolve_options
from vectordb.connector.engine import Engine
from vectordb.connector.transports.base import WireReply
from vectordb.connector.transports.mock import MockTransport
from vectordb.spark.options import SparkOptions, split_options

PINECONE = "pinecone+grpc://idx-abc.svc.pinecone.io"


def parse(**options: object) -> object:
    return resolve_options({"uri": PINECONE, "api_key": "k", **options})


# -- 1. the target: named once ------------------------------------------------------------------------


@pytest.mark.parametrize("uri", ["qdrant://127.0.0.1:6333/coll_a", "qdrant+grpc://127.0.0.1:6334/coll_a"])
def test_qdrant_refuses_a_collection_other_than_the_uris(uri: str) -> None:
    with pytest.raises(
        ConfigError, match="option collection 'coll_b' disagrees with the URI's collection 'coll_a'"
    ):
        load_backend(resolve_options({"uri": uri, "collection": "coll_b"}))
    assert load_backend(resolve_options({"uri": uri, "collection": "coll_a"})).describe().endswith("/coll_a")
    bare = uri.rsplit("/", 1)[0]
    assert load_backend(resolve_options({"uri": bare, "collection": "coll_b"})).describe().endswith("/coll_b")


@pytest.mark.parametrize(
    ("uri", "in_uri"),
    [
        ("chroma://127.0.0.1:8000/coll_a", "collection"),
        ("milvus://127.0.0.1:19530/coll_a", "collection"),
        ("milvus://127.0.0.1:19530/db/coll_a", "collection"),
        ("weaviate://127.0.0.1:8080/Coll_a", "collection"),
        ("postgresql://u@127.0.0.1/db?table=coll_a", "table"),
    ],
)
def test_every_database_refuses_a_collection_other_than_the_uris_in_one_wording(
    uri: str, in_uri: str
) -> None:
    """One rule, one message, whichever database: the option, the URI's name, and what the URI calls it."""
    with pytest.raises(ConfigError, match=f"option collection 'Coll_b' disagrees with the URI's {in_uri} '"):
        load_backend(resolve_options({"uri": uri, "collection": "Coll_b"}))
    same = "Coll_a" if uri.startswith("weaviate") else "coll_a"
    load_backend(resolve_options({"uri": uri, "collection": same}))  # the same name twice is one target


def test_pinecone_refuses_option_collection() -> None:
    with pytest.raises(ConfigError, match="option collection: pinecone names the index by its host"):
        load_backend(parse(collection="my-other-index"))


# -- 3. one credential source --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pair",
    [
        {"api_key": "key-from-option", "api_key_env": "MY_KEY"},
        {
            "embed_api_key": "e",
            "embed_api_key_env": "E_KEY",
            "embed_url": "http://127.0.0.1:1",
            "embed_model": "m",
            "text_column": "text",
        },
    ],
)
def test_a_key_and_its_variable_exclude_each_other(pair: dict[str, str]) -> None:
    key, env = [name for name in pair if "api_key" in name]
    with pytest.raises(ConfigError, match=f"options {key} and {env} exclude each other: give one") as caught:
        resolve_options({"uri": PINECONE, **pair})
    assert "key-from-option" not in str(caught.value)


def test_a_copy_holding_the_key_drops_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VDB_CONTRACT_KEY", "from-env")
    held = resolve_options({"uri": PINECONE, "api_key_env": "VDB_CONTRACT_KEY"}).with_credential()
    assert (held.api_key, held.api_key_env) == ("from-env", None)


# -- 5. Spark's own options ----------------------------------------------------------------------------


def test_the_connector_knows_the_spark_options_names() -> None:
    from vectordb.connector.options import SPARK_OPTIONS

    assert set(SparkOptions.__struct_fields__) == SPARK_OPTIONS


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("budget_task", "budget_tasks"), ("report_paths", "report_path"), ("allow_overwite", "allow_overwrite")],
)
def test_a_misspelt_spark_option_gets_a_suggestion(typo: str, meant: str) -> None:
    connector, adapter = split_options({"uri": PINECONE, "api_key": "k", typo: "1"})
    assert adapter == {}
    with pytest.raises(ConfigError, match=f"unknown option '{typo}' \\(did you mean '{meant}'"):
        resolve_options(connector)


@pytest.mark.parametrize("name", sorted(SparkOptions.__struct_fields__))
def test_beam_and_python_refuse_a_spark_option_saying_so(name: str) -> None:
    with pytest.raises(ConfigError, match=f"option {name} is an option of the Spark data source"):
        connect(PINECONE, api_key="k", **{name: "1"})


# -- 6. the rate budget ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"), [("max_rows_per_second", "1e-300"), ("max_bytes_per_second", "0.5")]
)
def test_a_rate_too_slow_to_mean_anything_is_refused(option: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"option {option}: '{value}' is not a number >="):
        parse(**{option: value})
    parse(max_rows_per_second="0.001", max_bytes_per_second="1")


def test_the_pace_never_asks_a_sleep_it_cannot_take() -> None:
    client = connect("pinecone+grpc://127.0.0.1:1", verify=False, max_rows_per_second=1, max_concurrency=1)
    # a per-task share of a job-wide budget can be far below the option's floor (Spark divides it)
    slow = msgspec.structs.replace(client.options, max_rows_per_second=1e-300)
    asked: list[float] = []
    ok = WireReply(b"\x08\x05")  # UpsertResponse{upserted_count=5}: the 5 rows
    client._engine = Engine(client.backend, MockTransport(lambda r: ok), slow, sleep=asked.append)
    report = client.upsert([{"id": f"r{i}", "values": [0.1, 0.2]} for i in range(5)])
    assert report.written == 5
    assert asked and max(asked) <= 86_400  # engine.MAX_PACE_S: a day


# -- 7. strings read alike; refusals that say what was given and what is accepted ----------------------


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ({"batch_size": " 10 "}, ("batch_size", 10)),
        ({"timeout_s": "2.5 "}, ("timeout_s", 2.5)),
        ({"create": " TRUE "}, ("create", True)),
        ({"metric": "Cosine"}, ("metric", "cosine")),
        ({"on_error": " Report "}, ("on_error", "report")),
        ({"namespace": " docs "}, ("namespace", " docs ")),  # free text is taken as it is
    ],
)
def test_values_are_trimmed_and_choices_case_folded(given: dict[str, str], read: tuple[str, object]) -> None:
    assert getattr(parse(**given), read[0]) == read[1]


def test_a_uri_is_trimmed() -> None:
    backend = load_backend(resolve_options({"uri": f" {PINECONE} ", "api_key": "k"}))
    assert backend.describe() == f"{PINECONE}:443"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"batch_size": "1,000"}, "option batch_size: '1,000' is not an integer from 1 to 100000"),
        ({"timeout_s": "30s"}, "option timeout_s: '30s' is not a number > 0 and <= 3600"),
        ({"metric": "cosin"}, "option metric: 'cosin' is not one of 'cosine', 'dotproduct', 'euclidean'"),
        ({"metric": "cosin"}, "(did you mean 'cosine'?)"),
        ({"on_error": "ignore"}, "option on_error: 'ignore' is not one of 'dead_letter', 'fail', 'report'"),
        ({"create": "y"}, "option create: 'y' is not true or false"),
        ({"max_concurrency": 0}, "option max_concurrency: 0 is not an integer from 1 to 64"),
    ],
)
def test_a_refusal_quotes_the_value_and_says_what_is_accepted(given: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(**given)
    assert says in str(caught.value)


def test_a_refused_credential_is_never_quoted() -> None:
    with pytest.raises(ConfigError, match="option api_key: the value given is not a string") as caught:
        resolve_options({"uri": PINECONE, "api_key": 12345678})
    assert "12345678" not in str(caught.value)
